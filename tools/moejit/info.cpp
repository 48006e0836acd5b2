// moejit info: what this machine offers moejit.
#include "cli.h"

#include "common/error.h"
#include "driver/driver.h"
#include "nvrtc/compile.h"
#include "store/cubin_store.h"

#include <llvm/Support/JSON.h>

#include <cstdio>

namespace moejit::cli {

namespace {

int runInfo(bool json) {
  const std::string root = store::defaultRoot();
  const int count = driver::deviceCount();
  std::string no_gpu; // why there is none
  if (count == 0) {
    auto api = driver::api();
    no_gpu = api ? "the driver sees no device" : errorMessage(api.takeError());
  }
  if (!json) {
    std::printf(
        "moejit %s\nnvrtc: %s\ncache root: %s\n", moejit::version(), nvrtc::version().c_str(),
        root.empty() ? "(none: no home folder, kernels are kept in memory only)" : root.c_str());
    std::printf("gpus: %d\n", count);
    if (count == 0)
      std::printf("  (%s)\n", no_gpu.c_str());
  }
  llvm::json::Array gpus;
  for (int i = 0; i < count; ++i) {
    auto d = driver::Device::open(i);
    if (!d) {
      const std::string why = errorMessage(d.takeError());
      if (!json)
        std::printf("  %d: %s\n", i, why.c_str());
      gpus.push_back(llvm::json::Object{{"index", i}, {"error", why}});
      continue;
    }
    const std::string arch = nvrtc::archForComputeCapability(d->cc_major, d->cc_minor);
    if (!json)
      std::printf("  %d: %s, compute capability %d.%d, %d SMs, target %s\n", i, d->name.c_str(),
                  d->cc_major, d->cc_minor, d->sm_count, arch.c_str());
    gpus.push_back(llvm::json::Object{
        {"index", i},
        {"name", d->name},
        {"compute_capability", std::to_string(d->cc_major) + "." + std::to_string(d->cc_minor)},
        {"sm_count", d->sm_count},
        {"arch", arch}});
  }
  if (json) {
    llvm::json::Object doc{{"moejit_version", moejit::version()},
                           {"nvrtc_version", nvrtc::version()},
                           {"cache_root", root.empty() ? llvm::json::Value(nullptr) : root},
                           {"gpus", std::move(gpus)}};
    if (count == 0)
      doc["no_gpu"] = no_gpu;
    printJson(std::move(doc));
  }
  return 0;
}

} // namespace

Command addInfo(CLI::App &app) {
  auto json = std::make_shared<bool>(false);
  CLI::App *cmd =
      app.add_subcommand("info", "Print the moejit and NVRTC versions, cache root and GPUs.");
  cmd->add_flag("--json", *json, "print a JSON document on stdout instead of text");
  return {cmd, [json] { return runInfo(*json); }};
}

} // namespace moejit::cli
