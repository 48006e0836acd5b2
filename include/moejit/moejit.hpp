// moejit: run-time generated CUDA kernels for the fused Mixture-of-Experts
// expert MLP. This is the whole public C++ surface.
//
//   moejit::Runtime rt(/*device=*/0);
//   auto kernels = rt.get({.k = 8, .hidden = 2048, .intermediate = 768,
//                          .experts = 128, .dtype = moejit::DType::BF16});
//   size_t ws = kernels->workspace_bytes(tokens);   // caller allocates
//   kernels->run(args, stream);                     // async, graph-safe
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

// The library is compiled with hidden visibility; everything declared here
// is its public API, exported from libmoejit.so (cmake/moejit.map).
#pragma GCC visibility push(default)

namespace moejit {

/// Element type of x, the weights, y and the intermediate.
enum class DType { BF16, FP16, FP32 };

/// The one shape a kernel set is specialised to. T (tokens) is not part of
/// it: one kernel set serves every T.
struct MoeShape {
  int k = 0;            ///< slots per token, 1..kMaxK (may exceed `experts`: see kMaxK)
  int hidden = 0;       ///< H, multiple of 8
  int intermediate = 0; ///< I, multiple of 8
  int experts = 0;      ///< E, 1..kMaxExperts
  DType dtype = DType::BF16;
};

inline constexpr int kMaxExperts = 4096;
/// k is not bounded by `experts`: a kernel set for one GPU's share of an
/// expert-parallel layer (an expert map) holds fewer experts than a token
/// has slots, and a row's slots may repeat an expert (each one counts).
inline constexpr int kMaxK = 4096;
inline constexpr int kMaxDim = 1 << 16;

/// What went wrong, for callers that branch on it.
enum class ErrorCode {
  InvalidShape,
  InvalidArgument,
  WorkspaceTooSmall,
  CompileFailed,
  DriverError,
  NoDevice,
  CacheMiss,
  Internal,
};

/// The one exception type the public API throws.
class Error : public std::runtime_error {
public:
  Error(ErrorCode code, const std::string &message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

private:
  ErrorCode code_;
};

/// How top_k_index holds expert ids.
enum class IndexType { Int32, Int64 };
/// How top_k_weights holds routing weights: float32, or the workload dtype.
enum class WeightType { Float32, ModelDType };

/// How GEMM2's weighted rows become y (MOEJIT_COMBINE).
enum class Combine {
  /// Same inputs, same bits: GEMM2 writes each (token, slot) row, then a
  /// combine pass sums a token's rows in slot order in fp32.
  Deterministic,
  /// GEMM2 adds its weighted rows straight into y (bulk or atomic
  /// reduce-adds in the model dtype, y zeroed first): no combine pass and
  /// no [T*k, H] partial buffer in the workspace. The order of the adds
  /// varies from run to run, so the low bits of y do; each add rounds to
  /// the dtype, up to k roundings where Deterministic has one (README).
  Fast,
  /// Deterministic, and a token's y is the same bits whatever T and
  /// whatever the other tokens are: one tile plan serves every T (that of
  /// the largest bucket), so a row's arithmetic never depends on the batch.
  BatchInvariant,
};

/// Pointers are device pointers in the runtime's context, row-major and
/// 16-byte aligned. Shapes: x [T,H], gate_up_proj [E,2I,H] (rows [0,I) gate,
/// [I,2I) up), down_proj [E,H,I], top_k_index [T,k] (int32 or int64,
/// index_type), top_k_weights [T,k] (float32 or the workload dtype,
/// weight_type), y [T,H]. y may be exactly x (in place) but overlaps no
/// input otherwise, nor the workspace, which overlaps no input.
struct MoeArgs {
  const void *x = nullptr;
  const void *gate_up_proj = nullptr;
  const void *down_proj = nullptr;
  const void *top_k_index = nullptr;
  const void *top_k_weights = nullptr;
  void *y = nullptr;
  int64_t tokens = 0;
  void *workspace = nullptr;
  size_t workspace_bytes = 0;
  /// Optional int32 [expert_map_size]: global expert id -> local id in
  /// [0, E), or -1 for an expert on another GPU (expert parallelism, as
  /// vLLM's expert_map). With it, top_k_index holds global ids; an id
  /// outside the map or mapped to -1 contributes nothing and is never
  /// dereferenced. Null: ids are local.
  const int32_t *expert_map = nullptr;
  int64_t expert_map_size = 0;
  IndexType index_type = IndexType::Int32;
  WeightType weight_type = WeightType::Float32;
};

/// Resource report of one compiled kernel.
struct KernelInfo {
  std::string name;
  int registers = 0;
  int spill_bytes = 0;   ///< spill stores + loads reported by ptxas
  int shared_bytes = 0;  ///< static + dynamic shared memory per block
  double compile_ms = 0; ///< 0 when loaded from the disk cache
  bool from_cache = false;
};

/// The tile configs `run` uses for tokens up to max_tokens (and above the
/// previous entry's).
struct BucketPlan {
  int64_t max_tokens = 0;
  std::string gemm1, gemm2; ///< tile config suffixes, e.g. bm128_bn64_s3_wgmma
};

/// Compiled, loaded kernels for one shape on one device.
class KernelSet {
public:
  virtual ~KernelSet() = default;
  /// Scratch `run` needs for `tokens` tokens; 0 for tokens <= 0. Throws
  /// Error(InvalidArgument) naming the limit for more tokens than one call
  /// supports, as `run` does: (2^31-1)/2 / k. (A run whose GEMM row tiles
  /// would pass one launch's 65535, about a million tokens at k=8 with
  /// 128-row tiles, is enqueued as several launch sequences in a row, on
  /// one workspace of this size.)
  virtual size_t workspace_bytes(int64_t tokens) const = 0;
  /// Enqueues the whole MoE MLP on `stream` (a CUstream / cudaStream_t).
  /// Never allocates, never synchronises, capturable in a CUDA graph.
  /// Launches in the device's primary context (the stream must belong to
  /// it) and leaves the calling thread's current context as it found it.
  /// Throws moejit::Error before any launch on bad arguments.
  virtual void run(const MoeArgs &args, void *stream) const = 0;
  virtual const MoeShape &shape() const = 0;
  virtual const std::string &workload_id() const = 0;
  virtual std::vector<KernelInfo> kernels() const = 0;
  /// Tile configs per token bucket.
  virtual std::vector<BucketPlan> plan() const = 0;
  /// Where the plan came from: "tuning record <path>", "shipped table",
  /// "autotuned", or "heuristic".
  virtual const std::string &plan_source() const = 0;
  /// How this set's GEMM2 rows become y.
  virtual Combine combine() const = 0;
};

/// Where a kernel set's tile configs come from (MOEJIT_TUNING).
enum class Tuning {
  /// The tuning record in the cache root for (workload, GPU, moejit
  /// version), else the table shipped with moejit, else the heuristic.
  Records,
  /// The heuristic only.
  Heuristic,
  /// Like Records, but with no record in the cache root the first get()
  /// of a shape autotunes it on the device and saves a record (seconds to
  /// minutes). Never done inside run().
  FirstUse,
};

struct RuntimeOptions {
  /// Cache root; empty: MOEJIT_CACHE_DIR, else $XDG_CACHE_HOME/moejit,
  /// else ~/.cache/moejit.
  std::string cache_dir;
  /// Unset: MOEJIT_NO_COMPILE. True: a kernel missing from the cache is an
  /// Error(CacheMiss) naming the workload, kernel and key; nothing compiles.
  std::optional<bool> no_compile;
  /// Unset: MOEJIT_TUNING (default Records).
  std::optional<Tuning> tuning;
  /// Unset: MOEJIT_COMBINE (default Deterministic).
  std::optional<Combine> combine;
};

/// Cubin cache counters of one Runtime's cache root, since it was created.
struct CacheStats {
  uint64_t hits = 0;     ///< kernels found in memory or on disk
  uint64_t misses = 0;   ///< kernels not found (compiled, or a CacheMiss)
  uint64_t compiles = 0; ///< kernels NVRTC compiled (several may share a program)
  /// Some compiled kernel could not be saved (no root; a root that is not
  /// writable, not trusted or full) and lives in memory only.
  bool memory_only = false;
};

/// Owns the kernel sets of one device. Thread-safe; kernel sets are shared
/// process-wide per (workload id, device) and compiled once.
class Runtime {
public:
  explicit Runtime(int device = 0, RuntimeOptions options = {});
  ~Runtime();
  Runtime(const Runtime &) = delete;
  Runtime &operator=(const Runtime &) = delete;

