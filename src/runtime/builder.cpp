#include "runtime/builder.h"

#include "codegen/embedded_templates.h"
#include "common/cpus.h"
#include "common/error.h"
#include "common/log.h"
#include "common/settings.h"
#include "nvrtc/compile.h"
#include "nvrtc/library.h"
#include "runtime/launch_params.h"
#include "runtime/program_groups.h"
#include "workload/shape.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/ThreadPool.h>

#include <algorithm>
#include <chrono>
#include <mutex>

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
          nvrtc::compileOptions(arch, codegen::familyOptions(spec))};
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

/// What the builder knows of a spec before it compiles.
struct Lookup {
  std::string key; ///< over the kernel's own unit (entryKey)
  store::EntryName name;
};

/// Compiles and publishes groups of misses. One instance serves every
/// worker thread: a run() touches only its own members' results, and the
/// store is thread-safe.
class ProgramBuild {
public:
  ProgramBuild(llvm::ArrayRef<KernelSpec> specs, llvm::ArrayRef<Lookup> lookups,
               std::vector<BuildResult> &results, const Arch &arch, store::CubinStore &store)
      : specs_(specs), lookups_(lookups), results_(results), arch_(arch), store_(store) {}

  /// Builds `members` (indices of specs), one NVRTC program where it can.
  void run(std::vector<size_t> members) {
    // Processes warming the same shapes take turns per entry: the second
    // look under the lock finds what the holder published, so each entry
    // is compiled once. Locks are taken in key order, so two processes
    // that group the kernels differently never wait on each other; held
    // until after publish; not held at all (and not needed) in a
    // read-only root.
    std::sort(members.begin(), members.end(),
              [&](size_t a, size_t b) { return lookups_[a].key < lookups_[b].key; });
    std::vector<store::FileLock> locks;
    std::vector<size_t> left;
    // One bound on the waits for the whole program: a holder that never
    // lets go of many keys costs it one wait, not one per key.
    const auto until = std::chrono::steady_clock::now() + store_.keyLockWait();
    for (size_t i : members) {
      locks.push_back(store_.lockKey(lookups_[i].name, until));
      if (std::optional<store::Entry> hit = store_.loadAgain(lookups_[i].name)) {
        results_[i].kernel.entry = std::move(*hit);
        results_[i].kernel.from_cache = true;
      } else {
        left.push_back(i);
      }
    }
    std::sort(left.begin(), left.end());
    if (left.empty())
      return;
    // What failed in a program of several is tried alone, so that an error
    // names one kernel and one kernel's trouble costs no other its build.
    for (size_t i : compile(left))
      compile({i});
  }

private:
  /// Compiles `members` as one program and finishes each. Returns the
  /// members to try alone, with nothing of theirs set: every one when NVRTC
  /// failed on a program of several, those refused (refusedHopperBuild)
  /// in one. Alone, every outcome is final and nothing is returned.
  std::vector<size_t> compile(const std::vector<size_t> &members) {
    std::vector<KernelSpec> specs;
    std::vector<std::string> names;
    for (size_t i : members) {
      specs.push_back(specs_[i]);
      names.push_back(specs_[i].name());
    }
    const bool alone = members.size() == 1;
    const std::string program =
        alone ? names.front() : fmt::format("{}_and_{}_more", names.front(), names.size() - 1);
    logger().info("compiling {} for {}", program, arch_.name());
    // One family per program (groupIntoPrograms), so the first member's
    // options are every member's.
    auto compiled = nvrtc::compile(program, codegen::generateProgram(specs), arch_.name(),
                                   codegen::familyOptions(specs.front()));
    if (!compiled) {
      if (!alone) {
        logger().info("compile of {} failed; its {} kernels again one by one: {}", program,
                      names.size(), errorMessage(compiled.takeError()));
        return members;
      }
      BuildResult &r = results_[members.front()];
      r.code = ErrorCode::CompileFailed;
      r.error = errorMessage(compiled.takeError());
      logger().info("compile of {} failed", program);
      return {};
    }
    std::vector<size_t> again;
    for (size_t n = 0; n < members.size(); ++n)
      if (!finish(members[n], *compiled, nvrtc::kernelLog(compiled->log, names[n], names),
                  members.size()))
        again.push_back(members[n]);
    return again;
  }

