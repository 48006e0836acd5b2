// Turns kernel specs into cubins: generate the unit, look it up in the cubin
// store, compile the misses with NVRTC in parallel and publish them.
#pragma once

#include "codegen/generate.h"
#include "nvrtc/compile.h"
#include "runtime/planner.h"
#include "store/cubin_store.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/Error.h>

#include <functional>
#include <string>
#include <vector>

namespace moejit::runtime {

struct BuiltKernel {
  codegen::KernelSpec spec;
  store::Entry entry;
  bool from_cache = false;
  /// Kernels in the NVRTC program this one was compiled in (compile_ms is
  /// the program's); 1 when alone or from the cache.
  int program_kernels = 1;
  /// Compiled but kept in memory only: why it could not be saved.
  std::string not_saved;
};

/// sha256 over everything that changes the binary: the generated source
/// (kernel name, shape, config), arch, NVRTC version, generator version,
/// template hash and compile options. No paths.
std::string entryKey(const codegen::KernelSpec &spec, const std::string &source,
                     const std::string &arch);

/// Everything an entry key is made of, spelled out so that tests can change
/// one input at a time. None of it is a path.
struct EntryKeyInputs {
  std::string kernel;        ///< kernel name (spells shape and tile config)
  std::string arch;          ///< with its suffix, e.g. "sm_90a"
  std::string nvrtc_version; ///< nvrtc::majorVersion(): known without NVRTC
  int generator_version = 0; ///< codegen::kGeneratorVersion
  std::string templates_hash;
  std::string source_hash; ///< sha256 of the generated unit
  std::vector<std::string> options; ///< nvrtc::compileOptions with the family's
};

/// The real inputs for `spec` compiled from `source` for `arch`.
EntryKeyInputs entryKeyInputs(const codegen::KernelSpec &spec, const std::string &source,
                              const std::string &arch);
/// sha256 of the inputs (with the cache format version).
std::string keyFromInputs(const EntryKeyInputs &inputs);

/// Why a compiled Hopper tensor-core kernel (wgmma) is refused although
/// NVRTC compiled it, or "" if it is not: ptxas serialised its wgmma (its
/// log says so), or it uses local memory (spills or a stack frame), unless
/// `debug_build` (MOEJIT_DEBUG_PIPELINES, whose clock checks may use some).
/// Both would make the kernel far slower than its config promises.
std::string refusedHopperBuild(const codegen::KernelSpec &spec, const nvrtc::Resources &resources,
                               const std::string &log, bool debug_build);

/// The kernels every plan of `shape` uses: routing (route_block where the
/// shape allows it) and, unless `combine` is Fast, the combine pass.
std::vector<codegen::KernelSpec> fixedSpecs(const MoeShape &shape,
                                            Combine combine = Combine::Deterministic);
/// Every kernel `run` needs for this plan, each distinct config once (under
/// Combine::Fast the GEMM2s add into y).
std::vector<codegen::KernelSpec> kernelSpecs(const MoeShape &shape, const Plan &plan,
                                             Combine combine = Combine::Deterministic);
/// The same for several plans together (each kernel once).
std::vector<codegen::KernelSpec> kernelSpecs(const MoeShape &shape, llvm::ArrayRef<Plan> plans,
                                             Combine combine = Combine::Deterministic);

/// The outcome of one spec: `error` is empty on success.
struct BuildResult {
  BuiltKernel kernel;
  ErrorCode code = ErrorCode::Internal;
  std::string error;
  bool ok() const { return error.empty(); }
};

/// Called once per spec as soon as it is built, fetched or refused, one call
/// at a time (from the build's worker threads): `done` of `total` finished.
using KernelDone = std::function<void(const BuildResult &, size_t done, size_t total)>;

struct BuildOptions {
  /// A spec missing from the store is an ErrorCode::CacheMiss naming the
  /// workload, kernel and key; nothing is compiled.
  bool no_compile = false;
  KernelDone on_done; ///< progress of a long build (warm); may be empty
  /// Compiling threads (and so how the misses group into NVRTC programs,
  /// groupIntoPrograms); 0: compileThreads().
  unsigned workers = 0;
};

/// `options.workers`, else MOEJIT_COMPILE_THREADS, else the CPUs this
/// process may use (usableCpus: affinity and cgroup quota).
/// InvalidArgument for a bad MOEJIT_COMPILE_THREADS.
llvm::Expected<unsigned> compileThreads(const BuildOptions &options);

/// Fetches or compiles every spec (in parallel; the misses grouped into
/// NVRTC programs by groupIntoPrograms, each kernel published under its own
/// key with its program's cubin), each with its own outcome:
/// the autotuner records failed candidates instead of stopping.
std::vector<BuildResult> buildEach(llvm::ArrayRef<codegen::KernelSpec> specs, const Arch &arch,
                                   store::CubinStore &store, const BuildOptions &options = {});

/// Fetches or compiles every spec, in the order given; the first failure is
/// the error.
llvm::Expected<std::vector<BuiltKernel>> buildKernels(llvm::ArrayRef<codegen::KernelSpec> specs,
                                                      const Arch &arch, store::CubinStore &store,
                                                      const BuildOptions &options = {});

} // namespace moejit::runtime
