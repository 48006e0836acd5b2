#include "codegen/generate.h"

#include "codegen/embedded_templates.h"
#include "moe_launch_abi.cuh"
#include "workload/shape.h"

#include <llvm/ADT/STLExtras.h>
#include <spdlog/fmt/fmt.h>

namespace moejit::codegen {

namespace {

struct KindInfo {
  const char *name;         // in kernel names
  const char *header;       // template that holds it
  const char *function;     // device entry in namespace moejit_dev
  int threads;              // block size (fixed kinds; the GEMMs' come from the tile)
  const char *threads_name; // the moejit_abi constant the device code assumes
  bool chains_itself = false; // waits for the kernel before it itself (griddep_wait)
};

KindInfo info(KernelKind kind) {
  switch (kind) {
  case KernelKind::RouteCount:
    return {"route_count", "kernels/moe_route.cuh", "route_count<S>", moejit_abi::kCountThreads,
            "kCountThreads"};
  case KernelKind::RouteScan:
    return {"route_scan", "kernels/moe_route.cuh", "route_scan<S>", moejit_abi::kScanThreads,
            "kScanThreads"};
  case KernelKind::RouteScatter:
    return {"route_scatter", "kernels/moe_route.cuh", "route_scatter<S>",
            moejit_abi::kScatterThreads, "kScatterThreads"};
  case KernelKind::RouteBlock: // its block size depends on the experts (KernelSpec::threads)
    return {"route_block", "kernels/moe_route.cuh", "route_block<S>", 0,
            "32 * route_block_warps(S::E)"};
  case KernelKind::RouteWide:
    return {"route_wide", "kernels/moe_route.cuh", "route_wide<S>", moejit_abi::kRouteWideThreads,
            "kRouteWideThreads"};
  case KernelKind::Gemm1:
    return {"gemm1", nullptr, nullptr, 0, nullptr};
  case KernelKind::Gemm2:
    return {"gemm2", nullptr, nullptr, 0, nullptr};
  case KernelKind::Combine:
    return {"combine", "kernels/moe_combine.cuh", "combine<S>", moejit_abi::kCombineThreads,
            "kCombineThreads", true};
  case KernelKind::ReferenceH:
    return {"reference_h", "kernels/moe_reference.cuh", "reference_h<S>",
            moejit_abi::kReferenceThreads, "kReferenceThreads"};
  case KernelKind::ReferenceY:
    return {"reference_y", "kernels/moe_reference.cuh", "reference_y<S>",
            moejit_abi::kReferenceThreads, "kReferenceThreads"};
  }
  return {"unknown", nullptr, nullptr, 0, nullptr};
}

const char *dtypeConstant(DType d) {
  switch (d) {
  case DType::BF16:
    return "kBF16";
  case DType::FP16:
    return "kFP16";
  case DType::FP32:
    return "kFP32";
  }
  return "";
}

/// Every kernel is launched with programmatic dependent launch: it waits
/// for the kernel before it in the stream before touching memory, then lets
/// the next one start its prologue. Those that know what they may read
/// before the wait place it themselves (the persistent GEMMs, the combine:
/// KindInfo::chains_itself).
constexpr const char *kChainedPrologue = "griddep_wait(); griddep_launch_dependents();";

bool isGemm(KernelKind kind) { return kind == KernelKind::Gemm1 || kind == KernelKind::Gemm2; }

} // namespace

const char *kindName(KernelKind kind) { return info(kind).name; }

bool KernelSpec::usesMma() const { return isGemm(kind) && shape.dtype != DType::FP32; }

bool KernelSpec::addsToY() const { return kind == KernelKind::Gemm2 && add_to_y; }

bool KernelSpec::blocksPartial() const {
  return kind == KernelKind::Gemm2 && usesMma() && tile.ws && tile.staged && !tile.swap &&
         !add_to_y && moejit_abi::blocks_partial(tile.bn);
}

std::string KernelSpec::name() const {
  std::string n = fmt::format("moe_{}_{}_k{}_h{}_i{}_e{}", kindName(kind), dtype_name(shape.dtype),
                              shape.k, shape.hidden, shape.intermediate, shape.experts);
  if (usesMma())
    n += "_" + tile.suffix();
  else if (isGemm(kind))
    n += "_simt";
  if (addsToY())
    n += "_addy";
  return n;
}

int KernelSpec::threads() const {
  if (isGemm(kind))
    return usesMma() ? mmaThreads(tile) : kSimtThreads;
  if (kind == KernelKind::RouteBlock)
    return 32 * moejit_abi::route_block_warps(shape.experts);
  return info(kind).threads;
}

int KernelSpec::dynamicSharedBytes() const {
  if (!usesMma())
    return 0;
  return mmaSharedBytes(tile, kind == KernelKind::Gemm1 ? GemmKind::Gemm1 : GemmKind::Gemm2);
}

namespace {

/// One kernel's unit: the template it includes, and what follows the include.
struct Unit {
  std::string header;
  std::string body;
};

Unit unitOf(const KernelSpec &spec) {
  const MoeShape &s = spec.shape;
  std::string header, body;
  if (isGemm(spec.kind)) {
    const bool gemm1 = spec.kind == KernelKind::Gemm1;
    if (spec.usesMma() && spec.tile.swap) {
      const TileConfig &t = spec.tile;
      header = "kernels/moe_gemm_swap.cuh";
      body =
          fmt::format("using Kernel = SwapGemm<S, SwapTile<{}, {}>, {}>;\n", t.bm, t.stages, gemm1);
    } else if (spec.usesMma() && spec.tile.ws) {
      const TileConfig &t = spec.tile;
      header = "kernels/moe_gemm_ws.cuh";
      body = fmt::format("using Kernel = WsGemm<S, WsTile<{}, {}, {}, {}>, {}>;\n", t.bn, t.stages,
                         t.staged, t.inflight, gemm1);
      // The combine reads partial in the layout the host says GEMM2 wrote.
      body += fmt::format("static_assert(Kernel::BLOCKS_PARTIAL == {}, \"host and device disagree "
                          "on partial's layout\");\n",
                          spec.blocksPartial());
    } else if (spec.usesMma() && spec.tile.wgmma) {
      const TileConfig &t = spec.tile;
      header = "kernels/moe_gemm_wgmma.cuh";
      body = fmt::format("using Kernel = WgmmaGemm<S, WgmmaTile<{}, {}, {}, {}>, {}>;\n", t.bm,
                         t.bn, t.stages, t.inflight, gemm1);
    } else if (spec.usesMma()) {
      const TileConfig &t = spec.tile;
      header = "kernels/moe_gemm_mma.cuh";
      body = fmt::format("using Kernel = MmaGemm<S, MmaTile<{}, {}, {}, {}, {}>, {}>;\n", t.bm,
                         t.bn, t.stages, t.warps_m, t.warps_n, gemm1);
    } else {
      header = "kernels/moe_gemm_simt.cuh";
      body = fmt::format("using Kernel = SimtGemm<S, {}>;\n", gemm1);
    }
    // The host launches with its own copy of these numbers: make a mismatch
    // a compile error rather than a wrong launch.
    body += fmt::format("static_assert(Kernel::THREADS == {} && Kernel::SMEM_BYTES == {},\n"
                        "              \"host and device disagree on the launch shape\");\n",
                        spec.threads(), spec.dynamicSharedBytes());
    if (spec.tile.ws && spec.usesMma())
      // Persistent, one CTA per SM, with the weights' tensor map (GEMM2
      // also the map of its A rows, h in sorted order); the kernel chains
      // its own launch (griddep) after its prologue.
      body += fmt::format("extern \"C\" __global__ void __launch_bounds__({}, 1) "
                          "{}(const LaunchParams p, const __grid_constant__ TensorMap weights{}) "
                          "{{ Kernel::run(p, &weights, {}); }}\n",
                          spec.threads(), spec.name(),
                          gemm1 ? "" : ", const __grid_constant__ TensorMap rows",
                          gemm1 ? "nullptr" : "&rows");
    else
      body += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) "
                          "{}(const LaunchParams p) {{ {} Kernel::run(p); }}\n",
                          spec.threads(), spec.name(), kChainedPrologue);
  } else {
    const KindInfo k = info(spec.kind);
    header = k.header;
    // As for the GEMMs: the block size launched is the one the device code
    // was written for, or the unit does not compile.
    body = fmt::format("static_assert({} == {}, \"host and device disagree on the launch "
                       "shape\");\n",
                       k.threads_name, spec.threads());
    body += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) "
                        "{}(const LaunchParams p) {{ {} {}(p); }}\n",
                        spec.threads(), spec.name(), k.chains_itself ? "" : kChainedPrologue,
                        k.function);
  }
  return {header, fmt::format("using namespace moejit_dev;\n"
                              "using S = Shape<{}, {}, {}, {}, {}{}>;\n",
                              s.k, s.hidden, s.intermediate, s.experts, dtypeConstant(s.dtype),
                              spec.addsToY() ? ", true" : "") +
                      body};
}

} // namespace

