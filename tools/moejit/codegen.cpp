// moejit codegen: print the generated unit of one kernel.
#include "cli.h"

#include "codegen/generate.h"
#include "common/error.h"
#include "runtime/planner.h"

#include <cstdio>
#include <optional>

namespace moejit::cli {

namespace {

using codegen::KernelKind;

constexpr KernelKind kKinds[] = {
    KernelKind::RouteCount, KernelKind::RouteScan, KernelKind::RouteScatter,
    KernelKind::RouteBlock, KernelKind::RouteWide, KernelKind::Gemm1,
    KernelKind::Gemm2,      KernelKind::Combine,   KernelKind::ReferenceH,
    KernelKind::ReferenceY};

struct CodegenArgs {
  std::string kind = "gemm1", shape, warps, config;
  std::optional<int> bm, bn, stages;
  bool wgmma = false;
};

/// "2x2" -> {2, 2}.
std::pair<int, int> parseWarps(const std::string &text) {
  const auto x = text.find('x');
  if (x == std::string::npos)
    throw UsageError("warps '" + text + "' is not MxN, e.g. 2x2");
  return {static_cast<int>(parseInteger(text.substr(0, x), "warps M", 1, 64)),
          static_cast<int>(parseInteger(text.substr(x + 1), "warps N", 1, 64))};
}

int runCodegen(const CodegenArgs &a) {
  const MoeShape shape = a.shape.empty() ? seedShape() : parseShape(a.shape); // (no --shape)
  codegen::KernelSpec spec{KernelKind::Gemm1, shape, {}};
  for (KernelKind k : kKinds)
    if (a.kind == codegen::kindName(k))
      spec.kind = k;
  const bool tile_given = a.bm || a.bn || a.stages || a.wgmma || !a.warps.empty() ||
                          !a.config.empty();
  if (tile_given && !spec.usesMma())
    throw UsageError("--kernel " + a.kind + " of a " + dtype_name(shape.dtype) +
                     " shape has no tile: --bm, --bn, --stages, --wgmma, --warps and --config "
                     "are for the gemm1 and gemm2 kernels of bf16 and fp16 shapes");
  const runtime::GemmPlan plan = runtime::heuristicPlan(shape, "sm_80").buckets.back();
  spec.tile = spec.kind == KernelKind::Gemm2 ? plan.gemm2 : plan.gemm1;
  if (a.bm)
    spec.tile.bm = *a.bm;
  if (a.bn)
    spec.tile.bn = *a.bn;
  if (a.stages)
    spec.tile.stages = *a.stages;
  if (a.wgmma)
    spec.tile.wgmma = true;
  if (!a.warps.empty())
    std::tie(spec.tile.warps_m, spec.tile.warps_n) = parseWarps(a.warps);
  if (!a.config.empty()) {
    if (a.bm || a.bn || a.stages)
      throw UsageError("--config is a whole tile config: give it without --bm, --bn, --stages");
    spec.tile = unwrapOrThrow(codegen::parseTileConfig(a.config));
  }
  if (spec.usesMma())
    throwIfError(codegen::checkMmaConfig(spec.tile, spec.kind == KernelKind::Gemm1
                                                        ? codegen::GemmKind::Gemm1
                                                        : codegen::GemmKind::Gemm2));
  std::fputs(codegen::generateSource(spec).c_str(), stdout);
  return 0;
}

} // namespace

Command addCodegen(CLI::App &app) {
  auto a = std::make_shared<CodegenArgs>();
  CLI::App *cmd = app.add_subcommand(
      "codegen", "Print the generated source of one kernel (tile: the heuristic's for the largest "
                 "bucket unless given; the tile rules are checked).");
  std::vector<std::string> kinds;
  for (KernelKind k : kKinds)
    kinds.push_back(codegen::kindName(k));
  cmd->add_option("--kernel", a->kind, "kernel kind (default gemm1)")
      ->type_name("KIND")
      ->check(CLI::IsMember(kinds));
  cmd->add_option("--shape", a->shape, "the shape (default: the seed shape)")
      ->type_name("S")
      ->check(checkedBy([](const std::string &s) { parseShape(s); }, ""));
  // Wide bounds: the tile rules (checkMmaConfig) say what fits.
  for (auto [name, field, help] : {std::tuple{"--bm", &a->bm, "rows of a block tile"},
                                   std::tuple{"--bn", &a->bn, "columns of a block tile"},
                                   std::tuple{"--stages", &a->stages, "pipeline stages"}})
    cmd->add_option(name, *field, help)
        ->type_name("N")
        ->transform(integerText())
        ->check(CLI::Range(1, codegen::kMaxTileSide));
  CLI::Option *wgmma = cmd->add_flag("--wgmma", a->wgmma, "use sm_90a warpgroup MMA");
  CLI::Option *warps = cmd->add_option("--warps", a->warps, "warp grid of a block, e.g. 2x2")
                           ->type_name("MxN")
                           ->check(checkedBy([](const std::string &s) { parseWarps(s); }, ""))
                           ->excludes(wgmma);
  cmd->add_option("--config", a->config,
                  "a whole tile config as kernel names spell it, e.g. bm128_bn128_s4_ws")
      ->type_name("TILE")
      ->check(checkedBy(
          [](const std::string &s) { unwrapOrThrow(codegen::parseTileConfig(s)); }, ""))
      ->excludes(wgmma)
      ->excludes(warps);
  return {cmd, [a] { return runCodegen(*a); }};
}

} // namespace moejit::cli
