#include "codegen/tile_config.h"

#include "common/error.h"
#include "moe_launch_abi.cuh"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace moejit::codegen {

namespace {
constexpr int kBk = 64; // elements per k step: one 128-byte row
// Registers a wgmma thread needs beside its accumulators (ptxas asked for
// 154 with 128 accumulators).
constexpr int kWgmmaOverheadRegisters = 26;
int bRows(const TileConfig &c, GemmKind kind) { return kind == GemmKind::Gemm1 ? 2 * c.bn : c.bn; }
/// Output columns of a swap-AB tile: its weight rows, gate and up of each
/// h column for GEMM1.
int swapColumns(GemmKind kind) {
  return kind == GemmKind::Gemm1 ? moejit_abi::kSwapWeightRows / 2 : moejit_abi::kSwapWeightRows;
}
} // namespace

TileConfig wsTile(int bn, int stages, bool staged, int inflight) {
  TileConfig c{128, bn, stages, 0, 0, true, inflight};
  c.ws = true;
  c.staged = staged;
  return c;
}

TileConfig swapTile(int bm, int stages, GemmKind kind) {
  TileConfig c = wsTile(swapColumns(kind), stages);
  c.bm = bm;
  c.swap = true;
  return c;
}

std::string TileConfig::suffix() const {
  if (swap)
    return fmt::format("bm{}_bn{}_s{}_swap", bm, bn, stages);
  if (ws)
    return fmt::format("bm{}_bn{}_s{}_ws{}{}", bm, bn, stages, staged ? "s" : "",
                       inflight ? fmt::format("_f{}", inflight) : "");
  if (wgmma)
    return fmt::format("bm{}_bn{}_s{}_wgmma{}", bm, bn, stages,
                       inflight ? fmt::format("_f{}", inflight) : "");
  return fmt::format("bm{}_bn{}_s{}_w{}x{}", bm, bn, stages, warps_m, warps_n);
}

namespace {
/// Reads the names that suffix() writes, strictly: a literal, then a
/// decimal int (no sign, no space, no overflow: tuning records come from a
/// cache root that may be hostile).
struct Reader {
  std::string_view rest;
  bool literal(std::string_view s) {
    if (rest.substr(0, s.size()) != s)
      return false;
    rest.remove_prefix(s.size());
    return true;
  }
  bool number(int &out) {
    if (rest.empty() || rest[0] < '0' || rest[0] > '9')
      return false;
    const auto r = std::from_chars(rest.data(), rest.data() + rest.size(), out);
    if (r.ec != std::errc() || r.ptr == rest.data())
      return false;
    rest.remove_prefix(static_cast<size_t>(r.ptr - rest.data()));
    return true;
  }
};
} // namespace

llvm::Expected<TileConfig> parseTileConfig(const std::string &text) {
  TileConfig c;
  Reader in{text};
  bool ok = in.literal("bm") && in.number(c.bm) && in.literal("_bn") && in.number(c.bn) &&
            in.literal("_s") && in.number(c.stages);
  if (ok && in.literal("_swap")) {
    if (in.rest.empty()) {
      c.wgmma = c.ws = c.swap = true;
      c.warps_m = c.warps_n = 0; // unused; checkMmaConfig checks bm and bn
      return c;
    }
    ok = false;
  }
  if (ok && in.literal("_ws")) {
    const bool staged = in.literal("s");
    const int inflight = in.literal("_f1") ? 1 : 0;
    if (in.rest.empty()) {
      const int bm = c.bm;
      c = wsTile(c.bn, c.stages, staged, inflight);
      c.bm = bm; // checkMmaConfig says why anything but 128 is refused
      return c;
    }
    ok = false;
  }
  if (ok && (in.rest == "_wgmma" || in.rest == "_wgmma_f1")) {
    c.inflight = in.rest == "_wgmma_f1" ? 1 : 0;
    c.wgmma = true;
    c.warps_m = c.warps_n = 0; // unused by wgmma configs
    return c;
  }
  ok = ok && in.literal("_w") && in.number(c.warps_m) && in.literal("x") && in.number(c.warps_n) &&
       in.rest.empty();
  if (!ok)
    return makeError(ErrorCode::InvalidArgument,
                     "'{}' is not a tile config like bm128_bn64_s3_w2x2", text);
  return c;
}

int mmaThreads(const TileConfig &c) {
  if (c.ws)
    return moejit_abi::kWsThreads;
  return c.wgmma ? 128 * (c.bm / 64) : 32 * c.warps_m * c.warps_n;
}

int mmaSharedBytes(const TileConfig &c, GemmKind kind) {
  if (c.swap) // stages of weight and token rows (1024-byte aligned), GEMM2's staging
              // chunks, two mbarriers and a 16-byte tile ticket per stage,
              // the producer's 16-byte claim slot
    return c.stages * (moejit_abi::kSwapWeightRows + c.bm) * kBk * 2 +
           moejit_abi::swap_staging_bytes(kind == GemmKind::Gemm2, c.bm) + c.stages * 32 + 16;
  const int rows = c.bm + bRows(c, kind);
  if (c.ws) {
    // Stages (the kernel declares its dynamic shared memory 1024-byte
    // aligned: no slack), the staging rows of both consumer warpgroups (64 rows
    // of the output columns plus 16 bytes each), then two mbarriers and a
    // 16-byte tile ticket per stage, then the producer's 16-byte claim
    // slot (TileClaims in blocks/ws_pipeline.cuh).
    const int out_columns = c.bn; // GEMM1: h columns; GEMM2: y columns
    const int staging = c.staged ? 2 * 64 * (out_columns + 8) * 2 : 0;
    return c.stages * rows * kBk * 2 + staging + c.stages * 32 + 16;
  }
  // wgmma needs 1024-byte aligned stages: room to align the base.
  return (c.wgmma ? 1024 : 0) + c.stages * rows * kBk * 2 + rows * 8;
}

