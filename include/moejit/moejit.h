/* moejit: the C ABI (C99), for hosts that are not C++ (Python through
 * ctypes, Rust, Go) and for loading libmoejit.so from any language.
 *
 *   moejit_runtime *rt;
 *   if (moejit_runtime_create(0, NULL, &rt) != MOEJIT_OK)
 *     fprintf(stderr, "%s\n", moejit_last_error());
 *   moejit_shape shape = {8, 2048, 768, 128, MOEJIT_BF16};
 *   moejit_kernels *k;
 *   moejit_get(rt, &shape, &k);
 *   size_t bytes;
 *   moejit_workspace_bytes(k, tokens, &bytes);        // the caller allocates
 *   moejit_args args = MOEJIT_ARGS_INIT;
 *   args.x = x; ... args.workspace = ws; args.workspace_bytes = bytes;
 *   moejit_run(k, &args, stream);                      // async, graph-safe
 *   moejit_kernels_release(k);
 *   moejit_runtime_destroy(rt);
 *
 * Conventions:
 * - Every call that can fail returns a moejit_status; on failure the
 *   calling thread's moejit_last_error() says why (the same text a C++
 *   moejit::Error carries). No C++ exception or type crosses this ABI.
 * - Structs that may grow begin with `struct_size`, set by the caller to
 *   sizeof the struct it was compiled with (the *_INIT macros do): a newer
 *   library reads only the fields an older caller knows of.
 * - Pointers in moejit_args are device pointers in the runtime's context;
 *   layouts and rules are those of moejit::MoeArgs (include/moejit/moejit.hpp).
 * - Handles are thread-safe as their C++ counterparts are: moejit_get may be
 *   called from several threads; a kernel set may be run from several
 *   threads on different streams.
 */
#ifndef MOEJIT_MOEJIT_H
#define MOEJIT_MOEJIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define MOEJIT_C_API __attribute__((visibility("default")))
#else
#define MOEJIT_C_API
#endif

/** What went wrong; the values after MOEJIT_OK follow moejit::ErrorCode + 1. */
typedef enum moejit_status {
  MOEJIT_OK = 0,
  MOEJIT_INVALID_SHAPE = 1,
  MOEJIT_INVALID_ARGUMENT = 2,
  MOEJIT_WORKSPACE_TOO_SMALL = 3,
  MOEJIT_COMPILE_FAILED = 4,
  MOEJIT_DRIVER_ERROR = 5,
  MOEJIT_NO_DEVICE = 6,
  MOEJIT_CACHE_MISS = 7,
  MOEJIT_INTERNAL = 8
} moejit_status;

typedef enum moejit_dtype { MOEJIT_BF16 = 0, MOEJIT_FP16 = 1, MOEJIT_FP32 = 2 } moejit_dtype;

/** The shape a kernel set is specialised to (moejit::MoeShape). */
typedef struct moejit_shape {
  int32_t k; /**< slots per token, 1..4096; may exceed experts (an expert map's share) */
  int32_t hidden;
  int32_t intermediate;
  int32_t experts;
  int32_t dtype; /**< a moejit_dtype */
} moejit_shape;

/** Where tile configs come from (moejit::Tuning); UNSET: MOEJIT_TUNING. */
enum {
  MOEJIT_TUNING_UNSET = -1,
  MOEJIT_TUNING_RECORDS = 0,
  MOEJIT_TUNING_HEURISTIC = 1,
  MOEJIT_TUNING_FIRST_USE = 2
};

/** How GEMM2's rows become y (moejit::Combine); UNSET: MOEJIT_COMBINE. */
enum {
  MOEJIT_COMBINE_UNSET = -1,
  MOEJIT_COMBINE_DETERMINISTIC = 0,
  MOEJIT_COMBINE_FAST = 1,
  MOEJIT_COMBINE_BATCH_INVARIANT = 2
};

/** Fields after `tuning` were added later: a caller built against an older
 *  header passes a smaller struct_size, and they read as UNSET. */
