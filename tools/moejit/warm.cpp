// moejit warm: compile every kernel of some shapes into the cubin cache.
#include "cli.h"

#include "common/error.h"
#include "driver/driver.h"
#include "nvrtc/compile.h"
#include "runtime/builder.h"
#include "workload/shape.h"

#include <chrono>
#include <cstdio>

namespace moejit::cli {

int runWarm(Args args) {
  std::optional<std::string> arch = args.value("--arch");
  store::CubinStore store(args.value("--cache-dir").value_or(""));
  std::vector<MoeShape> shapes;
  for (const std::string &s : args.values("--shape"))
    shapes.push_back(parseShape(s));
  args.finish();
  if (shapes.empty())
    shapes.push_back(seedShape());
  if (!arch) {
    auto device = unwrapOrThrow(driver::Device::open(0));
    arch = nvrtc::archForComputeCapability(device.cc_major, device.cc_minor);
  }
  std::printf("cache root: %s\ntarget: %s, NVRTC %s\n", store.root().c_str(), arch->c_str(),
              nvrtc::version().c_str());
  for (const MoeShape &shape : shapes) {
    const auto start = std::chrono::steady_clock::now();
    const runtime::Plan plan = runtime::heuristicPlan(shape, *arch);
    auto built =
        unwrapOrThrow(runtime::buildKernels(runtime::kernelSpecs(shape, plan), *arch, store));
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("\n%s  (workload %s)\n", shapeText(shape).c_str(),
                workload::workloadId(shape).c_str());
    std::printf("  %-64s %5s %6s %8s %10s\n", "kernel", "regs", "spill", "smem", "compile");
    for (const runtime::BuiltKernel &b : built)
      std::printf(
          "  %-64s %5d %6d %8d %10s\n", b.spec.name().c_str(), b.entry.meta.registers,
          b.entry.meta.spill_bytes, b.entry.meta.static_shared_bytes + b.spec.dynamicSharedBytes(),
          b.from_cache
              ? "cached"
              : (std::to_string(static_cast<int>(b.entry.meta.compile_ms)) + " ms").c_str());
    std::printf("  %zu kernels in %.0f ms\n", built.size(), ms);
  }
  std::printf("\ncache hits %llu, misses %llu, compiles %llu%s\n",
              static_cast<unsigned long long>(store.hits()),
              static_cast<unsigned long long>(store.misses()),
              static_cast<unsigned long long>(store.compiles()),
              store.memoryOnly() ? " (root unwritable: nothing was saved)" : "");
  return 0;
}

} // namespace moejit::cli
