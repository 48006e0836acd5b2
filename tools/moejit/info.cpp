// moejit info: what this machine offers moejit.
#include "cli.h"

#include "common/error.h"
#include "driver/driver.h"
#include "nvrtc/compile.h"
#include "store/cubin_store.h"

#include <cstdio>

namespace moejit::cli {

int runInfo(Args args) {
  args.finish();
  const std::string root = store::defaultRoot();
  std::printf("moejit %s\nnvrtc: %s\ncache root: %s\n", MOEJIT_VERSION, nvrtc::version().c_str(),
              root.empty() ? "(none: no home folder, kernels are kept in memory only)"
                           : root.c_str());
  const int count = driver::deviceCount();
  std::printf("gpus: %d\n", count);
  if (count == 0) {
    auto api = driver::api();
    std::printf("  (%s)\n",
                api ? "the driver sees no device" : errorMessage(api.takeError()).c_str());
  }
  for (int i = 0; i < count; ++i) {
    auto d = driver::Device::open(i);
    if (!d) {
      std::printf("  %d: %s\n", i, errorMessage(d.takeError()).c_str());
      continue;
    }
    std::printf("  %d: %s, compute capability %d.%d, %d SMs, target %s\n", i, d->name.c_str(),
                d->cc_major, d->cc_minor, d->sm_count,
                nvrtc::archForComputeCapability(d->cc_major, d->cc_minor).c_str());
  }
  return 0;
}

} // namespace moejit::cli
