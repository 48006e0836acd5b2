#include "runtime/launch_sequence.h"

#include "common/error.h"
#include "runtime/tensor_maps.h"

#include <llvm/ADT/STLExtras.h>

#include <algorithm>
#include <cstdint>

namespace moejit::runtime {

using codegen::KernelKind;

namespace {
constexpr size_t kAlign = 256;
// The GEMMs read a tile record with one 16-byte load; the workspace is
// 16-byte aligned (checkRunArgs), so every offset must be too.
static_assert(kAlign % alignof(moejit_abi::TileRecord) == 0, "workspace offsets align tile records");
size_t alignUp(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }
} // namespace

LaunchGeometry launchGeometry(const MoeShape &shape, int64_t tokens, int tile_m) {
  LaunchGeometry g;
  g.assignments = tokens * shape.k;
  g.route_blocks = static_cast<int>((g.assignments + kRouteChunk - 1) / kRouteChunk);
  g.tile_m = tile_m;
  g.max_tiles = g.assignments / tile_m + std::min<int64_t>(shape.experts, g.assignments);
  return g;
}

namespace {
/// Elements of partial a call needs (see workspaceLayout).
size_t partialElements(const MoeShape &shape, const LaunchGeometry &g, Combine combine,
                       const codegen::TileConfig *gemm2) {
  if (combine == Combine::Fast)
    return 0;
  const auto rows = static_cast<size_t>(moejit_abi::partial_rows(g.assignments));
  if (!gemm2)
    return rows * moejit_abi::partial_columns(shape.hidden);
  const codegen::KernelSpec spec{KernelKind::Gemm2, shape, *gemm2};
  if (!spec.blocksPartial())
    return static_cast<size_t>(g.assignments) * shape.hidden;
  return rows * static_cast<size_t>(moejit_abi::partial_block_columns(shape.hidden, gemm2->bn));
}
} // namespace

WorkspaceLayout workspaceLayout(const MoeShape &shape, const LaunchGeometry &g, Combine combine,
                                const codegen::TileConfig *gemm2) {
  WorkspaceLayout w{};
  size_t at = 0;
  auto take = [&](size_t &field, size_t bytes) {
    field = at;
    at += alignUp(bytes);
  };
  const size_t elem = dtype_bytes(shape.dtype);
  take(w.block_counts, sizeof(int32_t) * shape.experts * g.route_blocks);
  take(w.expert_offsets, sizeof(int32_t) * (shape.experts + 1));
  take(w.tiles, sizeof(moejit_abi::TileRecord) * g.max_tiles);
  take(w.num_tiles, sizeof(int32_t));
  take(w.tile_claims, 2 * sizeof(int32_t));
  take(w.sorted_ids, sizeof(int32_t) * g.assignments);
  take(w.sorted_weights, sizeof(float) * g.assignments);
  take(w.sorted_rows, sizeof(int32_t) * g.assignments);
  take(w.h, elem * g.assignments * shape.intermediate);
  take(w.partial, elem * partialElements(shape, g, combine, gemm2));
  w.total = at;
  return w;
}

bool launchesChained(const codegen::KernelSpec &spec) {
  const bool gemm = spec.kind == KernelKind::Gemm1 || spec.kind == KernelKind::Gemm2;
  return !gemm || (spec.usesMma() && spec.tile.ws);
}

ModuleSet::~ModuleSet() {
  if (modules_.empty())
    return;
  // A module unloads from its own context, which the destroying thread
  // need not have current; one that cannot be entered (the driver shut
  // down at exit) has gone with its modules.
  auto context = driver::ContextScope::enter(context_);
  if (!context) {
    llvm::consumeError(context.takeError());
    return;
  }
  for (const Module &m : modules_)
    driver::loaded().cuModuleUnload(m.module);
}

llvm::Expected<LoadedKernel> ModuleSet::load(const BuiltKernel &built) {
  const codegen::KernelSpec &spec = built.spec;
  const std::string &cubin = built.entry.cubin;
  auto same = llvm::find_if(modules_, [&](const Module &m) { return m.cubin == cubin; });
  CUmodule module = same != modules_.end() ? same->module : nullptr;
  if (!module) {
    if (!context_)
      MOEJIT_CU(cuCtxGetCurrent(&context_));
    MOEJIT_CU(cuModuleLoadData(&module, cubin.data()));
    modules_.push_back({cubin, module});
  }
  LoadedKernel k;
  MOEJIT_CU(cuModuleGetFunction(&k.function, module, spec.name().c_str()));
  k.threads = spec.threads();
  k.chained = launchesChained(spec);
  k.adds_to_y = spec.addsToY();
  k.can_zero_y = spec.kind == KernelKind::Gemm1 && spec.usesMma() && spec.tile.ws && !spec.tile.swap;
  k.partial_block_cols = spec.blocksPartial() ? spec.tile.bn : 0;
  k.dynamic_shared = spec.dynamicSharedBytes();
  if (k.dynamic_shared > 48 * 1024)
    MOEJIT_CU(cuFuncSetAttribute(k.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 k.dynamic_shared));
  // Registers and static shared memory come from the loaded function: the
  // ptxas report in the metadata is missing when a tool rewrites the log.
  int registers = 0, static_shared = 0;
  MOEJIT_CU(cuFuncGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, k.function));
  MOEJIT_CU(cuFuncGetAttribute(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k.function));
  if (spec.usesMma() && spec.tile.ws) {
    // setmaxnreg moves registers between warpgroups within what the block
    // got at entry: with less, the consumers would wait for ever.
    if (registers * k.threads <
        kWsProducerRegisters * 128 + kWsConsumerRegisters * (k.threads - 128))
      return makeError(ErrorCode::Internal,
                       "{} got {} registers per thread at entry, fewer than its warpgroups' "
                       "setmaxnreg budgets ({} and {}) need",
                       spec.name(), registers, kWsProducerRegisters, kWsConsumerRegisters);
    // One block per SM: __launch_bounds__(384, 1) and the register budgets
    // above leave no room for a second (small swap-AB tiles' shared memory
    // would).
    CUdevice device = 0;
    MOEJIT_CU(cuCtxGetDevice(&device));
    MOEJIT_CU(cuDeviceGetAttribute(&k.resident_blocks, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                   device));
    if (spec.kind == KernelKind::Gemm1) {
      int l2_bytes = 0;
      MOEJIT_CU(cuDeviceGetAttribute(&l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device));
      k.l2_bytes = l2_bytes;
    }
  }
  const store::EntryMeta &m = built.entry.meta;
  k.info = {spec.name(),
            registers,
            m.spill_bytes,
            static_shared + k.dynamic_shared,
            built.from_cache ? 0.0 : m.compile_ms,
            built.from_cache};
  return k;
}

