// moejit codegen: print the generated unit of one kernel.
#include "cli.h"

#include "codegen/generate.h"
#include "common/error.h"
#include "runtime/planner.h"

#include <cstdio>

namespace moejit::cli {

int runCodegen(Args args) {
  using codegen::KernelKind;
  const std::string kind_text = args.value("--kernel").value_or("gemm1");
  const MoeShape shape = parseShape(args.value("--shape").value_or(""));
  codegen::KernelSpec spec{KernelKind::Gemm1, shape, {}};
  bool found = false;
  for (KernelKind k :
       {KernelKind::RouteCount, KernelKind::RouteScan, KernelKind::RouteScatter, KernelKind::Gemm1,
        KernelKind::Gemm2, KernelKind::Combine, KernelKind::ReferenceH, KernelKind::ReferenceY})
    if (kind_text == codegen::kindName(k)) {
      spec.kind = k;
      found = true;
    }
  if (!found)
    throw Error(ErrorCode::InvalidArgument, "unknown kernel '" + kind_text + "'");
  const runtime::GemmPlan plan = runtime::heuristicPlan(shape, "sm_80").buckets.back();
  spec.tile = spec.kind == KernelKind::Gemm2 ? plan.gemm2 : plan.gemm1;
  if (auto v = args.value("--bm"))
    spec.tile.bm = std::stoi(*v);
  if (auto v = args.value("--bn"))
    spec.tile.bn = std::stoi(*v);
  if (auto v = args.value("--stages"))
    spec.tile.stages = std::stoi(*v);
  if (args.flag("--wgmma"))
    spec.tile.wgmma = true;
  if (auto v = args.value("--warps")) {
    if (std::sscanf(v->c_str(), "%dx%d", &spec.tile.warps_m, &spec.tile.warps_n) != 2)
      throw Error(ErrorCode::InvalidArgument, "--warps takes MxN, e.g. 2x2");
  }
  args.finish();
  if (spec.usesMma())
    throwIfError(codegen::checkMmaConfig(spec.tile, spec.kind == KernelKind::Gemm1
                                                        ? codegen::GemmKind::Gemm1
                                                        : codegen::GemmKind::Gemm2));
  std::fputs(codegen::generateSource(spec).c_str(), stdout);
  return 0;
}

} // namespace moejit::cli