llvm::Error checkMmaConfig(const TileConfig &c, GemmKind kind) {
  auto fail = [&](const char *rule) {
    return makeError(ErrorCode::InvalidArgument, "tile config {}: {}", c.suffix(), rule);
  };
  // Every field in range before any arithmetic on them: a tuning record
  // from a hostile root may hold any int, and 32 * warps_m * warps_n, the
  // shared-memory sums and the divisions below must neither overflow nor
  // divide by zero (w16384x8192 made the thread count 0).
  if (c.bm <= 0 || c.bn <= 0 || c.bm > kMaxTileSide || c.bn > kMaxTileSide ||
      (!c.wgmma && (c.warps_m <= 0 || c.warps_n <= 0 || c.warps_m > 32 || c.warps_n > 32)))
    return fail("bm and bn must be in 1..1024, warps in 1..32 a side");
  // Swap-AB stages are small (a weight stream wants many in flight).
  if (c.stages < 2 || c.stages > (c.swap ? 12 : 8))
    return fail(c.swap ? "swap-AB stages must be in 2..12" : "stages must be in 2..8");
  const int threads = mmaThreads(c);
  const int b_rows = bRows(c, kind);
  if (c.staged && !c.ws)
    return fail("a staged epilogue needs a warp-specialised tile");
  if (c.inflight != 0 && (c.inflight != 1 || !c.wgmma))
    return fail("wgmma tiles leave 0 or 1 groups in flight; other tiles none");
  if (c.swap) {
    if (!c.wgmma || !c.ws || c.staged || c.inflight != 0)
      return fail("swap-AB tiles are warp-specialised, unstaged, with no wgmma group in flight");
    if (c.bm != 32 && c.bm != 64 && c.bm != 128 && c.bm != 256)
      return fail("swap-AB tiles have bm 32, 64, 128 or 256 token rows");
    if (c.bn != swapColumns(kind))
      return fail("swap-AB tiles have bn 64 (GEMM1) or 128 (GEMM2): 128 weight rows");
    if (mmaSharedBytes(c, kind) > kMaxSharedBytes)
      return fail("needs more shared memory than a block can have");
    return llvm::Error::success();
  }
  if (c.ws) {
    if (!c.wgmma || c.bm != 128)
      return fail("warp-specialised tiles have bm 128 (two consumer warpgroups of 64 rows)");
    if (b_rows != 64 && b_rows != 128 && b_rows != 192 && b_rows != 256)
      return fail("wgmma needs 64, 128, 192 or 256 B rows (GEMM1: 2*bn)");
    if (c.bn % 8 != 0)
      return fail("warp-specialised tiles need bn a multiple of 8 (1024-byte swizzle atoms)");
    if (mmaSharedBytes(c, kind) > kMaxSharedBytes)
      return fail("needs more shared memory than a block can have");
    return llvm::Error::success();
  }
  if (c.wgmma) {
    if (c.bm % 64 != 0 || c.bm > 256)
      return fail("wgmma needs bm of 64, 128, 192 or 256 (a warpgroup per 64 rows)");
    if (b_rows != 64 && b_rows != 128 && b_rows != 192 && b_rows != 256)
      return fail("wgmma needs 64, 128, 192 or 256 B rows (GEMM1: 2*bn)");
    if ((b_rows * 8) % threads != 0)
      return fail("16-byte chunks of a stage must split evenly over threads");
    if (c.inflight < 0 || c.inflight > 1 || c.stages < 2 + c.inflight)
      return fail("wgmma keeps 0 or 1 groups in flight, with stages >= 2 + that");
    if (mmaSharedBytes(c, kind) > kMaxSharedBytes)
      return fail("needs more shared memory than a block can have");
    // Each thread holds b_rows/2 fp32 accumulators plus ~26 registers of
    // addressing; ptxas refuses kernels past 64K registers per block (e.g.
    // bm256 with 256 B rows needs 154 at 512 threads, which get 128).
    if (b_rows / 2 + kWgmmaOverheadRegisters > std::min(255, 65536 / threads))
      return fail("needs more registers per thread than the block's size allows");
    return llvm::Error::success();
  }
  if (threads > 1024)
    return fail("more than 1024 threads");
  if (c.bm % (16 * c.warps_m) != 0)
    return fail("bm must split into 16-row warp tiles");
  const int warp_b = b_rows / c.warps_n;
  if (b_rows % c.warps_n != 0 || warp_b % 16 != 0)
    return fail("each warp needs B rows in multiples of 16");
  if (kind == GemmKind::Gemm1 && (warp_b / 2) % 8 != 0)
    return fail("gate and up halves of a warp must be whole 8-column tiles");
  if ((c.bm * 8) % threads != 0 || (b_rows * 8) % threads != 0)
    return fail("16-byte chunks of a stage must split evenly over threads");
  if (mmaSharedBytes(c, kind) > kMaxSharedBytes)
    return fail("needs more shared memory than a block can have");
  // Each thread holds bm * b_rows / threads fp32 accumulators: past 256 they
  // cannot stay in its 255 registers (a record's bm256_bn512_s2_w1x1 spilled
  // 286 KB a thread and took NVRTC 135 s). The candidate grid stays under.
  if (c.bm * b_rows / threads > 256)
    return fail("needs more accumulators per thread than its registers hold (256 at most)");
  return llvm::Error::success();
}

} // namespace moejit::codegen
