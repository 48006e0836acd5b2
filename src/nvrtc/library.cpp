#include "nvrtc/library.h"

#include "common/error.h"
#include "common/settings.h"

#include <cuda.h>
#include <dlfcn.h>

#include <vector>

namespace moejit::nvrtc {

namespace {

struct Loaded {
  Library library;
  std::string error; // empty when usable
};

/// Resolves every function from `handle`; empty, or what is missing.
std::string resolve(void *handle, Library &l) {
#define MOEJIT_NVRTC_RESOLVE(fn)                                                                   \
  l.fn = reinterpret_cast<decltype(&::fn)>(dlsym(handle, #fn));                                    \
  if (!l.fn)                                                                                       \
    return "it lacks " #fn;
  MOEJIT_NVRTC_FUNCTIONS(MOEJIT_NVRTC_RESOLVE)
#undef MOEJIT_NVRTC_RESOLVE
  int major = 0, minor = 0;
  if (l.nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return "nvrtcVersion failed";
  if (major != majorVersion())
    return fmt::format("it is NVRTC {}.{}; moejit is built for {}", major, minor, majorVersion());
  l.version = fmt::format("{}.{}", major, minor);
  return {};
}

Loaded load() {
  Loaded l;
  const std::string soname = fmt::format("libnvrtc.so.{}", majorVersion());
  struct Candidate {
    std::string name;
    int flags;
  };
  std::vector<Candidate> candidates;
  auto configured = settings::read("MOEJIT_NVRTC_LIBRARY");
  if (!configured) {
    l.error = errorMessage(configured.takeError());
    return l;
  }
  if (!configured->empty()) {
    candidates.push_back({*configured, RTLD_NOW | RTLD_LOCAL});
  } else {
    candidates = {{soname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD},
                  {soname, RTLD_NOW | RTLD_LOCAL},
                  {"/usr/local/cuda/lib64/" + soname, RTLD_NOW | RTLD_LOCAL}};
  }
  std::string tried;
  for (const Candidate &c : candidates) {
    void *handle = dlopen(c.name.c_str(), c.flags);
    if (!handle) {
      if (!(c.flags & RTLD_NOLOAD))
        tried += fmt::format("\n  {}: {}", c.name, dlerror());
      continue;
    }
    Library candidate;
    if (std::string why = resolve(handle, candidate); !why.empty()) {
      tried += fmt::format("\n  {}: {}", c.name, why);
      dlclose(handle);
      continue;
    }
    candidate.path = c.name;
    l.library = candidate;
    return l;
  }
  l.error = fmt::format("no NVRTC {} could be loaded (MOEJIT_NVRTC_LIBRARY names one); tried:{}",
                        majorVersion(), tried);
  return l;
}

const Loaded &state() {
  static const Loaded instance = load();
  return instance;
}

} // namespace

int majorVersion() { return CUDA_VERSION / 1000; }

llvm::Expected<const Library *> library() {
  const Loaded &l = state();
  if (!l.error.empty())
    return makeError(ErrorCode::CompileFailed, "cannot compile: {}", l.error);
  return &l.library;
}

} // namespace moejit::nvrtc
