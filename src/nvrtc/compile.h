// NVRTC: compiles a generated program (one or more kernels' units) to a
// cubin for a named architecture. Needs no GPU.
#pragma once

#include <llvm/Support/Error.h>

#include <string>
#include <vector>

namespace moejit::nvrtc {

/// ptxas' resource report of one kernel.
struct Resources {
  int registers = 0;
  int spill_bytes = 0; ///< spill stores + spill loads
  int stack_bytes = 0; ///< local-memory stack frame (arrays indexed at run time, calls)
  int static_shared_bytes = 0;
};

struct CompiledProgram {
  std::string cubin; ///< every kernel of the program
  std::string log;   ///< ptxas -v: one section per kernel (kernelLog)
  double compile_ms = 0;
};

/// "sm_90a" for compute capability 9.0 (wgmma and TMA need the a-suffix),
/// "sm_XY" otherwise.
std::string archForComputeCapability(int major, int minor);
/// Accepts "sm_<N>" and "sm_<N>a" spelled strictly (no leading zero), with N
/// at least 80 and among the architectures this NVRTC compiles for
/// (nvrtcGetSupportedArchs), and the a suffix only from sm_90 on.
/// InvalidArgument listing what is allowed otherwise.
llvm::Error checkArch(const std::string &arch);

/// "13.0": the loaded NVRTC's version ("none" without one). Entries and
/// tuning records note it; cache keys hold majorVersion() (library.h).
std::string version();

/// MOEJIT_DEBUG_PIPELINES: kernels built with a bounded mbarrier wait
/// (an invalid value is one warning and taken as off).
bool debugPipelines();

/// The options a compile for `arch` uses, in order: every compile's, then
/// `extra` (a program family's, codegen::familyOptions).
std::vector<std::string> compileOptions(const std::string &arch,
                                        const std::vector<std::string> &extra = {});

/// Compiles `source` (which #includes the embedded templates) with
/// compileOptions(arch, extra_options), named `program_name` in logs. A
/// failure is an error holding the NVRTC log, the options and the path
/// where the source was kept for inspection ($TMPDIR/moejit-<uid>/, the
/// newest 32 kept).
llvm::Expected<CompiledProgram> compile(const std::string &program_name, const std::string &source,
                                        const std::string &arch,
                                        const std::vector<std::string> &extra_options = {});

/// The lines of a program's log that concern `kernel`: its own section
/// (from ptxas' "Compiling entry function '<kernel>'" to the next), and the
/// lines outside every section that name it or name no kernel of
/// `program_kernels` (ptxas prints its advisories before the sections, naming
/// the function). A one-kernel program's log is all its kernel's.
std::string kernelLog(const std::string &log, const std::string &kernel,
                      const std::vector<std::string> &program_kernels);

/// Reads ptxas -v output of one kernel (kernelLog).
Resources parseResources(const std::string &log);

} // namespace moejit::nvrtc
