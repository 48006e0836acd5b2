// The C ABI (include/moejit/moejit.h) over the C++ facade: every entry point
// catches what the facade throws and turns it into a status and the
// thread's last-error text, so no exception crosses into C.
#include "moejit/moejit.h"

#include "api/options.h"
#include "api/warm.h"
#include "common/error.h"
#include "common/log.h"
#include "moejit/moejit.hpp"
#include "store/cache_admin.h"

#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>

struct moejit_runtime {
  std::unique_ptr<moejit::Runtime> runtime;
};

struct moejit_kernels {
  std::shared_ptr<const moejit::KernelSet> kernels;
};

namespace {

thread_local std::string last_error;

moejit_status fail(moejit_status status, std::string message) {
  last_error = std::move(message);
  return status;
}

moejit_status statusOf(moejit::ErrorCode code) {
  return static_cast<moejit_status>(static_cast<int>(code) + 1);
}

/// Runs `body`, turning whatever it throws into a status.
template <typename Body> moejit_status guarded(Body &&body) {
  try {
    body();
    return MOEJIT_OK;
  } catch (const moejit::Error &e) {
    return fail(statusOf(e.code()), e.what());
  } catch (const std::bad_alloc &) {
    return fail(MOEJIT_INTERNAL, "out of host memory");
  } catch (const std::exception &e) {
    return fail(MOEJIT_INTERNAL, e.what());
  } catch (...) {
    return fail(MOEJIT_INTERNAL, "unknown error");
  }
}

/// Checks a caller's struct: not NULL, and at least as large as the fields
/// this version reads from it (`struct_size` of older, smaller layouts
/// would need defaults for the missing fields; there are none yet).
/// `s` is not null and its struct_size covers at least `least` bytes (the
/// fields every version of the struct has; sizeof(T) for most).
template <typename T>
bool validStruct(const T *s, const char *name, moejit_status &status, size_t least = sizeof(T)) {
  if (!s) {
    status = fail(MOEJIT_INVALID_ARGUMENT, std::string(name) + " is NULL");
    return false;
  }
  if (s->struct_size < least) {
    status = fail(MOEJIT_INVALID_ARGUMENT, std::string(name) + ".struct_size is " +
                                               std::to_string(s->struct_size) + ", less than the " +
                                               std::to_string(least) +
                                               " bytes this moejit reads (set it to sizeof)");
    return false;
  }
  return true;
}

static_assert(MOEJIT_COMBINE_DETERMINISTIC == static_cast<int>(moejit::Combine::Deterministic) &&
                  MOEJIT_COMBINE_FAST == static_cast<int>(moejit::Combine::Fast) &&
                  MOEJIT_COMBINE_BATCH_INVARIANT ==
                      static_cast<int>(moejit::Combine::BatchInvariant),
              "the C and C++ combine modes agree");

/// moejit_runtime_options before `combine` was added.
constexpr size_t kOptionsWithoutCombine = offsetof(moejit_runtime_options, combine);

moejit::MoeShape shapeOf(const moejit_shape &s) {
  if (s.dtype < MOEJIT_BF16 || s.dtype > MOEJIT_FP32)
    throw moejit::Error(moejit::ErrorCode::InvalidShape,
                        "dtype " + std::to_string(s.dtype) + " is not a moejit_dtype");
  return {s.k, s.hidden, s.intermediate, s.experts, static_cast<moejit::DType>(s.dtype)};
}

} // namespace

