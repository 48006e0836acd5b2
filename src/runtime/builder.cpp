#include "runtime/builder.h"

#include "codegen/embedded_templates.h"
#include "common/error.h"
#include "nvrtc/compile.h"
#include "workload/shape.h"

#include <llvm/Support/ThreadPool.h>

#include <algorithm>
#include <mutex>

namespace moejit::runtime {

using codegen::KernelKind;
using codegen::KernelSpec;

std::string entryKey(const KernelSpec &spec, const std::string &source, const std::string &arch) {
  std::string text = fmt::format("moejit-entry v{}\nkernel={}\narch={}\nnvrtc={}\ngenerator={}\n"
                                 "templates={}\nsource={}\noptions=",
                                 store::kFormatVersion, spec.name(), arch, nvrtc::version(),
                                 codegen::kGeneratorVersion, codegen::templatesHash(),
                                 workload::sha256Hex(source));
  for (const std::string &o : nvrtc::compileOptions(arch))
    text += o + " ";
  return workload::sha256Hex(text);
}

std::vector<KernelSpec> kernelSpecs(const MoeShape &shape, const Plan &plan) {
  std::vector<KernelSpec> specs;
  for (KernelKind k : {KernelKind::RouteCount, KernelKind::RouteScan, KernelKind::RouteScatter,
                       KernelKind::Combine})
    specs.push_back({k, shape, {}});
  auto add = [&](KernelKind kind, const codegen::TileConfig &tile) {
    KernelSpec spec{kind, shape, tile};
    if (std::none_of(specs.begin(), specs.end(),
                     [&](const KernelSpec &s) { return s.name() == spec.name(); }))
      specs.push_back(spec);
  };
  for (const GemmPlan &g : plan.buckets) {
    add(KernelKind::Gemm1, g.gemm1);
    add(KernelKind::Gemm2, g.gemm2);
  }
  return specs;
}

llvm::Expected<std::vector<BuiltKernel>>
buildKernels(llvm::ArrayRef<KernelSpec> specs, const std::string &arch, store::CubinStore &store) {
  if (llvm::Error e = nvrtc::checkArch(arch))
    return e;
  for (const KernelSpec &spec : specs)
    if (spec.usesMma() && spec.tile.wgmma && arch != "sm_90a")
      return makeError(ErrorCode::InvalidArgument,
                       "{} uses wgmma, which only sm_90a has (target {})", spec.name(), arch);
  std::vector<BuiltKernel> built(specs.size());
  std::vector<std::string> errors(specs.size());
  const std::string id = workload::workloadId(specs.front().shape);
  auto buildOne = [&](size_t i) {
    const KernelSpec &spec = specs[i];
    const std::string source = codegen::generateSource(spec);
    const std::string key = entryKey(spec, source, arch);
    built[i].spec = spec;
    if (std::optional<store::Entry> hit = store.load(id, key)) {
      built[i].entry = std::move(*hit);
      built[i].from_cache = true;
      return;
    }
    auto compiled = nvrtc::compile(spec.name(), source, arch);
    if (!compiled) {
      errors[i] = errorMessage(compiled.takeError());
      return;
    }
    store::Entry &e = built[i].entry;
    e.cubin = std::move(compiled->cubin);
    e.meta = {spec.name(),
              arch,
              compiled->resources.registers,
              compiled->resources.spill_bytes,
              compiled->resources.static_shared_bytes,
              compiled->compile_ms};
    store.publish(id, key, e);
  };
  {
    // NVRTC programs are independent; compile them side by side.
    llvm::ThreadPool pool(llvm::hardware_concurrency());
    for (size_t i = 0; i < specs.size(); ++i)
      pool.async([&buildOne, i] { buildOne(i); });
    pool.wait();
  }
  for (const std::string &e : errors)
    if (!e.empty())
      return makeError(ErrorCode::CompileFailed, "{}", e);
  return built;
}

} // namespace moejit::runtime
