#include "runtime/arch_tiles.h"

#include <algorithm>

namespace moejit::runtime {

using codegen::GemmKind;
using codegen::TileConfig;

namespace {

/// Few rows per expert without wgmma (sm_90a streams them with swap-AB
/// tiles): 16-row mma.sync tiles stream the weights best while they dominate.
GemmPlan fewRows() { return {TileConfig{16, 64, 4, 1, 4}, TileConfig{16, 128, 4, 1, 4}}; }

/// mma.sync tiles over bm, bn, stages and warp layouts.
void addMmaGrid(std::vector<TileConfig> &out, std::initializer_list<int> bms) {
  const int warp_layouts[][2] = {{1, 4}, {2, 2}, {4, 1}, {2, 4}, {4, 2}};
  for (int bm : bms)
    for (int bn : {64, 128})
      for (int stages : {3, 4})
        for (const auto &w : warp_layouts)
          out.push_back(TileConfig{bm, bn, stages, w[0], w[1], false, 0});
}

namespace hopper { // sm_90a: wgmma

// Chosen from measured variants on the H200 (tools/bench/NOTES.md): swap-AB
// weight streams for few rows per expert, then the persistent
// warp-specialised kernels.
/// The widest of `widths` (descending) less than 64 columns past `columns`.
int narrowest(std::initializer_list<int> widths, int columns) {
  for (int w : widths)
    if (w - columns < 64)
      return w;
  return *(widths.end() - 1);
}

/// GEMM2's persistent column tile: the narrowest width that covers a narrow
/// H, else 256 columns, or 192 (four stages) where 192 pads H less: H=2880
/// is 15 tiles of 192 against 12 of 256 whose last is a quarter full
/// (-0.6..-1.6% from 128 to 512 rows per expert on the H100, even at 64;
/// NOTES.md, session 42). Where 256 divides H (every shipped shape) it
/// stays 256.
TileConfig gemm2Tile(int hidden) {
  const auto padding = [&](int w) { return (hidden + w - 1) / w * w - hidden; };
  if (hidden > 256 && padding(192) < padding(256))
    return codegen::wsTile(192, 4, true);
  return codegen::wsTile(narrowest({256, 192, 128, 64}, hidden), 3, true);
}

/// Whether the 256-row swap-AB pair (bm256_bn64_s4_swap :
/// bm256_bn128_s4_swap) runs a bucket of `rows` per expert. At ~128 rows
/// half the experts spill a few rows into a second 128-row ws tile, which
/// reads the expert's weights again; a 256-row token tile holds them all.
/// Measured (NOTES.md, sessions 25, 38, 40 and 45): the tuner's pick at
/// 128-192 rows in six of the nine tabled shapes, five of them on both
/// cards (2.4-17%; bench's ABAB confirmed it in session 25), and 6-13% in
/// bench on three of four untabled shapes at 128-160 rows. Not:
/// - at 64-96 rows or from 256 (it loses 2-3% at 64, 5-14% from 256);
/// - where its weight tiles pad I or H (a GEMM1 tile holds 64 columns of
///   I, a GEMM2 tile 128 of H: H=I=2880, a tie, pads H by half a tile);
/// - where its GEMM1 tiles (E * I/64) are under ~2 waves of 132 SMs: the
///   seed shape at E=16 (192 tiles) lost 1.5%, narrower ws tiles win
///   there;
/// - with many experts of small weights (E > 64, I*H < 2^21, 12 MB of bf16
///   an expert): there a second row tile finds more of its expert's
///   weights still in L2 (session 44), and the gain is smallest (the seed
///   shape, E=128: ~1% on the H100; Qwen3-Next-like, E=512, gained 5.8%
///   and is left out with it). The seed shape's cold get (issue 10: under
///   1 s, `warm --arch sm_90a`, which warms the heuristic's plan) has no
///   room for the two 256-row kernels (~2 s of NVRTC).
bool swap256Pays(const MoeShape &shape, double rows) {
  const bool large_or_few = static_cast<int64_t>(shape.intermediate) * shape.hidden >= (1 << 21) ||
                            shape.experts <= 64;
  return rows > 96 && rows <= 192 && shape.intermediate % 64 == 0 && shape.hidden % 128 == 0 &&
         static_cast<int64_t>(shape.experts) * (shape.intermediate / 64) >= 256 && large_or_few;
}

GemmPlan heuristic(const MoeShape &shape, double rows) {
  // Swap-AB weight streams while an expert gets few rows: 32 token rows
  // and 9 stages up to 16 rows per expert (the tuner's pick in every such
  // bucket of the four presets re-tuned with them, 5-17% ahead of the
  // mma.sync tiles at T=1; NOTES.md, session 17), 64 token rows and 7
  // stages up to 48 (the H200 tuner's GEMM1 pick at 32 rows per expert,
  // 48 for deepseek-v2-lite, in all five presets' tables, and both GEMMs'
  // for the seed shape; the plain wgmma tiles it replaces lost 4-17%
  // there; NOTES.md, session 22).
  if (rows <= 16)
    return {codegen::swapTile(32, 9, GemmKind::Gemm1), codegen::swapTile(32, 9, GemmKind::Gemm2)};
  if (rows <= 48)
    return {codegen::swapTile(64, 7, GemmKind::Gemm1), codegen::swapTile(64, 7, GemmKind::Gemm2)};
  if (swap256Pays(shape, rows))
    return {codegen::swapTile(256, 4, GemmKind::Gemm1), codegen::swapTile(256, 4, GemmKind::Gemm2)};
  // Persistent warp-specialised 128x256 tiles (GEMM1: 128 columns of gate
  // and up) from 64 rows per expert on, where swap256Pays does not hold (a
  // ws tile won that bucket in all eight shipped tables that have it, 9-23%
  // ahead of the 128-row wgmma tiles the heuristic took there before
  // session 22). Both GEMMs
  // stage their rows through shared memory (stmatrix, then a bulk copy per
  // row that runs on under the next tile): GEMM2 since issue 10 step 2,
  // GEMM1 since stmatrix made staging cheap (-0.8..-1.5% for the seed
  // shape at T=2048..8192, NOTES.md session 22).
  return {codegen::wsTile(narrowest({128, 96, 64, 32}, shape.intermediate), 4, true),
          gemm2Tile(shape.hidden)};
}

/// The most stages (2..most) of `tile(stages)` that fit in a block's shared memory.
template <class Tile> int deepestFit(int most, GemmKind kind, const Tile &tile) {
  int s = 2;
  while (s < most && codegen::mmaSharedBytes(tile(s + 1), kind) <= codegen::kMaxSharedBytes)
    ++s;
  return s;
}

std::vector<TileConfig> grid(GemmKind kind) {
  std::vector<TileConfig> out;
  // GEMM1's bn counts h columns; each needs a gate and an up row of B.
  const int bns1[] = {32, 64, 96, 128};
  const int bns2[] = {64, 128, 192, 256};
  for (int bm : {64, 128, 192, 256})
    for (int bn : kind == GemmKind::Gemm1 ? bns1 : bns2)
      for (int stages : {3, 4})
        for (int inflight : {0, 1})
          out.push_back(TileConfig{bm, bn, stages, 0, 0, true, inflight});
  // Warp-specialised persistent tiles, with the epilogue straight from the
  // registers or staged: as many stages as shared memory holds beside the
  // staging rows, and one fewer.
  for (int bn : kind == GemmKind::Gemm1 ? bns1 : bns2)
    for (bool staged : {false, true}) {
      const int fit = deepestFit(8, kind, [&](int s) { return codegen::wsTile(bn, s, staged); });
      for (int stages : {fit - 1, fit})
        out.push_back(codegen::wsTile(bn, stages, staged));
    }
  // Swap-AB tiles (weights as wgmma's M): the deepest stream that fits, and
  // two stages fewer.
  for (int bm : {32, 64, 128, 256}) {
    const int fit = deepestFit(12, kind, [&](int s) { return codegen::swapTile(bm, s, kind); });
    for (int stages : {fit - 2, fit})
      out.push_back(codegen::swapTile(bm, stages, kind));
  }
  // mma.sync only serves the few-rows buckets here (worth below).
  addMmaGrid(out, {16, 32});
  return out;
}

bool worth(const TileConfig &tile, double r) {
  if (tile.swap)
    // A weight stream: worth it while experts have few rows, with token
    // tiles no taller than twice what an expert fills.
    return r <= 512 && tile.bm <= std::max(32.0, 2 * r);
  if (tile.wgmma)
    // 64-row wgmma tiles are the floor; taller ones once experts fill half
    // of them; 64-row tiles stop paying once experts have >1024 rows.
    return tile.bm <= std::max(64.0, 2 * r) && !(tile.bm == 64 && r > 1024);
  // mma.sync only wins while weights dominate (few rows).
  return r <= 32 && tile.bm <= std::max(16.0, 2 * r) && !(tile.bm <= 32 && r > 256);
}

} // namespace hopper

namespace mma_sync { // sm_80 and every target without wgmma

GemmPlan heuristic(double rows) {
  if (rows <= 16)
    return fewRows();
  if (rows <= 128)
    return {TileConfig{64, 64, 3, 2, 2}, TileConfig{64, 128, 3, 2, 2}};
  return {TileConfig{128, 64, 3, 2, 2}, TileConfig{128, 128, 3, 2, 2}};
}

std::vector<TileConfig> grid() {
  std::vector<TileConfig> out;
  addMmaGrid(out, {16, 32, 64, 128});
  return out;
}

bool worth(const TileConfig &tile, double r) {
  return tile.bm <= std::max(16.0, 2 * r) && !(tile.bm <= 32 && r > 256);
}

} // namespace mma_sync

} // namespace

GemmPlan heuristicTiles(const MoeShape &shape, double rows_per_expert, const Arch &arch) {
  return arch.hasWgmma() ? hopper::heuristic(shape, rows_per_expert)
                         : mma_sync::heuristic(rows_per_expert);
}

std::vector<TileConfig> tileGrid(const Arch &arch, GemmKind kind) {
  return arch.hasWgmma() ? hopper::grid(kind) : mma_sync::grid();
}

bool worthTiming(const TileConfig &tile, double rows_per_expert, const Arch &arch) {
  return arch.hasWgmma() ? hopper::worth(tile, rows_per_expert)
                         : mma_sync::worth(tile, rows_per_expert);
}

} // namespace moejit::runtime