std::string generateSource(const KernelSpec &spec) {
  const Unit unit = unitOf(spec);
  return fmt::format("// moejit generated unit (generator v{}): {}\n#include \"{}\"\n{}",
                     kGeneratorVersion, spec.name(), unit.header, unit.body);
}

namespace {
bool isRouting(KernelKind kind) {
  switch (kind) {
  case KernelKind::RouteCount:
  case KernelKind::RouteScan:
  case KernelKind::RouteScatter:
  case KernelKind::RouteBlock:
  case KernelKind::RouteWide:
    return true;
  default:
    return false;
  }
}
} // namespace

std::string programFamily(const KernelSpec &spec) {
  // The GEMMs on tensor cores declare their dynamic shared memory, each
  // template with its own alignment; the other kernels declare none. The
  // routing kernels compile with options of their own (familyOptions).
  if (spec.usesMma())
    return unitOf(spec).header;
  return isRouting(spec.kind) ? "routing" : std::string();
}

std::vector<std::string> familyOptions(const KernelSpec &spec) {
  // Routing is latency-bound loads and shared-memory atomics, which ptxas'
  // -O3 schedules no better than --Ofast-compile=min (A/B within noise,
  // NOTES.md session 33) for a third of the compile time (690 -> 465 ms).
  // The templates keep min's SASS as -O3's: global loads and stores are
  // explicit (__ldg, __stcg), loads in flight come from `#pragma unroll`.
  if (isRouting(spec.kind))
    return {"--Ofast-compile=min"};
  return {};
}

