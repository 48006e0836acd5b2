// moejit warm: compile every kernel of some shapes into the cubin cache, or
// with --tune autotune them on GPU 0 and save tuning records.
#include "cli.h"

#include "api/warm.h"
#include "common/error.h"
#include "common/settings.h"
#include "driver/driver.h"
#include "nvrtc/compile.h"
#include "runtime/builder.h"
#include "tune/autotune.h"
#include "tune/plan_lookup.h"
#include "tune/record.h"
#include "workload/shape.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>

namespace moejit::cli {

namespace {

/// "13,14" or "10-16" -> bucket numbers.
std::vector<int> parseBuckets(const std::string &text) {
  std::vector<int> out;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    const auto dash = item.find('-');
    const int lo = std::stoi(item.substr(0, dash));
    const int hi = dash == std::string::npos ? lo : std::stoi(item.substr(dash + 1));
    for (int b = lo; b <= hi; ++b)
      out.push_back(b);
  }
  return out;
}

void printTuning(const tune::TuningRecord &r, const std::string &path) {
  std::printf("  tuned in %.1f s: %d configs, %d failed; record %s\n", r.tuning_seconds,
              r.candidates, r.failed, path.c_str());
  std::printf("  %6s %-28s %-28s %9s %9s %7s\n", "T", "gemm1", "gemm2", "ms", "heur. ms", "gain");
  for (const tune::BucketRecord &b : r.buckets) {
    if (b.ms <= 0)
      continue;
    std::printf("  %6lld %-28s %-28s %9.4f %9.4f %6.1f%%\n", static_cast<long long>(b.tokens),
                b.choice.gemm1.suffix().c_str(), b.choice.gemm2.suffix().c_str(), b.ms,
                b.heuristic_ms, b.heuristic_ms > 0 ? 100 * (b.heuristic_ms / b.ms - 1) : 0.0);
  }
}

} // namespace

int runWarm(Args args) {
  std::optional<std::string> arch = args.value("--arch");
  std::string gpu = args.value("--gpu").value_or("");
  store::CubinStore store(args.value("--cache-dir").value_or(""));
  const bool tune = args.flag("--tune");
  // --check, or a no-compile deployment: prove the cache complete, compile
  // nothing.
  const bool check = args.flag("--check") || unwrapOrThrow(settings::readBool("MOEJIT_NO_COMPILE"));
  const std::optional<std::string> buckets = args.value("--buckets");
  const std::vector<MoeShape> shapes = shapesFromArgs(args);
  args.finish();
  if (arch) // before anything is compiled or written
    throwIfError(nvrtc::checkArch(*arch));
  std::optional<driver::Device> device;
  if (tune || !arch) {
    device = unwrapOrThrow(driver::Device::open(0));
    const std::string native = nvrtc::archForComputeCapability(device->cc_major, device->cc_minor);
    if (arch && *arch != native)
      throw Error(ErrorCode::InvalidArgument,
                  "--tune runs on GPU 0, which is " + native + ", not " + *arch);
    arch = native;
    if (gpu.empty())
      gpu = device->name;
  }
  std::printf("cache root: %s\ntarget: %s%s%s, NVRTC %s\n",
              store.root().empty() ? "(none: memory only)" : store.root().c_str(), arch->c_str(),
              gpu.empty() ? "" : " on ", gpu.c_str(), nvrtc::version().c_str());
  if (check && tune)
    throw Error(ErrorCode::InvalidArgument, "--tune compiles: it does not go with --check or "
                                            "MOEJIT_NO_COMPILE=1");
  std::map<std::string, std::vector<std::string>> not_saved; // why -> kernels
  size_t total = 0;
  std::vector<std::string> missing;
  for (const MoeShape &shape : shapes) {
    std::printf("\n%s  (workload %s)\n", shapeText(shape).c_str(),
                workload::workloadId(shape).c_str());
    if (tune) {
      tune::TuneOptions options;
      if (buckets)
        options.buckets = parseBuckets(*buckets);
      options.progress = [](const std::string &line) {
        std::printf("  %s\n", line.c_str());
        std::fflush(stdout);
      };
      const tune::TuningRecord record =
          unwrapOrThrow(tune::autotune(*device, *arch, shape, store, options));
      throwIfError(tune::saveRecord(store.root(), record));
      printTuning(record, tune::recordPath(store.root(), record.workload_id, record.gpu,
                                           record.moejit_version));
    }
    const auto start = std::chrono::steady_clock::now();
    auto built = unwrapOrThrow(api::warmShape(shape, *arch, gpu, store, check));
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("  %-64s %5s %6s %8s %10s\n", "kernel", "regs", "spill", "smem", "compile");
    for (const runtime::BuildResult &r : built) {
      const runtime::BuiltKernel &b = r.kernel;
      if (!r.ok()) { // only a CacheMiss comes back: --check
        std::printf("  %-64s %37s\n", b.spec.name().c_str(), "MISSING");
        missing.push_back(r.error);
        continue;
      }
      std::printf(
          "  %-64s %5d %6d %8d %10s\n", b.spec.name().c_str(), b.entry.meta.registers,
          b.entry.meta.spill_bytes, b.entry.meta.static_shared_bytes + b.spec.dynamicSharedBytes(),
          b.from_cache
              ? "cached"
              : (std::to_string(static_cast<int>(b.entry.meta.compile_ms)) + " ms").c_str());
      if (!b.not_saved.empty())
        not_saved[b.not_saved].push_back(b.spec.name());
    }
    std::printf("  %zu kernels in %.0f ms\n", built.size(), ms);
    total += built.size();
  }
  std::printf("\ncache hits %llu, misses %llu, compiles %llu; saved %llu, not saved %llu\n",
              static_cast<unsigned long long>(store.hits()),
              static_cast<unsigned long long>(store.misses()),
              static_cast<unsigned long long>(store.compiles()),
              static_cast<unsigned long long>(store.saved()),
              static_cast<unsigned long long>(store.unsaved()));
  if (check) {
    for (const std::string &why : missing)
      std::fprintf(stderr, "missing: %s\n", why.c_str());
    if (!missing.empty()) {
      std::fprintf(stderr, "error: %zu of %zu kernels are missing from the cache\n", missing.size(),
                   total);
      return 1;
    }
    std::printf("all %zu kernels are in the cache\n", total);
    return 0;
  }
  // A warm that could not save what it compiled has not warmed the cache.
  for (const auto &[why, kernels] : not_saved)
    std::fprintf(stderr, "error: %zu kernels were not saved: %s\n", kernels.size(), why.c_str());
  return not_saved.empty() ? 0 : 1;
}

} // namespace moejit::cli
