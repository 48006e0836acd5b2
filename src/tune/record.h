// Tuning records: the tile configs chosen per token bucket for one
// (workload id, GPU name, moejit version), with their measured times, as
// versioned JSON (cache/TUNING.md). Records live in the cache root; tables
// shipped with moejit (cache/tuning/, embedded at build time) come next; the
// heuristic last.
#pragma once

#include "common/safe_fs.h"
#include "moejit/moejit.hpp"
#include "runtime/planner.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include <optional>
#include <string>
#include <vector>

namespace moejit::tune {

inline constexpr int kRecordFormat = 1;
/// Records are a few kilobytes and three levels deep; a file over these is
/// refused before it is parsed.
inline constexpr size_t kMaxRecordBytes = size_t{1} << 20;
inline constexpr int kMaxRecordDepth = 8;
/// Every string in a record (the GPU name, workload text, versions, tile
/// configs) is printable ASCII (space included) of at most this many bytes,
/// or the record is refused: these texts reach terminals and logs in
/// messages (a record for another GPU is ignored with its name), where a
/// hostile root's escape sequences or newlines would rewrite or forge lines.
inline constexpr size_t kMaxRecordText = 256;

struct BucketRecord {
  int bucket = 0;           ///< runtime::bucketOf
  int64_t tokens = 0;       ///< the representative T it was timed at
  runtime::GemmPlan choice; ///< the winner
  double ms = 0;            ///< whole run with the winner (mean of two interleaved medians)
  double heuristic_ms = 0;  ///< whole run with the heuristic's plan (the same)
};

struct TuningRecord {
  std::string workload_id;    ///< sha256 (workload::workloadId)
  std::string workload;       ///< canonical text, for people reading it
  std::string gpu;            ///< device name, e.g. "NVIDIA H200"
  std::string arch;           ///< e.g. "sm_90a"
  std::string moejit_version; ///< moejit::version()
  std::string nvrtc_version;
  std::string created_utc; ///< ISO 8601
  double tuning_seconds = 0;
  int candidates = 0;                ///< configs tried
  int failed = 0;                    ///< of which failed to compile, load, launch or check
  std::vector<BucketRecord> buckets; ///< runtime::kBucketCount, in order
};

/// "NVIDIA H200" -> "nvidia-h200": lower case, runs of other characters
/// become one '-' (none at either end; "gpu" when nothing is left).
std::string gpuSlug(const std::string &gpu_name);

/// The shape whose workload::canonicalText is exactly `text`;
/// InvalidArgument otherwise (also for a shape validateShape rejects).
llvm::Expected<MoeShape> parseCanonicalText(llvm::StringRef text);

std::string toJson(const TuningRecord &record);
/// Parses and checks a record: format version, every field, workload_id the
/// sha256 of workload, one entry per bucket in order, tile configs that parse
/// and are spelled as TileConfig::suffix() spells them. InvalidArgument
/// saying what is wrong otherwise.
llvm::Expected<TuningRecord> parseRecord(llvm::StringRef json);

/// <root>/tuning/v<format>/<workload id>/<gpu slug>/moejit-<version>.json
std::string recordPath(const std::string &root, const std::string &workload_id,
                       const std::string &gpu, const std::string &version);
/// Writes the record atomically at recordPath(root, ...); InvalidArgument,
/// writing nothing, for a record parseRecord would refuse.
llvm::Error saveRecord(const std::string &root, const TuningRecord &record);
/// Makes (or opens) the folder saveRecord would write the record of (id,
/// gpu, version) into, under the same rules (no link, trusted folders):
/// checked before a tune, so that minutes of tuning are not lost to a
/// folder that cannot be written. InvalidArgument saying why otherwise.
llvm::Error makeRecordFolder(const std::string &root, const std::string &workload_id,
                             const std::string &gpu, const std::string &version);
/// The record of (id, gpu, version) in `root`; nullopt if there is none, or
/// if it is unreadable, oversized, a link or special file, in an untrusted
/// folder, invalid or names another key (logged once per path).
std::optional<TuningRecord> loadRecord(const std::string &root, const std::string &workload_id,
                                       const std::string &gpu, const std::string &version);
/// Reads and parses the record file `name` in `dir` (no link followed, no
/// special file read, at most kMaxRecordBytes); nullopt when it is missing.
llvm::Expected<std::optional<TuningRecord>> readRecordFile(const safefs::Dir &dir,
                                                           llvm::StringRef name);
/// The table shipped with moejit for (id, gpu, version), if any.
std::optional<TuningRecord> shippedRecord(const std::string &workload_id, const std::string &gpu,
                                          const std::string &version);
/// Every shipped table (for tests and `moejit cache list`).
std::vector<TuningRecord> shippedRecords();
/// The record of (id, gpu, version) among `records`, if any.
std::optional<TuningRecord> findRecord(const std::vector<TuningRecord> &records,
                                       const std::string &workload_id, const std::string &gpu,
                                       const std::string &version);

} // namespace moejit::tune
