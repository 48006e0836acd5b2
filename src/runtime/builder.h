// Turns kernel specs into cubins: generate the unit, look it up in the cubin
// store, compile the misses with NVRTC in parallel and publish them.
#pragma once

#include "codegen/generate.h"
#include "runtime/planner.h"
#include "store/cubin_store.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/Error.h>

#include <string>
#include <vector>

namespace moejit::runtime {

struct BuiltKernel {
  codegen::KernelSpec spec;
  store::Entry entry;
  bool from_cache = false;
};

/// sha256 over everything that changes the binary: the generated source
/// (kernel name, shape, config), arch, NVRTC version, generator version,
/// template hash and compile options. No paths.
std::string entryKey(const codegen::KernelSpec &spec, const std::string &source,
                     const std::string &arch);

/// Every kernel `run` needs for this plan, each distinct config once.
std::vector<codegen::KernelSpec> kernelSpecs(const MoeShape &shape, const Plan &plan);

/// Fetches or compiles every spec, in the order given.
llvm::Expected<std::vector<BuiltKernel>> buildKernels(llvm::ArrayRef<codegen::KernelSpec> specs,
                                                      const std::string &arch,
                                                      store::CubinStore &store);

} // namespace moejit::runtime
