#include "runtime/builder.h"

#include "codegen/embedded_templates.h"
#include "common/error.h"
#include "common/log.h"
#include "nvrtc/compile.h"
#include "nvrtc/library.h"
#include "runtime/launch_params.h"
#include "workload/shape.h"

#include <llvm/Support/ThreadPool.h>

#include <algorithm>
#include <mutex>
#include <numeric>

namespace moejit::runtime {

using codegen::KernelKind;
using codegen::KernelSpec;

EntryKeyInputs entryKeyInputs(const KernelSpec &spec, const std::string &source,
                              const std::string &arch) {
  return {spec.name(),
          arch,
          std::to_string(nvrtc::majorVersion()),
          codegen::kGeneratorVersion,
          codegen::templatesHash(),
          workload::sha256Hex(source),
          nvrtc::compileOptions(arch)};
}

std::string keyFromInputs(const EntryKeyInputs &in) {
  std::string text = fmt::format("moejit-entry v{}\nkernel={}\narch={}\nnvrtc={}\ngenerator={}\n"
                                 "templates={}\nsource={}\noptions=",
                                 store::kFormatVersion, in.kernel, in.arch, in.nvrtc_version,
                                 in.generator_version, in.templates_hash, in.source_hash);
  for (const std::string &o : in.options)
    text += o + " ";
  return workload::sha256Hex(text);
}

std::string entryKey(const KernelSpec &spec, const std::string &source, const std::string &arch) {
  return keyFromInputs(entryKeyInputs(spec, source, arch));
}

std::vector<KernelSpec> kernelSpecs(const MoeShape &shape, const Plan &plan, Combine combine) {
  return kernelSpecs(shape, llvm::ArrayRef<Plan>(plan), combine);
}

std::vector<KernelSpec> fixedSpecs(const MoeShape &shape, Combine combine) {
  std::vector<KernelSpec> specs;
  // Routing: its one-block and grid-wide kernels keep per-expert tables in
  // shared memory, up to kRouteBlockMaxExperts; past it, three launches.
  specs.push_back({KernelKind::RouteCount, shape, {}});
  if (shape.experts <= kRouteBlockMaxExperts) {
    specs.push_back({KernelKind::RouteBlock, shape, {}});
    specs.push_back({KernelKind::RouteWide, shape, {}});
  } else {
    specs.push_back({KernelKind::RouteScan, shape, {}});
    specs.push_back({KernelKind::RouteScatter, shape, {}});
  }
  if (combine != Combine::Fast)
    specs.push_back({KernelKind::Combine, shape, {}});
  return specs;
}

std::vector<KernelSpec> kernelSpecs(const MoeShape &shape, llvm::ArrayRef<Plan> plans,
                                    Combine combine) {
  std::vector<KernelSpec> specs = fixedSpecs(shape, combine);
  auto add = [&](KernelKind kind, const codegen::TileConfig &tile) {
    KernelSpec spec{kind, shape, tile, kind == KernelKind::Gemm2 && combine == Combine::Fast};
    if (std::none_of(specs.begin(), specs.end(),
                     [&](const KernelSpec &s) { return s.name() == spec.name(); }))
      specs.push_back(spec);
  };
  for (const Plan &plan : plans)
    for (const GemmPlan &g : plan.buckets) {
      add(KernelKind::Gemm1, g.gemm1);
      add(KernelKind::Gemm2, g.gemm2);
    }
  return specs;
}

std::string refusedHopperBuild(const KernelSpec &spec, const nvrtc::Resources &resources,
                               const std::string &log, bool debug_build) {
  if (!spec.usesMma() || !spec.tile.wgmma)
    return {};
  const size_t serialized = log.find("wgmma.mma_async instructions are serialized");
  if (serialized != std::string::npos) {
    const size_t begin = log.rfind('\n', serialized) + 1, end = log.find('\n', serialized);
    return fmt::format("{}: ptxas serialised its wgmma ({})", spec.name(),
                       log.substr(begin, end == std::string::npos ? end : end - begin));
  }
  if (!debug_build && (resources.spill_bytes > 0 || resources.stack_bytes > 0))
    return fmt::format("{} uses local memory ({} bytes of spills, a {}-byte stack frame)",
                       spec.name(), resources.spill_bytes, resources.stack_bytes);
  return {};
}

namespace {
/// Why `spec` cannot be built for `arch` at all (before any compile).
std::string unbuildable(const KernelSpec &spec, const Arch &arch) {
  if (llvm::Error e = nvrtc::checkArch(arch.name()))
    return errorMessage(std::move(e));
  if (spec.usesMma() && spec.tile.wgmma && !arch.hasWgmma())
    return fmt::format("{} uses wgmma, which only sm_90a has (target {})", spec.name(),
                       arch.name());
  return {};
}

/// A rough rank of a kernel's NVRTC time, so that the longest compiles
/// start first. One core, the seed shape's 12 kernels: persistent
/// warp-specialised GEMMs 190-240 ms, the other GEMMs and the routing
/// scatter 120-220, the rest 50-130; in plan order two workers finished
/// ~60 ms after longest first (NOTES.md, session 22).
int compileRank(const KernelSpec &spec) {
  switch (spec.kind) {
  case KernelKind::Gemm1:
  case KernelKind::Gemm2:
    return spec.tile.ws && !spec.tile.swap ? 3 : 2;
  case KernelKind::RouteScatter:
  case KernelKind::RouteWide: // ~400 ms on one core (session 24)
    return 2;
  case KernelKind::RouteBlock:
    return 1;
  default:
    return 0;
  }
}
} // namespace

std::vector<BuildResult> buildEach(llvm::ArrayRef<KernelSpec> specs, const Arch &arch,
                                   store::CubinStore &store, const BuildOptions &options) {
  std::vector<BuildResult> results(specs.size());
  std::mutex done_mutex;
  size_t done = 0;
  auto report = [&](size_t i) {
    if (!options.on_done)
      return;
    std::lock_guard<std::mutex> lock(done_mutex);
    options.on_done(results[i], ++done, specs.size());
  };
  auto buildOne = [&](size_t i) {
    const KernelSpec &spec = specs[i];
    BuildResult &r = results[i];
    r.kernel.spec = spec;
    if (std::string why = unbuildable(spec, arch); !why.empty()) {
      r.code = ErrorCode::InvalidArgument;
      r.error = std::move(why);
      return;
    }
    const std::string id = workload::workloadId(spec.shape);
    const std::string source = codegen::generateSource(spec);
    const std::string key = entryKey(spec, source, arch.name());
    // An entry built by another NVRTC minor version is rebuilt where this
    // process has an NVRTC; without one (a warmed, no-compile deployment)
    // any build of the key will do.
    const std::string nvrtc_version = nvrtc::version();
    const store::EntryName name{id, key, spec.name(), arch.name(),
                                nvrtc_version == "none" ? std::string() : nvrtc_version};
    if (std::optional<store::Entry> hit = store.load(name)) {
      r.kernel.entry = std::move(*hit);
      r.kernel.from_cache = true;
      return;
    }
    if (options.no_compile) {
      r.code = ErrorCode::CacheMiss;
      r.error = fmt::format("no-compile mode: kernel {} of workload {} ({}) for {} is not in the "
                            "cache {} (key {}); warm the cache with `moejit warm`",
                            spec.name(), id, workload::canonicalText(spec.shape), arch.name(),
                            store.root(), key);
      return;
    }
    // Processes warming the same shapes take turns per entry: the second
    // look under the lock finds what the holder published, so each entry is
    // compiled once. Held until after publish; not held at all (and not
    // needed) in a read-only root.
    store::FileLock compile_lock = store.lockKey(name);
    if (std::optional<store::Entry> hit = store.loadAgain(name)) {
      r.kernel.entry = std::move(*hit);
      r.kernel.from_cache = true;
      return;
    }
    logger().info("compiling {} for {}", spec.name(), arch.name());
    auto compiled = nvrtc::compile(spec.name(), source, arch.name());
    store.countCompile();
    if (!compiled) {
      r.code = ErrorCode::CompileFailed;
      r.error = errorMessage(compiled.takeError());
      logger().info("compile of {} failed", spec.name());
      return;
    }
    logger().info("compiled {} in {:.0f} ms ({} registers, {} spill bytes)", spec.name(),
                  compiled->compile_ms, compiled->resources.registers,
                  compiled->resources.spill_bytes);
    if (std::string why = refusedHopperBuild(spec, compiled->resources, compiled->log,
                                             nvrtc::debugPipelines());
        !why.empty()) {
      r.code = ErrorCode::CompileFailed;
      r.error = std::move(why);
      return;
    }
    store::Entry &e = r.kernel.entry;
    e.cubin = std::move(compiled->cubin);
    e.meta = {key,
              spec.name(),
              arch.name(),
              nvrtc_version,
              compiled->resources.registers,
              compiled->resources.spill_bytes,
              compiled->resources.static_shared_bytes,
              compiled->compile_ms};
    store::Published published = store.publish(name, e);
    e.lease = std::move(published.lease);
    r.kernel.not_saved = std::move(published.not_saved);
  };
  // NVRTC programs are independent; compile them side by side, the
  // longest first (results keep the order of `specs`).
  std::vector<size_t> order(specs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return compileRank(specs[a]) > compileRank(specs[b]);
  });
  llvm::ThreadPool pool(llvm::hardware_concurrency());
  for (size_t i : order)
    pool.async([&buildOne, &report, i] {
      buildOne(i);
      report(i);
    });
  pool.wait();
  return results;
}

llvm::Expected<std::vector<BuiltKernel>> buildKernels(llvm::ArrayRef<KernelSpec> specs,
                                                      const Arch &arch, store::CubinStore &store,
                                                      const BuildOptions &options) {
  // Unbuildable specs fail before anything is compiled.
  for (const KernelSpec &spec : specs)
    if (std::string why = unbuildable(spec, arch); !why.empty())
      return makeError(ErrorCode::InvalidArgument, "{}", why);
  std::vector<BuiltKernel> built;
  for (BuildResult &r : buildEach(specs, arch, store, options)) {
    if (!r.ok())
      return makeError(r.code, "{}", r.error);
    built.push_back(std::move(r.kernel));
  }
  return built;
}

} // namespace moejit::runtime
