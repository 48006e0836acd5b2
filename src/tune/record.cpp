#include "tune/record.h"

#include "common/bounded_json.h"
#include "common/error.h"
#include "common/log.h"
#include "common/safe_fs.h"
#include "store/atomic_file.h"
#include "store/cubin_store.h"
#include "tune/shipped_tables.h"
#include "workload/shape.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/Path.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>

namespace moejit::tune {

namespace {

constexpr const char *kFormatName = "moejit-tuning";

llvm::Error invalid(const std::string &what) {
  return makeError(ErrorCode::InvalidArgument, "tuning record: {}", what);
}

/// Reads the fields of one JSON object, keeping the first problem met so a
/// caller can read them all and check once.
class Fields {
public:
  Fields(const llvm::json::Object &object, std::string where)
      : object_(object), where_(std::move(where)) {}

  std::string string(llvm::StringRef key, bool allow_empty = false) {
    const llvm::json::Value *v = get(key);
    if (!v)
      return {};
    auto s = v->getAsString();
    if (!s)
      fail(key, "must be a string");
    else if (s->empty() && !allow_empty)
      fail(key, "must not be empty");
    else if (s->size() > kMaxRecordText ||
             !llvm::all_of(*s, [](char c) { return c >= 0x20 && c < 0x7f; }))
      // Not quoted back: the text is what must not reach a terminal.
      fail(key, fmt::format("must be printable ASCII of at most {} bytes", kMaxRecordText));
    else
      return s->str();
    return {};
  }
  /// A finite number >= 0 (times, counts).
  double number(llvm::StringRef key) {
    const llvm::json::Value *v = get(key);
    if (!v)
      return 0;
    auto d = v->getAsNumber();
    if (!d || !std::isfinite(*d) || *d < 0)
      fail(key, "must be a number >= 0");
    return d && std::isfinite(*d) ? *d : 0;
  }
  /// An integer >= 0.
  int64_t integer(llvm::StringRef key) {
    const llvm::json::Value *v = get(key);
    if (!v)
      return 0;
    auto i = v->getAsInteger();
    if (!i || *i < 0)
      fail(key, "must be an integer >= 0");
    return i ? *i : 0;
  }
  const llvm::json::Array *array(llvm::StringRef key) {
    const llvm::json::Value *v = get(key);
    if (!v)
      return nullptr;
    const llvm::json::Array *a = v->getAsArray();
    if (!a)
      fail(key, "must be an array");
    return a;
  }

  bool ok() const { return error_.empty(); }
  const std::string &error() const { return error_; }

private:
  const llvm::json::Value *get(llvm::StringRef key) {
    const llvm::json::Value *v = object_.get(key);
    if (!v && ok())
      error_ = fmt::format("{}missing \"{}\"", where_, key.str());
    return v;
  }
  void fail(llvm::StringRef key, const std::string &rule) {
    if (ok())
      error_ = fmt::format("{}\"{}\" {}", where_, key.str(), rule);
  }