llvm::Error launch(const LoadedKernel &k, unsigned grid_x, unsigned grid_y,
                   const LaunchParams &params, CUstream stream, const CUtensorMap *weights,
                   const CUtensorMap *rows) {
  void *args[] = {const_cast<LaunchParams *>(&params), const_cast<CUtensorMap *>(weights),
                  const_cast<CUtensorMap *>(rows)};
  CUlaunchAttribute chained;
  chained.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  chained.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config{};
  config.gridDimX = grid_x;
  config.gridDimY = grid_y;
  config.gridDimZ = 1;
  config.blockDimX = static_cast<unsigned>(k.threads);
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = static_cast<unsigned>(k.dynamic_shared);
  config.hStream = stream;
  config.attrs = &chained;
  config.numAttrs = k.chained ? 1 : 0;
  MOEJIT_CU(cuLaunchKernelEx(&config, k.function, args, nullptr));
  return llvm::Error::success();
}

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
  p.tiles = reinterpret_cast<moejit_abi::TileRecord *>(ws + w.tiles);
  p.num_tiles = reinterpret_cast<int32_t *>(ws + w.num_tiles);
  p.tile_claims = reinterpret_cast<int32_t *>(ws + w.tile_claims);
  p.sorted_ids = reinterpret_cast<int32_t *>(ws + w.sorted_ids);
  p.sorted_weights = reinterpret_cast<float *>(ws + w.sorted_weights);
  p.sorted_rows = reinterpret_cast<int32_t *>(ws + w.sorted_rows);
  p.h = ws + w.h;
  p.partial = w.partial == w.total ? nullptr : ws + w.partial; // none: GEMM2 adds into y
  p.route_blocks = geo.route_blocks;
  p.tile_m = geo.tile_m;
  p.max_tiles = static_cast<int32_t>(geo.max_tiles);
  return p;
}

