// Tile configurations of the grouped GEMMs.
#pragma once

#include "moejit/moejit.hpp"

#include <llvm/Support/Error.h>

#include <string>

namespace moejit::codegen {

/// One tile configuration of the tensor-core GEMMs. bn counts output columns
/// (for GEMM1, columns of h: each needs a gate and an up row of weights).
struct TileConfig {
  int bm = 128;    ///< token rows per block
  int bn = 64;     ///< output columns per block
  int stages = 3;  ///< cp.async pipeline depth
  int warps_m = 2; ///< warps along rows
  int warps_n = 2; ///< warps along columns
  /// Hopper path (sm_90a): wgmma from shared memory, one warpgroup per 64
  /// rows; warps_m/warps_n are then unused.
  bool wgmma = false;
  /// wgmma and ws: groups left in flight across k-tiles (0 or 1; "_f1"
  /// in names).
  int inflight = 0;
  /// Hopper persistent warp-specialised kernel (templates/kernels/
  /// moe_gemm_ws.cuh): wgmma is then true, bm is 128 (two consumer
  /// warpgroups of 64 rows), weights come by TMA.
  bool ws = false;
  /// ws only: the epilogue stages rows in shared memory and sends them by
  /// bulk copies that overlap the next tile ("_wss" in names).
  bool staged = false;
  /// ws only: swap-AB (templates/kernels/moe_gemm_swap.cuh): the weights
  /// are wgmma's M side (128 weight rows per tile: bn is 64 h columns for
  /// GEMM1, 128 output columns for GEMM2) and bm token rows its N side, run
  /// with bm/4, bm/2 or (bm >= 128) the multiple of 32 up to bm columns
  /// that the tile's rows need ("_swap").
  bool swap = false;

  bool operator==(const TileConfig &) const = default;
  /// "bm128_bn64_s3_w2x2", "bm128_bn64_s3_wgmma", (one group in flight)
  /// "bm128_bn64_s4_wgmma_f1" or (warp-specialised) "bm128_bn128_s4_ws"
  /// (staged epilogue: "_wss"; one wgmma group left in flight, each stage
  /// held a k-tile longer: "_ws_f1"): the part of a kernel name that
  /// spells it; swap-AB: "bm64_bn64_s8_swap".
  std::string suffix() const;
};

/// Parses the form suffix() writes; InvalidArgument otherwise.
llvm::Expected<TileConfig> parseTileConfig(const std::string &text);

/// Which of the two grouped GEMMs a config is for.
enum class GemmKind { Gemm1, Gemm2 };

/// A warp-specialised config (TileConfig::ws) of bn columns and `stages`.
TileConfig wsTile(int bn, int stages, bool staged = false, int inflight = 0);

/// A swap-AB config (TileConfig::swap) of bm token rows and `stages`: bn is
/// what the kernel fixes for `kind`.
TileConfig swapTile(int bm, int stages, GemmKind kind);

/// Threads per block of a tensor-core GEMM with this config.
int mmaThreads(const TileConfig &c);
/// Dynamic shared memory of a tensor-core GEMM with this config.
int mmaSharedBytes(const TileConfig &c, GemmKind kind);
/// Checks the rules of templates/kernels/moe_gemm_mma.cuh (or moe_gemm_wgmma.cuh)
/// and the shared-memory limit, with a message naming the rule broken.
llvm::Error checkMmaConfig(const TileConfig &c, GemmKind kind);

/// The fp32 path has one fixed tile (templates/kernels/moe_gemm_simt.cuh).
inline constexpr int kSimtTile = 32;
inline constexpr int kSimtThreads = 256;

/// Largest bm or bn checkMmaConfig takes: past every tile rule, and far
/// enough from int overflow for its sums (records may hold any int).
inline constexpr int kMaxTileSide = 1024;

/// Largest dynamic shared memory per block on sm_80 .. sm_90.
inline constexpr int kMaxSharedBytes = 227 * 1024;

} // namespace moejit::codegen