  const llvm::json::Object &object_;
  std::string where_;
  std::string error_;
};

bool isSha256Hex(const std::string &s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

/// A tile config as a record must spell it: what parseTileConfig accepts and
/// suffix() writes back unchanged, so a record names kernels exactly.
llvm::Expected<codegen::TileConfig> recordedConfig(const std::string &text) {
  auto config = codegen::parseTileConfig(text);
  if (!config)
    return config.takeError();
  if (config->suffix() != text)
    return makeError(ErrorCode::InvalidArgument, "'{}' is not spelled as '{}'", text,
                     config->suffix());
  return config;
}

/// Shortest text that reads back as the same double: records stay readable
/// ("0.345", not "0.34499999999999997") and round-trip exactly.
void writeNumber(llvm::json::OStream &j, double value) {
  if (!std::isfinite(value)) { // not JSON; parseRecord then names the field
    j.value(nullptr);
    return;
  }
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  j.rawValue(llvm::StringRef(text, end - text));
}

} // namespace

std::string gpuSlug(const std::string &gpu_name) {
  std::string slug;
  for (unsigned char c : gpu_name) {
    if (std::isalnum(c))
      slug += static_cast<char>(std::tolower(c));
    else if (!slug.empty() && slug.back() != '-')
      slug += '-';
  }
  while (!slug.empty() && slug.back() == '-')
    slug.pop_back();
  return slug.empty() ? "gpu" : slug;
}

llvm::Expected<MoeShape> parseCanonicalText(llvm::StringRef text) {
  const std::string s = text.str();
  MoeShape shape;
  int version = 0, used = 0;
  char dtype[8] = {};
  if (std::sscanf(s.c_str(),
                  "moejit-workload v%d k=%d hidden=%d intermediate=%d experts=%d dtype=%7s%n",
                  &version, &shape.k, &shape.hidden, &shape.intermediate, &shape.experts, dtype,
                  &used) != 6 ||
      used != static_cast<int>(s.size()))
    return makeError(ErrorCode::InvalidArgument, "'{}' is not a workload's canonical text", s);
  const std::string name = dtype;
  bool known = false;
  for (DType d : {DType::BF16, DType::FP16, DType::FP32})
    if (name == dtype_name(d)) {
      shape.dtype = d;
      known = true;
    }
  if (!known)
    return makeError(ErrorCode::InvalidArgument, "'{}': unknown dtype '{}'", s, name);
  if (llvm::Error e = workload::validateShape(shape))
    return makeError(ErrorCode::InvalidArgument, "'{}': {}", s, errorMessage(std::move(e)));
  // Anything sscanf tolerates (a version of another meaning, "k=+8", extra
  // spaces) would name another workload id: only the exact text is accepted.
  if (workload::canonicalText(shape) != s)
    return makeError(ErrorCode::InvalidArgument, "'{}' is not canonical (expected '{}')", s,
                     workload::canonicalText(shape));
  return shape;
}

std::string toJson(const TuningRecord &r) {
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::json::OStream j(os, /*IndentSize=*/2);
  j.object([&] {
    j.attribute("format", kFormatName);
    j.attribute("format_version", kRecordFormat);
    j.attribute("workload_id", r.workload_id);
    j.attribute("workload", r.workload);
    j.attribute("gpu", r.gpu);
    j.attribute("arch", r.arch);
    j.attribute("moejit_version", r.moejit_version);
    j.attribute("nvrtc_version", r.nvrtc_version);
    j.attribute("created_utc", r.created_utc);
    j.attributeBegin("tuning_seconds");
    writeNumber(j, r.tuning_seconds);
    j.attributeEnd();
    j.attribute("candidates", r.candidates);
    j.attribute("failed", r.failed);
    j.attributeArray("buckets", [&] {
      for (const BucketRecord &b : r.buckets)
        j.object([&] {
          j.attribute("bucket", b.bucket);
          j.attribute("tokens", b.tokens);
          j.attribute("gemm1", b.choice.gemm1.suffix());
          j.attribute("gemm2", b.choice.gemm2.suffix());
          j.attributeBegin("ms");
          writeNumber(j, b.ms);
          j.attributeEnd();
          j.attributeBegin("heuristic_ms");
          writeNumber(j, b.heuristic_ms);
          j.attributeEnd();
        });
    });
  });
  os << "\n";
  return os.str();
}

llvm::Expected<TuningRecord> parseRecord(llvm::StringRef json) {
  auto value = parseBoundedJson(json, {kMaxRecordBytes, kMaxRecordDepth});
  if (!value)
    return invalid(errorMessage(value.takeError()));
  const llvm::json::Object *o = value->getAsObject();
  if (!o)
    return invalid("not a JSON object");
  if (auto format = o->getString("format"); !format || *format != kFormatName)
    return invalid(fmt::format("\"format\" must be \"{}\"", kFormatName));
  const auto version = o->getInteger("format_version");
  if (!version)
    return invalid("missing or non-integer \"format_version\"");
  if (*version != kRecordFormat)
    return invalid(fmt::format("format_version {} is not {}, the one this moejit reads", *version,
                               kRecordFormat));

  Fields f(*o, "");
  TuningRecord r;
  r.workload_id = f.string("workload_id");
  r.workload = f.string("workload");
  r.gpu = f.string("gpu");
  r.arch = f.string("arch");
  r.moejit_version = f.string("moejit_version");
  r.nvrtc_version = f.string("nvrtc_version", /*allow_empty=*/true);
  r.created_utc = f.string("created_utc", /*allow_empty=*/true);
  r.tuning_seconds = f.number("tuning_seconds");
  const int64_t candidates = f.integer("candidates");
  const int64_t failed = f.integer("failed");
  const llvm::json::Array *buckets = f.array("buckets");
  if (!f.ok())
    return invalid(f.error());
  if (!isSha256Hex(r.workload_id))
    return invalid(fmt::format("workload_id '{}' is not 64 lower-case hex digits", r.workload_id));
  if (workload::sha256Hex(r.workload) != r.workload_id)
    return invalid(fmt::format("workload_id {} is not the sha256 of workload '{}'", r.workload_id,
                               r.workload));
  if (candidates > INT_MAX)
    return invalid(fmt::format("candidates {} is too many", candidates));
  if (failed > candidates)
    return invalid(fmt::format("failed ({}) must be at most candidates ({})", failed, candidates));
  r.candidates = static_cast<int>(candidates);
  r.failed = static_cast<int>(failed);
  if (buckets->size() != static_cast<size_t>(runtime::kBucketCount))
    return invalid(fmt::format("{} buckets, expected {} (T = 1 .. {})", buckets->size(),
                               runtime::kBucketCount,
                               runtime::bucketTokens(runtime::kBucketCount - 1)));

  for (int b = 0; b < runtime::kBucketCount; ++b) {
    const std::string where = fmt::format("buckets[{}]: ", b);
    const llvm::json::Object *bo = (*buckets)[b].getAsObject();
    if (!bo)
      return invalid(where + "not an object");
    Fields bf(*bo, where);
    BucketRecord br;
    const int64_t bucket = bf.integer("bucket");
    br.tokens = bf.integer("tokens");
    const std::string gemm1 = bf.string("gemm1"), gemm2 = bf.string("gemm2");
    br.ms = bf.number("ms");
    br.heuristic_ms = bf.number("heuristic_ms");
    if (!bf.ok())
      return invalid(bf.error());
    if (bucket != b)
      return invalid(fmt::format("{}bucket {} is out of order (expected {})", where, bucket, b));
    br.bucket = b;
    if (br.tokens != runtime::bucketTokens(b))
      return invalid(fmt::format("{}tokens {} is not bucket {}'s {}", where, br.tokens, b,
                                 runtime::bucketTokens(b)));
    auto c1 = recordedConfig(gemm1);
    if (!c1)
      return invalid(where + "gemm1: " + errorMessage(c1.takeError()));
    auto c2 = recordedConfig(gemm2);
    if (!c2)
      return invalid(where + "gemm2: " + errorMessage(c2.takeError()));
    br.choice = {*c1, *c2};
    r.buckets.push_back(br);
  }
  return r;
}

namespace {

/// Where a record lives under the root: its folders and its file name.
struct RecordLocation {
  std::vector<std::string> folders;
  std::string file;
};

RecordLocation recordLocation(const std::string &workload_id, const std::string &gpu,
                              const std::string &version) {
  return {{store::kTuningFolder, fmt::format("v{}", kRecordFormat), workload_id, gpuSlug(gpu)},
          "moejit-" + version + store::kRecordSuffix};
}

/// The record's folder, walked down from the root without following links
/// and checked against the trust rule (common/safe_fs.h).
llvm::Expected<std::optional<safefs::Dir>> recordFolder(const std::string &root,
                                                        const RecordLocation &at, bool create) {
  auto top = safefs::openRoot(root, safefs::cacheTrust(), create);
  if (!top || !*top)
    return top;
  return safefs::openSubdirs(**top, at.folders, create);
}

} // namespace

std::string recordPath(const std::string &root, const std::string &workload_id,
                       const std::string &gpu, const std::string &version) {
  const RecordLocation at = recordLocation(workload_id, gpu, version);
  llvm::SmallString<256> path(root);
  for (const std::string &folder : at.folders)
    llvm::sys::path::append(path, folder);
  llvm::sys::path::append(path, at.file);
  return std::string(path);
}

namespace {

/// The folder of the record at `path` (`at` under `root`), made where
/// missing; InvalidArgument naming the record otherwise, and where a folder
/// stands at the record's name (no file can be renamed over it).
llvm::Expected<safefs::Dir> writableRecordFolder(const std::string &root, const RecordLocation &at,
                                                 const std::string &path) {
  auto folder = recordFolder(root, at, /*create=*/true);
  if (!folder)
    return makeError(ErrorCode::InvalidArgument, "cannot write tuning record {}: {}", path,
                     errorMessage(folder.takeError()));
  if (!*folder)
    return makeError(ErrorCode::InvalidArgument, "cannot write tuning record {}: no cache root",
                     path);
  if (auto st = safefs::statAt(**folder, at.file); st && S_ISDIR(st->st_mode))
    return makeError(ErrorCode::InvalidArgument,
                     "cannot write tuning record {}: a folder stands at its name (remove it)",
                     path);
  return std::move(**folder);
}

} // namespace

llvm::Error makeRecordFolder(const std::string &root, const std::string &workload_id,
                             const std::string &gpu, const std::string &version) {
  return writableRecordFolder(root, recordLocation(workload_id, gpu, version),
                              recordPath(root, workload_id, gpu, version))
      .takeError();
}

llvm::Error saveRecord(const std::string &root, const TuningRecord &record) {
  const std::string json = toJson(record);
  // Never publish a record that loadRecord would refuse.
  if (auto back = parseRecord(json); !back)
    return back.takeError();
  const RecordLocation at = recordLocation(record.workload_id, record.gpu, record.moejit_version);
  const std::string path = recordPath(root, record.workload_id, record.gpu, record.moejit_version);
  auto folder = writableRecordFolder(root, at, path);
  if (!folder)
    return folder.takeError();
  store::WriteError error;
  if (!store::writeFileAtomically(*folder, at.file, json, error))
    return makeError(ErrorCode::InvalidArgument, "cannot write tuning record {}: {}", path,
                     error.why);
  logger().info("saved tuning record {}", path);
  return llvm::Error::success();
}

llvm::Expected<std::optional<TuningRecord>> readRecordFile(const safefs::Dir &dir,
                                                           llvm::StringRef name) {
  auto text = safefs::readFile(dir, name, kMaxRecordBytes);
  if (!text)
    return text.takeError();
  if (!*text)
    return std::nullopt;
  auto record = parseRecord(**text);
  if (!record)
    return record.takeError();
  return std::move(*record);
}

std::optional<TuningRecord> loadRecord(const std::string &root, const std::string &workload_id,
                                       const std::string &gpu, const std::string &version) {
  if (root.empty())
    return std::nullopt; // a memory-only cache has no records
  const RecordLocation at = recordLocation(workload_id, gpu, version);
  const std::string path = recordPath(root, workload_id, gpu, version);
  auto skip = [&](const std::string &why) {
    warnOnce("tuning-record:" + path, fmt::format("tuning record {} is ignored: {}", path, why));
    return std::nullopt;
  };
  auto folder = recordFolder(root, at, /*create=*/false);
  if (!folder)
    return skip(errorMessage(folder.takeError()));
  if (!*folder)
    return std::nullopt; // not tuned: the usual case
  auto read = readRecordFile(**folder, at.file);
  if (!read)
    return skip(errorMessage(read.takeError()));
  if (!*read)
    return std::nullopt;
  std::optional<TuningRecord> &record = *read;
  // A file copied to the wrong place must not stand in for another key.
  std::string wrong;
  auto compare = [&](const char *field, const std::string &found, const std::string &wanted) {
    if (found != wanted)
      wrong +=
          fmt::format("{}{} is '{}', not '{}'", wrong.empty() ? "" : "; ", field, found, wanted);
  };
  compare("workload_id", record->workload_id, workload_id);
  compare("gpu", record->gpu, gpu);
  compare("moejit_version", record->moejit_version, version);
  if (!wrong.empty())
    return skip(wrong);
  return std::move(*record);
}

std::optional<TuningRecord> findRecord(const std::vector<TuningRecord> &records,
                                       const std::string &workload_id, const std::string &gpu,
                                       const std::string &version) {
  for (const TuningRecord &r : records)
    if (r.workload_id == workload_id && r.gpu == gpu && r.moejit_version == version)
      return r;
  return std::nullopt;
}

} // namespace moejit::tune