  /// Compiles (or loads from the cache) the kernels for `shape`.
  std::shared_ptr<const KernelSet> get(const MoeShape &shape);
  /// "sm_90a" on an H100/H200.
  const std::string &arch() const;
  const std::string &device_name() const;
  /// Counters of this runtime's cubin cache.
  CacheStats cache_stats() const;
  /// The combine mode of the kernel sets it returns (options or
  /// MOEJIT_COMBINE).
  Combine combine() const;

private:
  std::shared_ptr<const KernelSet> getSlow(const MoeShape &shape);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// moejit's version ("0.2.0"); part of every tuning record's key.
const char *version();

/// Throws Error(InvalidShape) naming the offending field.
void validate(const MoeShape &shape);
/// "moejit-workload v1 k=8 hidden=2048 ..." (documented in cache/FORMAT.md).
std::string canonical_text(const MoeShape &shape);
/// Lower-case hex sha256 of canonical_text.
std::string workload_id(const MoeShape &shape);
const char *dtype_name(DType dtype);
/// "deterministic", "fast" or "batch-invariant" (MOEJIT_COMBINE's values).
const char *combine_name(Combine combine);
/// Parses combine_name's names; throws Error(InvalidArgument) otherwise.
Combine parse_combine(const std::string &name);
/// Parses "bf16" / "fp16" / "fp32"; throws Error(InvalidShape) otherwise.
DType parse_dtype(const std::string &name);
int dtype_bytes(DType dtype);

} // namespace moejit

#pragma GCC visibility pop
