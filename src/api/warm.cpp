#include "api/warm.h"

#include "common/error.h"
#include "nvrtc/compile.h"
#include "tune/plan_lookup.h"
#include "tune/record.h"
#include "workload/shape.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/Path.h>

#include <iterator>

namespace moejit::api {

std::vector<runtime::Plan> plansToWarm(const MoeShape &shape, const Arch &arch,
                                       const std::string &gpu, const std::string &root) {
  std::vector<runtime::Plan> plans{runtime::heuristicPlan(shape, arch)};
  if (!gpu.empty()) {
    plans.push_back(tune::choosePlan(shape, arch, gpu, root));
    return plans;
  }
  const std::string id = workload::workloadId(shape);
  for (const tune::TuningRecord &r : tune::shippedRecords())
    if (r.workload_id == id && r.arch == arch.name()) {
      if (auto plan = tune::planFromRecord(r, shape, arch))
        plans.push_back(*plan);
      else
        llvm::consumeError(plan.takeError());
    }
  return plans;
}

llvm::Expected<std::vector<std::vector<runtime::BuildResult>>>
warmShapes(llvm::ArrayRef<MoeShape> shapes, const std::string &arch_name, const std::string &gpu,
           store::CubinStore &store, Combine combine, bool check_only,
           const runtime::KernelDone &on_kernel) {
  if (llvm::Error e = nvrtc::checkArch(arch_name))
    return e;
  for (const MoeShape &shape : shapes)
    if (llvm::Error e = workload::validateShape(shape))
      return e;
  llvm::Expected<Arch> parsed = Arch::parse(arch_name);
  if (!parsed)
    return parsed.takeError();
  const Arch &arch = *parsed;
  // Every shape's kernels in one build, so that its misses group into NVRTC
  // programs across shapes and keep every thread busy to the end.
  std::vector<codegen::KernelSpec> specs;
  std::vector<size_t> ends;
  for (const MoeShape &shape : shapes) {
    for (codegen::KernelSpec &spec :
         runtime::kernelSpecs(shape, plansToWarm(shape, arch, gpu, store.root()), combine))
      specs.push_back(std::move(spec));
    ends.push_back(specs.size());
  }
  runtime::BuildOptions options;
  options.no_compile = check_only;
  options.on_done = on_kernel;
  std::vector<runtime::BuildResult> results = runtime::buildEach(specs, arch, store, options);
  for (const runtime::BuildResult &r : results)
    if (!r.ok() && r.code != ErrorCode::CacheMiss)
      return makeError(r.code, "{}", r.error);
  std::vector<std::vector<runtime::BuildResult>> per_shape;
  size_t begin = 0;
  for (size_t end : ends) {
    per_shape.emplace_back(std::make_move_iterator(results.begin() + begin),
                           std::make_move_iterator(results.begin() + end));
    begin = end;
  }
  return per_shape;
}

llvm::Expected<std::vector<runtime::BuildResult>>
warmShape(const MoeShape &shape, const std::string &arch_name, const std::string &gpu,
          store::CubinStore &store, Combine combine, bool check_only,
          const runtime::KernelDone &on_kernel) {
  auto all = warmShapes({shape}, arch_name, gpu, store, combine, check_only, on_kernel);
  if (!all)
    return all.takeError();
  return std::move(all->front());
}

store::RecordCheck recordCheck() {
  return [](const safefs::Dir &dir, llvm::ArrayRef<std::string> folders,
            llvm::StringRef name) -> std::string {
    auto record = tune::readRecordFile(dir, name);
    if (!record)
      return errorMessage(record.takeError());
    if (!*record)
      return std::string();
    // The runtime looks a record up by its workload, GPU and version, so
    // one filed elsewhere (copied to another GPU's folder) is never used:
    // verify said it was clean.
    const std::string own =
        tune::recordPath("", (*record)->workload_id, (*record)->gpu, (*record)->moejit_version);
    llvm::SmallString<256> here;
    for (const std::string &folder : folders)
      llvm::sys::path::append(here, folder);
    llvm::sys::path::append(here, name);
    return here == own ? std::string()
                       : "filed in the wrong place: its contents belong at " + own +
                             ", where the runtime looks for them";
  };
}

} // namespace moejit::api