typedef struct moejit_runtime_options {
  size_t struct_size;
  const char *cache_dir; /**< NULL or "": MOEJIT_CACHE_DIR, else the default root */
  int32_t no_compile;    /**< -1: MOEJIT_NO_COMPILE; 0 or 1 */
  int32_t tuning;        /**< MOEJIT_TUNING_* */
  int32_t combine;       /**< MOEJIT_COMBINE_* */
} moejit_runtime_options;
#define MOEJIT_RUNTIME_OPTIONS_INIT                                                                \
  { sizeof(moejit_runtime_options), NULL, -1, MOEJIT_TUNING_UNSET, MOEJIT_COMBINE_UNSET }

enum { MOEJIT_INDEX_INT32 = 0, MOEJIT_INDEX_INT64 = 1 };
enum { MOEJIT_WEIGHTS_FLOAT32 = 0, MOEJIT_WEIGHTS_MODEL_DTYPE = 1 };

/** One call's tensors (moejit::MoeArgs). */
typedef struct moejit_args {
  size_t struct_size;
  const void *x;
  const void *gate_up_proj;
  const void *down_proj;
  const void *top_k_index;   /**< int32 or int64 (index_type) */
  const void *top_k_weights; /**< float32 or the model dtype (weights_type) */
  void *y;                   /**< may be exactly x (in place) */
  int64_t tokens;
  void *workspace; /**< overlaps no input, nor y */
  size_t workspace_bytes;
  const int32_t *expert_map; /**< NULL, or global id -> local id or -1 */
  int64_t expert_map_size;
  int32_t index_type;   /**< MOEJIT_INDEX_* */
  int32_t weights_type; /**< MOEJIT_WEIGHTS_* */
} moejit_args;
#define MOEJIT_ARGS_INIT                                                                           \
  {                                                                                                \
    sizeof(moejit_args), NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, 0, NULL, 0,                  \
        MOEJIT_INDEX_INT32, MOEJIT_WEIGHTS_FLOAT32                                                 \
  }

typedef struct moejit_cache_stats {
  size_t struct_size;
  uint64_t hits;
  uint64_t misses;
  uint64_t compiles;
  int32_t memory_only; /**< some compiled kernel could not be saved */
} moejit_cache_stats;
#define MOEJIT_CACHE_STATS_INIT                                                                    \
  { sizeof(moejit_cache_stats), 0, 0, 0, 0 }

/** What moejit_warm did. */
typedef struct moejit_warm_report {
  size_t struct_size;
  uint64_t kernels;   /**< kernels the shape's plans use */
  uint64_t compiled;  /**< compiled now (the rest were in the cache) */
  uint64_t not_saved; /**< compiled but kept in memory only (root unwritable, untrusted, full) */
} moejit_warm_report;
#define MOEJIT_WARM_REPORT_INIT                                                                    \
  { sizeof(moejit_warm_report), 0, 0, 0 }

typedef struct moejit_runtime moejit_runtime; /**< owns the kernel sets of one device */
typedef struct moejit_kernels moejit_kernels; /**< compiled, loaded kernels of one shape */

/** "0.2.0". */
MOEJIT_C_API const char *moejit_version(void);
/** Why the calling thread's last failed call failed; "" if none has. */
MOEJIT_C_API const char *moejit_last_error(void);

/** A runtime on CUDA device `device`; `options` may be NULL. */
MOEJIT_C_API moejit_status moejit_runtime_create(int device, const moejit_runtime_options *options,
                                                 moejit_runtime **out);
/** NULL is allowed. Kernel sets obtained from it stay usable until released. */
MOEJIT_C_API void moejit_runtime_destroy(moejit_runtime *runtime);
MOEJIT_C_API moejit_status moejit_cache_stats_get(const moejit_runtime *runtime,
                                                  moejit_cache_stats *out);