extern "C" {

const char *moejit_version(void) { return moejit::version(); }

const char *moejit_last_error(void) { return last_error.c_str(); }

moejit_status moejit_runtime_create(int device, const moejit_runtime_options *options,
                                    moejit_runtime **out) {
  moejit_status status = MOEJIT_OK;
  if (!out)
    return fail(MOEJIT_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (options && !validStruct(options, "options", status, kOptionsWithoutCombine))
    return status;
  return guarded([&] {
    moejit::RuntimeOptions o;
    if (options) {
      if (options->cache_dir)
        o.cache_dir = options->cache_dir;
      if (options->no_compile == 0 || options->no_compile == 1)
        o.no_compile = options->no_compile == 1;
      else if (options->no_compile != -1)
        throw moejit::Error(moejit::ErrorCode::InvalidArgument,
                            "options.no_compile must be -1, 0 or 1");
      if (options->tuning >= MOEJIT_TUNING_RECORDS && options->tuning <= MOEJIT_TUNING_FIRST_USE)
        o.tuning = static_cast<moejit::Tuning>(options->tuning);
      else if (options->tuning != MOEJIT_TUNING_UNSET)
        throw moejit::Error(moejit::ErrorCode::InvalidArgument,
                            "options.tuning must be one of MOEJIT_TUNING_*");
      const int32_t combine = options->struct_size >= sizeof(moejit_runtime_options)
                                  ? options->combine
                                  : MOEJIT_COMBINE_UNSET;
      if (combine >= MOEJIT_COMBINE_DETERMINISTIC && combine <= MOEJIT_COMBINE_BATCH_INVARIANT)
        o.combine = static_cast<moejit::Combine>(combine);
      else if (combine != MOEJIT_COMBINE_UNSET)
        throw moejit::Error(moejit::ErrorCode::InvalidArgument,
                            "options.combine must be one of MOEJIT_COMBINE_*");
    }
    auto handle = std::make_unique<moejit_runtime>();
    handle->runtime = std::make_unique<moejit::Runtime>(device, std::move(o));
    *out = handle.release();
  });
}

void moejit_runtime_destroy(moejit_runtime *runtime) { delete runtime; }

moejit_status moejit_cache_stats_get(const moejit_runtime *runtime, moejit_cache_stats *out) {
  moejit_status status = MOEJIT_OK;
  if (!runtime)
    return fail(MOEJIT_INVALID_ARGUMENT, "runtime is NULL");
  if (!validStruct(out, "out", status))
    return status;
  const moejit::CacheStats s = runtime->runtime->cache_stats();
  out->hits = s.hits;
  out->misses = s.misses;
  out->compiles = s.compiles;
  out->memory_only = s.memory_only ? 1 : 0;
  return MOEJIT_OK;
}

moejit_status moejit_get(moejit_runtime *runtime, const moejit_shape *shape, moejit_kernels **out) {
  if (!out)
    return fail(MOEJIT_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (!runtime || !shape)
    return fail(MOEJIT_INVALID_ARGUMENT, !runtime ? "runtime is NULL" : "shape is NULL");
  return guarded([&] {
    auto handle = std::make_unique<moejit_kernels>();
    handle->kernels = runtime->runtime->get(shapeOf(*shape));
    *out = handle.release();
  });
}

void moejit_kernels_release(moejit_kernels *kernels) { delete kernels; }

moejit_status moejit_workspace_bytes(const moejit_kernels *kernels, int64_t tokens, size_t *out) {
  if (!kernels || !out)
    return fail(MOEJIT_INVALID_ARGUMENT, !kernels ? "kernels is NULL" : "out is NULL");
  return guarded([&] { *out = kernels->kernels->workspace_bytes(tokens); });
}

moejit_status moejit_run(const moejit_kernels *kernels, const moejit_args *args, void *stream) {
  moejit_status status = MOEJIT_OK;
  if (!kernels)
    return fail(MOEJIT_INVALID_ARGUMENT, "kernels is NULL");
  if (!validStruct(args, "args", status))
    return status;
  return guarded([&] {
    moejit::MoeArgs a;
    a.x = args->x;
    a.gate_up_proj = args->gate_up_proj;
    a.down_proj = args->down_proj;
    a.top_k_index = args->top_k_index;
    a.top_k_weights = args->top_k_weights;
    a.y = args->y;
    a.tokens = args->tokens;
    a.workspace = args->workspace;
    a.workspace_bytes = args->workspace_bytes;
    a.expert_map = args->expert_map;
    a.expert_map_size = args->expert_map_size;
    // Out-of-range values stay out of range: the argument check names them.
    a.index_type = static_cast<moejit::IndexType>(args->index_type);
    a.weight_type = static_cast<moejit::WeightType>(args->weights_type);
    kernels->kernels->run(a, stream);
  });
}

moejit_status moejit_warm(const moejit_shape *shape, const char *arch, const char *gpu,
                          const char *cache_dir, moejit_warm_report *report) {
  moejit_status status = MOEJIT_OK;
  if (!shape || !arch)
    return fail(MOEJIT_INVALID_ARGUMENT, !shape ? "shape is NULL" : "arch is NULL");
  if (report && !validStruct(report, "report", status))
    return status;
  return guarded([&] {
    moejit::store::CubinStore store(cache_dir ? cache_dir : "");
    auto built =
        moejit::unwrapOrThrow(moejit::api::warmShape(shapeOf(*shape), arch, gpu ? gpu : "", store,
                                                     moejit::unwrapOrThrow(
                                                         moejit::api::combineSetting())));
    uint64_t compiled = 0, not_saved = 0;
    std::string why;
    for (const moejit::runtime::BuildResult &r : built) {
      compiled += r.kernel.from_cache ? 0 : 1;
      if (!r.kernel.not_saved.empty()) {
        ++not_saved;
        why = r.kernel.not_saved;
      }
    }
    if (report) {
      report->kernels = built.size();
      report->compiled = compiled;
      report->not_saved = not_saved;
    }
    if (not_saved > 0)
      throw moejit::Error(moejit::ErrorCode::InvalidArgument,
                          std::to_string(not_saved) + " of " + std::to_string(built.size()) +
                              " kernels were compiled but not saved: " + why);
  });
}

namespace {
/// The cache root a C caller names, or the default one.
std::string rootOf(const char *cache_dir) {
  const std::string root = cache_dir && *cache_dir ? cache_dir : moejit::store::defaultRoot();
  if (root.empty())
    throw moejit::Error(moejit::ErrorCode::InvalidArgument,
                        "no cache root: no home folder; name one or set MOEJIT_CACHE_DIR");
  return root;
}
} // namespace

moejit_status moejit_cache_verify(const char *cache_dir, int fix, moejit_cache_report *report) {
  moejit_status status = MOEJIT_OK;
  if (!validStruct(report, "report", status))
    return status;
  return guarded([&] {
    const moejit::store::VerifyReport r = moejit::unwrapOrThrow(
        moejit::store::verifyCache(rootOf(cache_dir), fix != 0, moejit::api::recordCheck()));
    auto removed = [](const std::vector<moejit::store::Finding> &findings) {
      uint64_t n = 0;
      for (const moejit::store::Finding &f : findings)
        n += f.removed ? 1 : 0;
      return n;
    };
    report->entries_ok = r.entries_ok;
    report->corrupt = r.corrupt.size();
    report->refused = r.refused.size();
    report->bad_records = r.records.size();
    report->temporary = r.temps.size();
    report->stale_locks = r.stale_locks.size();
    report->removed = removed(r.corrupt) + removed(r.refused) + removed(r.records) +
                      removed(r.temps) + removed(r.stale_locks);
    report->entry_bytes = 0;
    report->ok = r.ok() ? 1 : 0;
  });
}

moejit_status moejit_cache_prune(const char *cache_dir, uint64_t max_bytes,
                                 moejit_cache_report *report) {
  moejit_status status = MOEJIT_OK;
  if (!validStruct(report, "report", status))
    return status;
  return guarded([&] {
    const moejit::store::PruneReport r =
        moejit::unwrapOrThrow(moejit::store::pruneCache(rootOf(cache_dir), max_bytes));
    *report = MOEJIT_CACHE_REPORT_INIT;
    report->refused = r.refused.size();
    report->temporary = r.temps.size();
    report->removed = r.removed.size() + r.temps.size() + r.locks.size();
    report->entries_ok = r.final_entries;
    report->entry_bytes = r.final_bytes;
    report->ok = r.errors.empty() ? 1 : 0;
  });
}

void moejit_set_log_callback(moejit_log_callback callback, void *user) {
  moejit::setLogCallback(callback, user);
}

} // extern "C"
