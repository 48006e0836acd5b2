// NVRTC, opened at run time with dlopen as libcuda is, so that a process
// whose cache is warmed runs with no NVRTC at all and one that brings its
// own (the CUDA wheels of a Python process) uses that. Looked for once per
// process, in this order:
//   1. MOEJIT_NVRTC_LIBRARY (a path): that library and nothing else;
//   2. an NVRTC of this major version the process has already loaded;
//   3. libnvrtc.so.<major> on the loader's path (LD_LIBRARY_PATH, ldconfig);
//   4. /usr/local/cuda/lib64/libnvrtc.so.<major>.
// A missing NVRTC is an error (CompileFailed) only where something must be
// compiled.
#pragma once

#include <llvm/Support/Error.h>
#include <nvrtc.h>

#include <string>

namespace moejit::nvrtc {

/// The NVRTC major version moejit is built for (its headers' CUDA major):
/// part of every cache key, known without NVRTC.
int majorVersion();

// Every NVRTC function moejit uses.
#define MOEJIT_NVRTC_FUNCTIONS(X)                                                                  \
  X(nvrtcVersion)                                                                                  \
  X(nvrtcGetErrorString)                                                                           \
  X(nvrtcGetNumSupportedArchs) X(nvrtcGetSupportedArchs) X(nvrtcCreateProgram)                     \
      X(nvrtcCompileProgram) X(nvrtcDestroyProgram) X(nvrtcGetProgramLogSize)                      \
          X(nvrtcGetProgramLog) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN)

struct Library {
#define MOEJIT_NVRTC_DECLARE(fn) decltype(&::fn) fn = nullptr;
  MOEJIT_NVRTC_FUNCTIONS(MOEJIT_NVRTC_DECLARE)
#undef MOEJIT_NVRTC_DECLARE
  std::string path;    ///< where it was found
  std::string version; ///< "13.0"
};

/// The NVRTC of this process; CompileFailed saying where it looked when
/// there is none.
llvm::Expected<const Library *> library();

} // namespace moejit::nvrtc