/** The kernel set of `shape` (compiled or loaded from the cache on first use). */
MOEJIT_C_API moejit_status moejit_get(moejit_runtime *runtime, const moejit_shape *shape,
                                      moejit_kernels **out);
/** NULL is allowed. */
MOEJIT_C_API void moejit_kernels_release(moejit_kernels *kernels);
/** Scratch bytes `moejit_run` needs for `tokens` tokens. */
MOEJIT_C_API moejit_status moejit_workspace_bytes(const moejit_kernels *kernels, int64_t tokens,
                                                  size_t *out);
/** Enqueues the MoE MLP on `stream` (a CUstream / cudaStream_t of the
 *  device's primary context; NULL: its legacy default stream). Never
 *  allocates or synchronises; the calling thread's current context is left
 *  as it was. */
MOEJIT_C_API moejit_status moejit_run(const moejit_kernels *kernels, const moejit_args *args,
                                      void *stream);

/** Compiles every kernel a deployment of `shape` may use for `arch`
 *  ("sm_90a") into the cache at `cache_dir` (NULL: the default root), with
 *  no GPU needed; `gpu` (NULL: every shipped table of the arch) names the
 *  device whose tuned plan to include, for the combine mode MOEJIT_COMBINE
 *  gives. `report` may be NULL. A kernel that could not be saved makes it
 *  MOEJIT_INVALID_ARGUMENT, with the reason. */
MOEJIT_C_API moejit_status moejit_warm(const moejit_shape *shape, const char *arch, const char *gpu,
                                       const char *cache_dir, moejit_warm_report *report);

/** What moejit_cache_verify or moejit_cache_prune found and did. */
typedef struct moejit_cache_report {
  size_t struct_size;
  uint64_t entries_ok;  /**< entries that decode and are what their name says */
  uint64_t corrupt;     /**< entries that do not */
  uint64_t refused;     /**< links, special files, untrusted folders, folders at file names */
  uint64_t bad_records; /**< tuning records that do not read back */
  uint64_t temporary;   /**< temporary files (stale or being written) */
  uint64_t stale_locks; /**< lock files nobody holds */
  uint64_t removed;     /**< files removed */
  uint64_t entry_bytes; /**< entry bytes left (prune) */
  int32_t ok;           /**< verify: no corrupt entry, refused file or bad record is left */
} moejit_cache_report;
#define MOEJIT_CACHE_REPORT_INIT                                                                   \
  { sizeof(moejit_cache_report), 0, 0, 0, 0, 0, 0, 0, 0, 0 }

/** `moejit cache verify [--fix]` of the root at `cache_dir` (NULL: the
 *  default root): checks every entry and tuning record; with `fix`,
 *  removes what is corrupt, links, special files and leftovers. */
MOEJIT_C_API moejit_status moejit_cache_verify(const char *cache_dir, int fix,
                                               moejit_cache_report *report);
/** `moejit cache prune --max-size`: least recently used entries go until the
 *  entries total at most `max_bytes`; entries in use are kept. */
MOEJIT_C_API moejit_status moejit_cache_prune(const char *cache_dir, uint64_t max_bytes,
                                              moejit_cache_report *report);

/** Log levels passed to a log callback (spdlog's). */
enum {
  MOEJIT_LOG_TRACE = 0,
  MOEJIT_LOG_DEBUG = 1,
  MOEJIT_LOG_INFO = 2,
  MOEJIT_LOG_WARN = 3,
  MOEJIT_LOG_ERROR = 4,
  MOEJIT_LOG_CRITICAL = 5
};
typedef void (*moejit_log_callback)(int level, const char *message, void *user);
/** Routes moejit's messages (filtered by MOEJIT_LOG_LEVEL) to `callback`,
 *  from whichever thread logs; NULL: back to stderr. */
MOEJIT_C_API void moejit_set_log_callback(moejit_log_callback callback, void *user);

#ifdef __cplusplus
}
#endif

#endif /* MOEJIT_MOEJIT_H */
