#include "runtime/tensor_maps.h"

#include "common/error.h"
#include "driver/driver.h"

namespace moejit::runtime {

llvm::Expected<CUtensorMap> weightTensorMap(const MoeShape &shape, codegen::GemmKind kind,
                                            const codegen::TileConfig &tile, const void *weights) {
  const cuuint64_t H = shape.hidden, I = shape.intermediate, E = shape.experts;
  const cuuint64_t elem = dtype_bytes(shape.dtype);
  const CUtensorMapDataType type = shape.dtype == DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                              : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  CUtensorMap map;
  const cuuint32_t unit[4] = {1, 1, 1, 1};
  if (kind == codegen::GemmKind::Gemm1) {
    // Innermost first: k (H), column (I), gate/up, expert.
    const cuuint64_t dims[4] = {H, I, 2, E};
    const cuuint64_t strides[3] = {H * elem, I * H * elem, 2 * I * H * elem};
    const cuuint32_t box[4] = {64, static_cast<cuuint32_t>(tile.bn), 1, 1};
    MOEJIT_CU(cuTensorMapEncodeTiled(&map, type, 4, const_cast<void *>(weights), dims, strides,
                                     box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                     CU_TENSOR_MAP_SWIZZLE_128B,
                                     CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  } else {
    // k (I), column (H), expert.
    const cuuint64_t dims[3] = {I, H, E};
    const cuuint64_t strides[2] = {I * elem, H * I * elem};
    const cuuint32_t box[3] = {64, static_cast<cuuint32_t>(tile.bn), 1};
    MOEJIT_CU(cuTensorMapEncodeTiled(&map, type, 3, const_cast<void *>(weights), dims, strides,
                                     box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                     CU_TENSOR_MAP_SWIZZLE_128B,
                                     CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  }
  return map;
}

} // namespace moejit::runtime
