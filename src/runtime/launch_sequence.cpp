#include "runtime/launch_sequence.h"

#include <algorithm>

namespace moejit::runtime {

using codegen::KernelKind;

namespace {
// The fp32 path has one fixed SIMT tile whatever the plan says.
int gemmRows(const MoeShape &shape, const codegen::TileConfig &t) {
  return shape.dtype == DType::FP32 ? codegen::kSimtTile : t.bm;
}
int gemmCols(const MoeShape &shape, const codegen::TileConfig &t) {
  return shape.dtype == DType::FP32 ? codegen::kSimtTile : t.bn;
}
unsigned ceilDiv(int64_t a, int64_t b) { return static_cast<unsigned>((a + b - 1) / b); }
} // namespace

int tileRows(const MoeShape &shape, const GemmPlan &plan) {
  return std::max(gemmRows(shape, plan.gemm1), gemmRows(shape, plan.gemm2));
}

namespace {
/// The caller's pointers and T; scratch left null.
LaunchParams inputParams(const MoeArgs &a) {
  LaunchParams p{};
  p.x = a.x;
  p.gate_up = a.gate_up_proj;
  p.down = a.down_proj;
  p.top_k_index = a.top_k_index;
  p.top_k_weights = a.top_k_weights;
  p.y = a.y;
  p.tokens = static_cast<int32_t>(a.tokens);
  p.expert_map = a.expert_map;
  p.expert_map_size = static_cast<int32_t>(a.expert_map_size);
  p.index_bytes = a.index_type == IndexType::Int64 ? 8 : 4;
  p.weights_in_model_dtype = a.weight_type == WeightType::ModelDType ? 1 : 0;
  return p;
}
} // namespace

LaunchParams launchParams(const MoeArgs &a, const WorkspaceLayout &w, const LaunchGeometry &geo) {
  char *ws = static_cast<char *>(a.workspace);
  LaunchParams p = inputParams(a);
  p.block_counts = reinterpret_cast<int32_t *>(ws + w.block_counts);
  p.expert_offsets = reinterpret_cast<int32_t *>(ws + w.expert_offsets);
  p.tiles = reinterpret_cast<int32_t *>(ws + w.tiles);
  p.num_tiles = reinterpret_cast<int32_t *>(ws + w.num_tiles);
  p.sorted_ids = reinterpret_cast<int32_t *>(ws + w.sorted_ids);
  p.h = ws + w.h;
  p.partial = ws + w.partial;
  p.route_blocks = geo.route_blocks;
  p.tile_m = geo.tile_m;
  p.max_tiles = static_cast<int32_t>(geo.max_tiles);
  return p;
}

int64_t gemmGridRows(const MoeShape &shape, const GemmPlan &plan, const LaunchGeometry &geo) {
  const int split = geo.tile_m / std::min(gemmRows(shape, plan.gemm1), gemmRows(shape, plan.gemm2));
  return geo.max_tiles * split;
}

llvm::Error enqueueRouting(const RoutingKernels &routing, const LaunchGeometry &geo,
                           const LaunchParams &p, CUstream stream) {
  if (geo.route_blocks == 1 && routing.small)
    return launch(*routing.small, 1, 1, p, stream);
  if (llvm::Error e = launch(*routing.count, geo.route_blocks, 1, p, stream))
    return e;
  if (llvm::Error e = launch(*routing.scan, 1, 1, p, stream))
    return e;
  return launch(*routing.scatter, geo.route_blocks, 1, p, stream);
}

llvm::Error enqueueGemm(const MoeShape &shape, KernelKind kind, const LoadedKernel &gemm,
                        const codegen::TileConfig &tile, const LaunchGeometry &geo,
                        const LaunchParams &p, CUstream stream) {
  // Each routing tile of tile_m rows splits into tile_m / bm blocks.
  const int split = geo.tile_m / gemmRows(shape, tile);
  const int columns = kind == KernelKind::Gemm1 ? shape.intermediate : shape.hidden;
  return launch(gemm, ceilDiv(columns, gemmCols(shape, tile)),
                static_cast<unsigned>(geo.max_tiles * split), p, stream);
}

llvm::Error enqueueCombine(const MoeShape &shape, const LoadedKernel &combine,
                           const LaunchParams &p, CUstream stream) {
  const int vec = 16 / dtype_bytes(shape.dtype);
  return launch(combine, static_cast<unsigned>(p.tokens),
                ceilDiv(shape.hidden, int64_t{vec} * kCombineThreads), p, stream);
}

llvm::Error enqueueReference(const MoeShape &shape, const LoadedKernel &reference_h,
                             const LoadedKernel &reference_y, const MoeArgs &args, void *h_ref,
                             void *y_ref, CUstream stream) {
  LaunchParams p = inputParams(args);
  p.h = h_ref;
  p.partial = y_ref;
  // One warp per output element of each.
  const int64_t warps[] = {args.tokens * shape.k * shape.intermediate, args.tokens * shape.hidden};
  const LoadedKernel *kernels[] = {&reference_h, &reference_y};
  for (int i = 0; i < 2; ++i) {
    const int64_t blocks = (warps[i] * 32 + kernels[i]->threads - 1) / kernels[i]->threads;
    if (llvm::Error e = launch(*kernels[i], static_cast<unsigned>(blocks), 1, p, stream))
      return e;
  }
  return llvm::Error::success();
}

} // namespace moejit::runtime
