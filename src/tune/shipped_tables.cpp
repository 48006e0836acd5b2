#include "tune/shipped_tables.h"

#include "common/error.h"
#include "common/log.h"

namespace moejit::tune {

std::vector<TuningRecord> parseShippedTables(const std::vector<ShippedText> &texts) {
  std::vector<TuningRecord> out;
  for (const ShippedText &t : texts) {
    auto record = parseRecord(t.text);
    if (!record) {
      warnOnce(std::string("shipped-table:") + t.path,
               fmt::format("shipped tuning table cache/tuning/{} is skipped: {}", t.path,
                           errorMessage(record.takeError())));
      continue;
    }
    out.push_back(std::move(*record));
  }
  return out;
}

const std::vector<TuningRecord> &shippedTables() {
  // Parsed once; a function-local static is initialised thread-safely.
  static const std::vector<TuningRecord> all = parseShippedTables(embeddedTuningTables());
  return all;
}

std::vector<TuningRecord> shippedRecords() { return shippedTables(); }

std::optional<TuningRecord> shippedRecord(const std::string &workload_id, const std::string &gpu,
                                          const std::string &version) {
  return findRecord(shippedTables(), workload_id, gpu, version);
}

} // namespace moejit::tune
