#include "driver/driver.h"

#include "common/error.h"
#include "common/log.h"

#include <dlfcn.h>

namespace moejit::driver {

namespace {
#define MOEJIT_STR(x) #x
#define MOEJIT_XSTR(x) MOEJIT_STR(x)

struct Loaded {
  Api api;
  std::string error; // empty when usable
};

Loaded load() {
  Loaded l;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    l.error = fmt::format("the CUDA driver (libcuda.so.1) could not be "
                          "loaded: {}",
                          dlerror());
    return l;
  }
#define MOEJIT_RESOLVE(fn)                                                                         \
  l.api.fn = reinterpret_cast<decltype(&::fn)>(dlsym(lib, MOEJIT_XSTR(fn)));                       \
  if (!l.api.fn) {                                                                                 \
    l.error = "libcuda.so.1 lacks " MOEJIT_XSTR(fn) " (driver too old?)";                          \
    return l;                                                                                      \
  }
  MOEJIT_DRIVER_FUNCTIONS(MOEJIT_RESOLVE)
#undef MOEJIT_RESOLVE
  if (CUresult rc = l.api.cuInit(0); rc != CUDA_SUCCESS)
    l.error = fmt::format("cuInit failed with CUresult {}: no usable GPU", static_cast<int>(rc));
  return l;
}

const Loaded &state() {
  static const Loaded instance = load();
  return instance;
}
} // namespace

llvm::Expected<const Api *> api() {
  const Loaded &l = state();
  if (!l.error.empty())
    return makeError(ErrorCode::NoDevice, "{}", l.error);
  return &l.api;
}

const Api &loaded() { return state().api; }

llvm::Error check(CUresult rc, const char *what) {
  if (rc == CUDA_SUCCESS)
    return llvm::Error::success();
  const char *text = nullptr;
  if (state().api.cuGetErrorString)
    state().api.cuGetErrorString(rc, &text);
  return makeError(ErrorCode::DriverError, "{} failed: {} ({})", what,
                   text ? text : "unknown error", static_cast<int>(rc));
}

int deviceCount() {
  auto a = api();
  if (!a) {
    llvm::consumeError(a.takeError());
    return 0;
  }
  int count = 0;
  if ((*a)->cuDeviceGetCount(&count) != CUDA_SUCCESS)
    return 0;
  return count;
}

llvm::Expected<Device> Device::open(int ordinal) {
  if (auto a = api(); !a)
    return a.takeError();
  const int count = deviceCount();
  if (ordinal < 0 || ordinal >= count)
    return makeError(ErrorCode::NoDevice, "CUDA device {} does not exist ({} visible)", ordinal,
                     count);
  Device d;
  d.ordinal = ordinal;
  MOEJIT_CU(cuDeviceGet(&d.handle, ordinal));
  char name[256] = {};
  MOEJIT_CU(cuDeviceGetName(name, sizeof(name), d.handle));
  d.name = name;
  MOEJIT_CU(
      cuDeviceGetAttribute(&d.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d.handle));
  MOEJIT_CU(
      cuDeviceGetAttribute(&d.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d.handle));
  MOEJIT_CU(cuDeviceGetAttribute(&d.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d.handle));
  MOEJIT_CU(cuDevicePrimaryCtxRetain(&d.context, d.handle));
  return d;
}

llvm::Error Device::makeCurrent() const {
  CUcontext current = nullptr;
  MOEJIT_CU(cuCtxGetCurrent(&current));
  if (current != context)
    MOEJIT_CU(cuCtxSetCurrent(context));
  return llvm::Error::success();
}

llvm::Expected<ContextScope> ContextScope::enter(CUcontext context) {
  ContextScope scope;
  MOEJIT_CU(cuCtxGetCurrent(&scope.previous_));
  if (scope.previous_ != context) {
    MOEJIT_CU(cuCtxSetCurrent(context));
    scope.restore_ = true;
  }
  return scope;
}

ContextScope::ContextScope(ContextScope &&other) noexcept
    : previous_(other.previous_), restore_(other.restore_) {
  other.restore_ = false;
}

ContextScope::~ContextScope() {
  if (!restore_)
    return;
  // Setting a context the caller made current cannot fail short of a
  // destroyed context, which was the caller's to keep alive.
  if (llvm::Error e = check(loaded().cuCtxSetCurrent(previous_), "cuCtxSetCurrent"))
    logger().warn("could not restore the caller's CUDA context: {}", errorMessage(std::move(e)));
}

} // namespace moejit::driver
