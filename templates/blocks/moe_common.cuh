// Shared definitions of every moejit kernel: the launch parameter block and
// the compile-time shape.
#pragma once

#include "moe_launch_abi.cuh"
#include "ptx/convert.cuh"
#include "ptx/griddep.cuh"

namespace moejit_dev {

using moejit_abi::LaunchParams;
using namespace moejit_abi; // kRouteChunk and the fixed kernels' thread counts

/// One 16-byte vector, for wide loads of any element type.
struct alignas(16) Vec16 {
  unsigned w[4];
};

// The routing inputs (ids, weights, the expert map) are read through
// __ldg: no kernel writes them, and the routing kernels, compiled at
// --Ofast-compile=min (codegen::familyOptions), would otherwise address
// them as generic memory (LD, not LDG).

/// The expert id of assignment a (t*k+j) as the caller wrote it, int32 or
/// int64; an int64 id outside int32 is -1 (no expert has it).
__device__ __forceinline__ int routed_id(const LaunchParams &p, int a) {
  if (p.index_bytes == 8) {
    const long long id = __ldg(static_cast<const long long *>(p.top_k_index) + a);
    return id >= 0 && id <= 0x7fffffff ? static_cast<int>(id) : -1;
  }
  return __ldg(static_cast<const int *>(p.top_k_index) + a);
}

/// The local expert of a routed id: through the expert map when there is
/// one; -1 for an id outside the map or the experts, or one the map sends
/// to another GPU.
template <class S> __device__ __forceinline__ int local_expert(const LaunchParams &p, int id) {
  if (p.expert_map)
    id = id >= 0 && id < p.expert_map_size ? __ldg(p.expert_map + id) : -1;
  return id >= 0 && id < S::E ? id : -1;
}

/// The local expert of assignment a (routed_id, then local_expert).
template <class S> __device__ __forceinline__ int expert_of(const LaunchParams &p, int a) {
  return local_expert<S>(p, routed_id(p, a));
}

/// The routing weight of assignment a, as float.
template <class S> __device__ __forceinline__ float weight_of(const LaunchParams &p, int a) {
  if (p.weights_in_model_dtype)
    return to_float<S::DT>(__ldg(static_cast<const typename S::T *>(p.top_k_weights) + a));
  return __ldg(static_cast<const float *>(p.top_k_weights) + a);
}

/// ADD_TO_Y_: GEMM2 adds its weighted rows into y (Combine::Fast) rather
/// than writing partial rows for the combine pass.
template <int K_, int H_, int I_, int E_, int DT_, bool ADD_TO_Y_ = false> struct Shape {
  static constexpr bool ADD_TO_Y = ADD_TO_Y_;
  static constexpr int K = K_;
  static constexpr int H = H_;
  static constexpr int I = I_;
  static constexpr int E = E_;
  static constexpr int DT = DT_;
  using T = typename Storage<DT_>::type;
  static_assert(H_ % 8 == 0 && I_ % 8 == 0, "hidden and intermediate must be multiples of 8");
};

} // namespace moejit_dev