std::string generateProgram(llvm::ArrayRef<KernelSpec> specs) {
  if (specs.size() == 1)
    return generateSource(specs.front());
  std::string out =
      fmt::format("// moejit generated program (generator v{}): {} kernels\n", kGeneratorVersion,
                  specs.size());
  std::vector<Unit> units;
  std::vector<std::string> headers;
  for (const KernelSpec &spec : specs) {
    units.push_back(unitOf(spec));
    if (llvm::find(headers, units.back().header) == headers.end())
      headers.push_back(units.back().header);
  }
  for (const std::string &h : headers)
    out += fmt::format("#include \"{}\"\n", h);
  // Each unit in a namespace of its own, so that their S and Kernel aliases
  // do not meet; the kernels are extern "C", named as when alone.
  for (size_t i = 0; i < units.size(); ++i)
    out += fmt::format("namespace moejit_unit{} {{\n// {}\n{}}}\n", i, specs[i].name(),
                       units[i].body);
  return out;
}

const std::string &templatesHash() {
  static const std::string hash = [] {
    std::string all;
    for (const EmbeddedTemplate &t : embeddedTemplates()) {
      all += t.name;
      all.push_back('\0');
      all += t.text;
      all.push_back('\0');
    }
    return workload::sha256Hex(all);
  }();
  return hash;
}

} // namespace moejit::codegen