  /// One kernel of a compiled program: checked, then published. False,
  /// with nothing set, when a kernel of a program of several is refused.
  bool finish(size_t i, const nvrtc::CompiledProgram &compiled, const std::string &log,
              size_t program_kernels) {
    const KernelSpec &spec = specs_[i];
    BuildResult &r = results_[i];
    const nvrtc::Resources resources = nvrtc::parseResources(log);
    logger().info("compiled {} in {:.0f} ms ({} registers, {} spill bytes){}", spec.name(),
                  compiled.compile_ms, resources.registers, resources.spill_bytes,
                  program_kernels > 1
                      ? fmt::format(", one program of {} kernels", program_kernels)
                      : std::string());
    if (resources.spill_bytes > 0)
      warnOnce("spill:" + spec.name(), fmt::format("{} spills {} bytes to local memory",
                                                   spec.name(), resources.spill_bytes));
    if (std::string why = refusedHopperBuild(spec, resources, log, nvrtc::debugPipelines());
        !why.empty()) {
      if (program_kernels > 1)
        return false;
      store_.countCompile();
      r.code = ErrorCode::CompileFailed;
      r.error = std::move(why);
      return true;
    }
    store_.countCompile();
    const Lookup &l = lookups_[i];
    store::Entry &e = r.kernel.entry;
    // The program's cubin under each of its kernels' keys: a kernel's code
    // in it is what it is alone (codegen::programFamily).
    e.cubin = compiled.cubin;
    e.meta = {l.key,
              spec.name(),
              arch_.name(),
              nvrtc::version(),
              resources.registers,
              resources.spill_bytes,
              resources.static_shared_bytes,
              compiled.compile_ms};
    r.kernel.program_kernels = static_cast<int>(program_kernels);
    store::Published published = store_.publish(l.name, e);
    e.lease = std::move(published.lease);
    r.kernel.not_saved = std::move(published.not_saved);
    return true;
  }

  llvm::ArrayRef<KernelSpec> specs_;
  llvm::ArrayRef<Lookup> lookups_;
  std::vector<BuildResult> &results_;
  const Arch &arch_;
  store::CubinStore &store_;
};
} // namespace

llvm::Expected<unsigned> compileThreads(const BuildOptions &options) {
  if (options.workers)
    return options.workers;
  llvm::Expected<unsigned> setting = settings::readCount("MOEJIT_COMPILE_THREADS");
  if (!setting || *setting)
    return setting;
  return usableCpus();
}

std::vector<BuildResult> buildEach(llvm::ArrayRef<KernelSpec> specs, const Arch &arch,
                                   store::CubinStore &store, const BuildOptions &options) {
  std::vector<BuildResult> results(specs.size());
  size_t done = 0;
  std::mutex done_mutex;
  auto report = [&](size_t i) {
    if (!options.on_done)
      return;
    std::lock_guard<std::mutex> lock(done_mutex);
    options.on_done(results[i], ++done, specs.size());
  };
  // Everything found in the store (or that cannot be built) first; then
  // the misses.
  std::vector<Lookup> lookups(specs.size());
  std::vector<size_t> misses;
  // A kernel asked for twice is built once (its key's lock is not taken
  // twice): (index, index of its first).
  std::vector<std::pair<size_t, size_t>> repeats;
  // An entry built by another NVRTC minor version is rebuilt where this
  // process has an NVRTC; without one (a warmed, no-compile deployment) any
  // build of the key will do.
  const std::string nvrtc_version = nvrtc::version();
  for (size_t i = 0; i < specs.size(); ++i) {
    const KernelSpec &spec = specs[i];
    BuildResult &r = results[i];
    r.kernel.spec = spec;
    if (std::string why = unbuildable(spec, arch); !why.empty()) {
      r.code = ErrorCode::InvalidArgument;
      r.error = std::move(why);
      report(i);
      continue;
    }
    Lookup &l = lookups[i];
    const std::string id = workload::workloadId(spec.shape);
    l.key = entryKey(spec, codegen::generateSource(spec), arch.name());
    l.name = {id, l.key, spec.name(), arch.name(),
              nvrtc_version == "none" ? std::string() : nvrtc_version};
    if (std::optional<store::Entry> hit = store.load(l.name)) {
      r.kernel.entry = std::move(*hit);
      r.kernel.from_cache = true;
      report(i);
    } else if (options.no_compile) {
      r.code = ErrorCode::CacheMiss;
      r.error = fmt::format("no-compile mode: kernel {} of workload {} ({}) for {} is not in the "
                            "cache {} (key {}); warm the cache with `moejit warm`",
                            spec.name(), id, workload::canonicalText(spec.shape), arch.name(),
                            store.root(), l.key);
      report(i);
    } else if (auto first = llvm::find_if(
                   misses, [&](size_t m) { return lookups[m].key == l.key; });
               first != misses.end()) {
      repeats.emplace_back(i, *first);
    } else {
      misses.push_back(i);
    }
  }
  if (misses.empty())
    return results;
  if (llvm::Expected<unsigned> workers = compileThreads(options)) {
    // NVRTC programs are independent: compile them side by side, the
    // longest first (results keep the order of `specs`).
    std::vector<KernelSpec> missed;
    for (size_t i : misses)
      missed.push_back(specs[i]);
    llvm::ThreadPool pool(llvm::hardware_concurrency(*workers));
    ProgramBuild build(specs, lookups, results, arch, store);
    for (std::vector<size_t> &program : groupIntoPrograms(missed, *workers)) {
      for (size_t &n : program)
        n = misses[n];
      pool.async([&build, &report, program] {
        build.run(program);
        for (size_t i : program)
          report(i);
      });
    }
    pool.wait();
  } else {
    const std::string why = errorMessage(workers.takeError());
    for (size_t i : misses) {
      results[i].code = ErrorCode::InvalidArgument;
      results[i].error = why;
      report(i);
    }
  }
  for (auto [i, first] : repeats) {
    results[i] = results[first];
    results[i].kernel.spec = specs[i];
    report(i);
  }
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
