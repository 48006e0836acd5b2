#include "runtime/tensor_maps.h"

#include "common/error.h"
#include "driver/driver.h"
#include "moe_launch_abi.cuh"

namespace moejit::runtime {

namespace {
/// A tiled map of `rank` dimensions (innermost first) over the workload's
/// dtype: 128-byte swizzle (boxes 64 elements wide), zeros out of bounds.
llvm::Expected<CUtensorMap> encode(const MoeShape &shape, cuuint32_t rank, const void *base,
                                   const cuuint64_t *dims, const cuuint64_t *byte_strides,
                                   const cuuint32_t *box) {
  const CUtensorMapDataType type = shape.dtype == DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                              : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const cuuint32_t unit[5] = {1, 1, 1, 1, 1};
  CUtensorMap map;
  MOEJIT_CU(cuTensorMapEncodeTiled(&map, type, rank, const_cast<void *>(base), dims, byte_strides,
                                   box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                   CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return map;
}
} // namespace

llvm::Expected<CUtensorMap> weightTensorMap(const MoeShape &shape, codegen::GemmKind kind,
                                            const codegen::TileConfig &tile, const void *weights) {
  const cuuint64_t H = shape.hidden, I = shape.intermediate, E = shape.experts;
  const cuuint64_t elem = dtype_bytes(shape.dtype);
  const auto bn = static_cast<cuuint32_t>(tile.bn);
  if (kind == codegen::GemmKind::Gemm1 && tile.swap) {
    // Swap-AB (kernels/moe_gemm_swap.cuh), innermost first: k (H), 8 rows,
    // gate/up, group of 8 columns (I is a multiple of 8), expert; a box is
    // 8 groups of 8 gate rows then 8 up rows: 128 weight rows.
    const cuuint64_t dims[5] = {H, 8, 2, I / 8, E};
    const cuuint64_t strides[4] = {H * elem, I * H * elem, 8 * H * elem, 2 * I * H * elem};
    const cuuint32_t box[5] = {64, 8, 2, static_cast<cuuint32_t>(moejit_abi::kSwapWeightRows / 16),
                               1};
    return encode(shape, 5, weights, dims, strides, box);
  }
  if (kind == codegen::GemmKind::Gemm1) {
    // Innermost first: k (H), column (I), gate/up, expert.
    const cuuint64_t dims[4] = {H, I, 2, E};
    const cuuint64_t strides[3] = {H * elem, I * H * elem, 2 * I * H * elem};
    const cuuint32_t box[4] = {64, bn, 1, 1};
    return encode(shape, 4, weights, dims, strides, box);
  }
  // k (I), column (H), expert.
  const cuuint64_t dims[3] = {I, H, E};
  const cuuint64_t strides[2] = {I * elem, H * I * elem};
  const cuuint32_t box[3] = {64, bn, 1};
  return encode(shape, 3, weights, dims, strides, box);
}

llvm::Expected<CUtensorMap> hRowsTensorMap(const MoeShape &shape, const void *h, int64_t rows) {
  const cuuint64_t I = shape.intermediate;
  const cuuint64_t dims[2] = {I, static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {I * dtype_bytes(shape.dtype)};
  const cuuint32_t box[2] = {64, moejit_abi::kWsRowBoxRows};
  return encode(shape, 2, h, dims, strides, box);
}

} // namespace moejit::runtime
