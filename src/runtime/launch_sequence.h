// The launches of one MoE call and what they need: grid geometry, the
// workspace layout, the parameter block, loaded kernels and the modules that
// own them, and the stages (routing, GEMM1, GEMM2, combine). KernelSet::run
// and the autotuner enqueue a call through the same enqueueCall.
#pragma once

#include "driver/driver.h"
#include "moejit/moejit.hpp"
#include "runtime/builder.h"
#include "runtime/launch_params.h"
#include "runtime/planner.h"

#include <vector>

namespace moejit::runtime {

/// Byte offsets of the scratch arrays inside the caller's workspace.
struct WorkspaceLayout {
  size_t block_counts, expert_offsets, tiles, num_tiles, tile_claims, sorted_ids, sorted_weights,
      sorted_rows, h, partial, total;
};

/// Grid-sizing numbers that depend on T and the bucket's row tile.
struct LaunchGeometry {
  int64_t assignments; ///< T*k
  int route_blocks;
  int tile_m;
  int64_t max_tiles; ///< tiles of the worst routing of T*k rows
};

LaunchGeometry launchGeometry(const MoeShape &shape, int64_t tokens, int tile_m);
/// The scratch of one call; Combine::Fast needs no partial rows (GEMM2 adds
/// into y), so `partial` is empty there. `gemm2`: the call's GEMM2 config,
/// whose layout of partial sizes it (rows by assignment, or blocked:
/// moejit_abi::partial_block_offset); null: room for any GEMM2 (the tuner).
/// Only partial's size depends on it: every offset is the same.
WorkspaceLayout workspaceLayout(const MoeShape &shape, const LaunchGeometry &g,
                                Combine combine = Combine::Deterministic,
                                const codegen::TileConfig *gemm2 = nullptr);

/// A loaded kernel and what the launch needs to know about it.
struct LoadedKernel {
  CUfunction function = nullptr;
  int threads = 0;
  int dynamic_shared = 0;
  /// Persistent kernels (warp-specialised GEMMs): blocks that fit the
  /// device at once, the most a launch asks for; 0 for the others.
  int resident_blocks = 0;
  /// Launched chained to the kernel before it (programmatic dependent
  /// launch): the fixed kernels and the persistent GEMMs. A GEMM of one
  /// tile per block is not: its blocks, started early, land on the SMs the
  /// previous kernel frees first, several to an SM, while others idle
  /// (measured: mixtral T=1 0.314 ms chained, 0.232 not; NOTES.md).
  bool chained = true;
  /// A GEMM2 that adds its rows into y (Combine::Fast): y is zeroed before
  /// it and no combine pass follows.
  bool adds_to_y = false;
  /// A GEMM1 that can zero y for such a GEMM2 while it runs (the
  /// warp-specialised gather kernels: LaunchParams::zero_y).
  bool can_zero_y = false;
  /// The device's L2 size in bytes where the kernel gathers x rows under an
  /// L2 policy (the warp-specialised GEMM1s: LaunchParams::keep_x_in_l2);
  /// 0 for the others.
  int64_t l2_bytes = 0;
  /// A GEMM2 that writes partial in the blocked layout of its BN columns
  /// (moejit_abi::partial_block_offset), which the combine then reads;
  /// 0: rows by assignment.
  int partial_block_cols = 0;
  KernelInfo info;
};

/// The routing kernels of a kernel set.
struct RoutingKernels {
  const LoadedKernel *count = nullptr, *scan = nullptr, *scatter = nullptr, *block = nullptr,
                     *wide = nullptr;
  /// Up to 1024 experts: count, block and wide; past them count, scan and
  /// scatter.
  bool complete() const { return count && ((block && wide) || (scan && scatter)); }
};

/// Whether GEMM1 keeps the x rows it gathers in L2 (evict_last) for a call
/// whose x is `x_bytes`, on a device of `l2_bytes`: only while x takes at
/// most a third of L2. Measured on the H100 (50 MiB; NOTES, sessions 44
/// and 45): up to 16 MiB of x the hint gains 0.2-2%, at 32 MiB it cost
/// 0-3.5% (qwen3-235b at T=4096, by machine), the rows crowding out the
/// weights that an expert's row tiles share.
bool keepsXInL2(int64_t x_bytes, int64_t l2_bytes);

/// LoadedKernel::chained of a kernel of `spec`.
bool launchesChained(const codegen::KernelSpec &spec);

/// Owns the modules its kernels were loaded from and unloads them with it
/// (one owner for the runtime's kernel sets, the tuner and the bench).
class ModuleSet {
public:
  ModuleSet() = default;
  ModuleSet(const ModuleSet &) = delete;
  ModuleSet &operator=(const ModuleSet &) = delete;
  ~ModuleSet();
  /// Loads a kernel's cubin (once: kernels compiled in one NVRTC program
  /// carry the same cubin) and returns the kernel, with the shared-memory
  /// attribute set.
  llvm::Expected<LoadedKernel> load(const BuiltKernel &built);

private:
  struct Module {
    std::string cubin;
    CUmodule module;
  };
  std::vector<Module> modules_;
  CUcontext context_ = nullptr; ///< where they were loaded, made current to unload them
};

/// One launch of `k` with the parameter block (and, for the warp-specialised
/// GEMMs, the weights' tensor map and GEMM2's map of h), chained (k.chained) to the kernel before
/// it in the stream by programmatic dependent launch: every kernel waits
/// for that one (griddep_wait, a no-op when not chained) before it touches
/// memory, so only its prologue overlaps.
llvm::Error launch(const LoadedKernel &k, unsigned grid_x, unsigned grid_y,
                   const LaunchParams &params, CUstream stream,
                   const CUtensorMap *weights = nullptr, const CUtensorMap *rows = nullptr);

/// Rows per routing tile of a plan: the larger bm of the two GEMMs (the
/// smaller one divides it; each GEMM splits list tiles into its own blocks).
int tileRows(const MoeShape &shape, const GemmPlan &plan);

/// The parameter block for one call: caller pointers from `args`, scratch
/// carved out of args.workspace by `layout`.
LaunchParams launchParams(const MoeArgs &args, const WorkspaceLayout &layout,
                          const LaunchGeometry &geometry);

/// Largest grid.y a GEMM of this plan needs at `geometry`.
int64_t gemmGridRows(const MoeShape &shape, const GemmPlan &plan, const LaunchGeometry &geometry);

/// The kernels one call of a bucket launches.
struct CallKernels {
  RoutingKernels routing;
  const LoadedKernel *gemm1 = nullptr, *gemm2 = nullptr;
  /// The combine pass (null under Combine::Fast, whose GEMM2s add into y).
  const LoadedKernel *combine = nullptr;
};

/// The stages enqueueCall launches, as a mask: runs launch them all; the
/// tuner fills the tile list once and then times one GEMM at a time.
enum Stage : unsigned {
  kRouting = 1u << 0,
  kGemm1 = 1u << 1,
  kGemm2 = 1u << 2,
  kCombine = 1u << 3,
  kAllStages = kRouting | kGemm1 | kGemm2 | kCombine
};

/// Whether `stages` (Stage) may be enqueued together: what follows the
/// routing is GEMM1. The combine loads sorted rows (kernels/moe_combine.cuh)
/// and the persistent GEMM2 its first tile (ws_pipeline.cuh,
/// warm_first_tile) before they wait for the kernel before them, so that
/// kernel must have started after the routing completed: GEMM1, which
/// waits for it, never the routing itself.
bool stagesChainSafely(unsigned stages);

/// The `stages` of a call with GEMM configs `plan` (whose kernels `kernels`
/// holds; only those of the stages asked for are needed) at `geometry`:
/// routing (route_block or route_wide by the assignments, route_wide after
/// route_count past kRouteWideMaxAssignments; past 1024 experts count,
/// scan, scatter), GEMM1, GEMM2, combine. Without a combine
/// kernel, GEMM2 adds into y, which is zeroed first: before routing, or
/// after GEMM1 when y is x (GEMM1 reads x) or routing is not enqueued.
llvm::Error enqueueCall(const MoeShape &shape, const CallKernels &kernels, const GemmPlan &plan,
                        const LaunchGeometry &geometry, const LaunchParams &params, unsigned stages,
                        CUstream stream);

/// The plain GPU reference (templates/kernels/moe_reference.cuh) of the call in
/// `args`: fp32 h into `h_ref` [T*k, I], then fp32 y into `y_ref` [T, H].
llvm::Error enqueueReference(const MoeShape &shape, const LoadedKernel &reference_h,
                             const LoadedKernel &reference_y, const MoeArgs &args, void *h_ref,
                             void *y_ref, CUstream stream);

} // namespace moejit::runtime
