// The CUDA Driver API, loaded at run time with dlopen("libcuda.so.1") so that
// the library, its tools and its CPU tests run where there is no driver.
#pragma once

#include <cuda.h>
#include <llvm/Support/Error.h>

#include <string>

namespace moejit::driver {

// Every driver function moejit uses. The name after the macro expansion of
// cuda.h (cuMemAlloc -> cuMemAlloc_v2) is the symbol looked up.
#define MOEJIT_DRIVER_FUNCTIONS(X)                                                                 \
  X(cuInit)                                                                                        \
  X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetAttribute)                   \
      X(cuDeviceGetName) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuCtxGetCurrent)         \
          X(cuCtxSynchronize) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction)         \
              X(cuFuncSetAttribute) X(cuFuncGetAttribute) X(cuLaunchKernel) X(cuMemAlloc)          \
                  X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemsetD8) X(cuMemsetD8Async)    \
                      X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize)                  \
                          X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiate)      \
                              X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy)             \
                                  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)              \
                                      X(cuEventElapsedTime) X(cuDriverGetVersion)  \
                                          X(cuLaunchKernelEx) X(cuTensorMapEncodeTiled)   \
                                              X(cuCtxGetDevice) X(cuMemGetInfo)

struct Api {
#define MOEJIT_DECLARE(fn) decltype(&::fn) fn = nullptr;
  MOEJIT_DRIVER_FUNCTIONS(MOEJIT_DECLARE)
#undef MOEJIT_DECLARE
};

/// Loads libcuda.so.1 and calls cuInit once; an error (NoDevice) names what
/// is missing.
llvm::Expected<const Api *> api();

/// The loaded API; only valid after api() succeeded.
const Api &loaded();

/// Turns a CUresult into an error naming the call.
llvm::Error check(CUresult rc, const char *what);

/// Number of CUDA devices; 0 (not an error) where there is no driver.
int deviceCount();

/// One device and its primary context (the one the CUDA runtime uses). The
/// context stays retained for the life of the process: kernel sets are
/// shared process-wide and may outlive any Runtime.
struct Device {
  int ordinal = 0;
  CUdevice handle = 0;
  CUcontext context = nullptr;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;

  /// Retains the primary context of device `ordinal`.
  static llvm::Expected<Device> open(int ordinal);
  /// Makes the primary context current on this thread if it isn't, and
  /// leaves it so (tools and tests; the library's calls use ContextScope).
  llvm::Error makeCurrent() const;
};

/// A device's primary context made current for a scope; the thread's
/// previous current context (or none) is put back when the scope ends. A
/// library call must not leave the caller's thread on another context: the
/// CUDA runtime, and so torch, take the current device from it.
class ContextScope {
public:
  static llvm::Expected<ContextScope> enter(CUcontext context);
  ContextScope(ContextScope &&other) noexcept;
  ContextScope &operator=(ContextScope &&) = delete;
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;
  ~ContextScope();

private:
  ContextScope() = default;
  CUcontext previous_ = nullptr;
  bool restore_ = false; ///< the scope switched contexts
};

} // namespace moejit::driver

/// Evaluates a driver call; on failure returns the error from the enclosing
/// function (which returns llvm::Error or llvm::Expected).
#define MOEJIT_CU(call)                                                                            \
  do {                                                                                             \
    if (llvm::Error moejit_err_ = ::moejit::driver::check(::moejit::driver::loaded().call, #call)) \
      return moejit_err_;                                                                          \
  } while (0)