int64_t gemmGridRows(const MoeShape &shape, const GemmPlan &plan, const LaunchGeometry &geo) {
  const int split = geo.tile_m / std::min(gemmRows(shape, plan.gemm1), gemmRows(shape, plan.gemm2));
  return geo.max_tiles * split;
}

namespace {

llvm::Error enqueueRouting(const RoutingKernels &routing, const LaunchGeometry &geo,
                           const LaunchParams &p, CUstream stream) {
  if (geo.assignments <= kRouteBlockMaxAssignments && routing.block)
    return launch(*routing.block, 1, 1, p, stream);
  if (geo.assignments <= kRouteWideMaxAssignments && routing.wide)
    return launch(*routing.wide, geo.route_blocks, 1, p, stream);
  if (llvm::Error e = launch(*routing.count, geo.route_blocks, 1, p, stream))
    return e;
  if (routing.wide) {
    LaunchParams counted = p;
    counted.route_counted = 1;
    return launch(*routing.wide, geo.route_blocks, 1, counted, stream);
  }
  if (llvm::Error e = launch(*routing.scan, 1, 1, p, stream))
    return e;
  return launch(*routing.scatter, geo.route_blocks, 1, p, stream);
}

/// One grouped GEMM (GEMM1 when kind is Gemm1) with config `tile`.
llvm::Error enqueueGemm(const MoeShape &shape, KernelKind kind, const LoadedKernel &gemm,
                        const codegen::TileConfig &tile, const LaunchGeometry &geo,
                        const LaunchParams &p, CUstream stream) {
  // Each routing tile of tile_m rows splits into tile_m / bm blocks.
  const int split = geo.tile_m / gemmRows(shape, tile);
  const int columns = kind == KernelKind::Gemm1 ? shape.intermediate : shape.hidden;
  const unsigned col_tiles = ceilDiv(columns, gemmCols(shape, tile));
  const auto row_tiles = static_cast<unsigned>(geo.max_tiles * split);
  if (gemm.resident_blocks > 0) {
    // Persistent: at most one block per SM walks the tile list.
    const bool gemm1 = kind == KernelKind::Gemm1;
    auto map = weightTensorMap(shape, gemm1 ? codegen::GemmKind::Gemm1 : codegen::GemmKind::Gemm2,
                               tile, gemm1 ? p.gate_up : p.down);
    if (!map)
      return map.takeError();
    const uint64_t tiles = uint64_t{col_tiles} * row_tiles;
    const auto grid = static_cast<unsigned>(
        std::min<uint64_t>(tiles, static_cast<uint64_t>(gemm.resident_blocks)));
    if (gemm1)
      return launch(gemm, grid, 1, p, stream, &*map);
    // GEMM2 loads its A rows (h, sorted order) by TMA as well.
    auto rows = hRowsTensorMap(shape, p.h, int64_t{p.tokens} * shape.k);
    if (!rows)
      return rows.takeError();
    return launch(gemm, grid, 1, p, stream, &*map, &*rows);
  }
  return launch(gemm, col_tiles, row_tiles, p, stream);
}

llvm::Error enqueueCombine(const MoeShape &shape, const LoadedKernel &combine,
                           const LaunchParams &p, CUstream stream) {
  const int vec = 16 / dtype_bytes(shape.dtype);
  return launch(combine, static_cast<unsigned>(p.tokens),
                ceilDiv(shape.hidden, int64_t{vec} * kCombineThreads), p, stream);
}

} // namespace

