#include "tune/plan_lookup.h"

#include "common/error.h"
#include "common/log.h"
#include "tune/shipped_tables.h"
#include "workload/shape.h"

#include <algorithm>

namespace moejit::tune {

llvm::Expected<runtime::Plan> planFromRecord(const TuningRecord &record, const MoeShape &shape,
                                             const Arch &arch) {
  const std::string id = workload::workloadId(shape);
  if (record.workload_id != id)
    return makeError(ErrorCode::InvalidArgument,
                     "tuning record for workload {} used for workload {} ({})", record.workload_id,
                     id, workload::canonicalText(shape));
  if (record.arch != arch.name())
    return makeError(ErrorCode::InvalidArgument, "tuning record for {} used for {}", record.arch,
                     arch.name());
  if (record.buckets.size() != static_cast<size_t>(runtime::kBucketCount))
    return makeError(ErrorCode::InvalidArgument, "tuning record has {} buckets, expected {}",
                     record.buckets.size(), runtime::kBucketCount);
  runtime::Plan plan;
  plan.source = "tuning record";
  for (int b = 0; b < runtime::kBucketCount; ++b) {
    const runtime::GemmPlan &g = record.buckets[b].choice;
    // fp32 runs one fixed SIMT tile whatever the plan says: the tile rules
    // guard kernels that fp32 never builds.
    if (shape.dtype != DType::FP32)
      if (llvm::Error e = runtime::checkGemmPlan(g, arch))
        return makeError(ErrorCode::InvalidArgument, "tuning record, bucket {}: {}", b,
                         errorMessage(std::move(e)));
    plan.buckets.push_back(g);
  }
  return plan;
}

runtime::Plan choosePlan(const MoeShape &shape, const Arch &arch, const std::string &gpu,
                         const std::string &root) {
  return choosePlan(shape, arch, gpu, root, shippedTables());
}

runtime::Plan choosePlan(const MoeShape &shape, const Arch &arch, const std::string &gpu,
                         const std::string &root, const std::vector<TuningRecord> &shipped) {
  const std::string id = workload::workloadId(shape);
  const std::string version = moejit::version();
  if (!root.empty()) {
    if (auto record = loadRecord(root, id, gpu, version)) {
      const std::string path = recordPath(root, id, gpu, version);
      auto plan = planFromRecord(*record, shape, arch);
      if (plan) {
        plan->source = "tuning record " + path;
        return std::move(*plan);
      }
      warnOnce(
          "tuning-plan:" + path + "|" + arch.name(),
          fmt::format("tuning record {} is skipped: {}", path, errorMessage(plan.takeError())));
    }
  }
  if (auto record = findRecord(shipped, id, gpu, version)) {
    auto plan = planFromRecord(*record, shape, arch);
    if (plan) {
      plan->source = "shipped table";
      return std::move(*plan);
    }
    warnOnce("shipped-plan:" + id + "|" + gpu + "|" + arch.name(),
             fmt::format("shipped tuning table for {} on {} is skipped: {}",
                         workload::canonicalText(shape), gpu, errorMessage(plan.takeError())));
  }
  return runtime::heuristicPlan(shape, arch);
}

} // namespace moejit::tune