bool keepsXInL2(int64_t x_bytes, int64_t l2_bytes) {
  return l2_bytes > 0 && x_bytes * 3 <= l2_bytes;
}

bool stagesChainSafely(unsigned stages) {
  return !(stages & kRouting) || (stages & kGemm1) || !(stages & (kGemm2 | kCombine));
}

llvm::Error enqueueCall(const MoeShape &shape, const CallKernels &k, const GemmPlan &plan,
                        const LaunchGeometry &geo, const LaunchParams &p, unsigned stages,
                        CUstream stream) {
  // Refused before anything is enqueued, so that a refused call leaves the
  // stream as it found it. The combine reads partial in the layout the
  // call's GEMM2 writes, which only the GEMM2 kernel tells.
  if ((stages & kCombine) && !k.gemm2)
    return makeError(ErrorCode::Internal,
                     "enqueueCall: a combine needs the call's GEMM2 kernel (partial's layout)");
  if (!stagesChainSafely(stages))
    return makeError(ErrorCode::Internal,
                     "enqueueCall: only GEMM1 can follow the routing directly");
  // GEMM2 adds into y: zero it in GEMM1, under its main loops, where
  // GEMM1 can and does not read y as x; else by a memset where it breaks
  // no chain of dependent launches (first), unless GEMM1 still reads y.
  const bool adds_to_y = (stages & kGemm2) && k.gemm2->adds_to_y;
  const bool zero_in_gemm1 = adds_to_y && (stages & kGemm1) && k.gemm1->can_zero_y &&
                             p.y != p.x && reinterpret_cast<uintptr_t>(p.y) % 16 == 0;
  const bool zero_first = adds_to_y && !zero_in_gemm1 && (stages & kRouting) && p.y != p.x;
  // x and y alike: T rows of H elements.
  const int64_t xy_bytes =
      static_cast<int64_t>(p.tokens) * shape.hidden * dtype_bytes(shape.dtype);
  auto zeroY = [&]() -> llvm::Error {
    MOEJIT_CU(cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(p.y), 0,
                              static_cast<size_t>(xy_bytes), stream));
    return llvm::Error::success();
  };
  if (zero_first)
    if (llvm::Error e = zeroY())
      return e;
  if (stages & kRouting)
    if (llvm::Error e = enqueueRouting(k.routing, geo, p, stream))
      return e;
  if (stages & kGemm1) {
    LaunchParams p1 = p;
    p1.zero_y = zero_in_gemm1 ? p.y : nullptr;
    p1.keep_x_in_l2 = keepsXInL2(xy_bytes, k.gemm1->l2_bytes) ? 1 : 0;
    if (llvm::Error e = enqueueGemm(shape, KernelKind::Gemm1, *k.gemm1, plan.gemm1, geo, p1, stream))
      return e;
  }
  if (adds_to_y && !zero_first && !zero_in_gemm1)
    if (llvm::Error e = zeroY())
      return e;
  LaunchParams p2 = p;
  p2.partial_block_cols = k.gemm2 ? k.gemm2->partial_block_cols : 0;
  if (stages & kGemm2)
    if (llvm::Error e = enqueueGemm(shape, KernelKind::Gemm2, *k.gemm2, plan.gemm2, geo, p2, stream))
      return e;
  if ((stages & kCombine) && !(k.gemm2 && k.gemm2->adds_to_y))
    return enqueueCombine(shape, *k.combine, p2, stream);
  return llvm::Error::success();
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
