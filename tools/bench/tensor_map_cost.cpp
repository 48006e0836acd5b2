// Host cost of one cuTensorMapEncodeTiled (the warp-specialised GEMMs encode
// one weight map per launch): median ns over 100 batches of 1000 encodes of
// the seed shape's GEMM1 map. Built by hand on the build machine:
//   g++ -O2 -std=c++17 -I/usr/local/cuda/include tools/bench/tensor_map_cost.cpp \
//     -ldl -o build-gpu/tensor_map_cost
#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

int main() {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) {
    std::puts("no libcuda.so.1");
    return 1;
  }
  auto init = reinterpret_cast<decltype(&cuInit)>(dlsym(lib, "cuInit"));
  auto encode =
      reinterpret_cast<decltype(&cuTensorMapEncodeTiled)>(dlsym(lib, "cuTensorMapEncodeTiled"));
  auto retain =
      reinterpret_cast<decltype(&cuDevicePrimaryCtxRetain)>(dlsym(lib, "cuDevicePrimaryCtxRetain"));
  auto set_current = reinterpret_cast<decltype(&cuCtxSetCurrent)>(dlsym(lib, "cuCtxSetCurrent"));
  auto alloc = reinterpret_cast<decltype(&cuMemAlloc)>(dlsym(lib, "cuMemAlloc_v2"));
  CUcontext ctx = nullptr;
  CUdeviceptr weights = 0;
  if (!init || !encode || !retain || !set_current || !alloc || init(0) != CUDA_SUCCESS ||
      retain(&ctx, 0) != CUDA_SUCCESS || set_current(ctx) != CUDA_SUCCESS ||
      alloc(&weights, 2 * 128 * 768 * 2048 * 2 + (1 << 20)) != CUDA_SUCCESS) {
    std::puts("driver init failed");
    return 1;
  }
  const cuuint64_t H = 2048, I = 768, E = 128;
  const cuuint64_t dims[4] = {H, I, 2, E};
  const cuuint64_t strides[3] = {H * 2, I * H * 2, 2 * I * H * 2};
  const cuuint32_t box[4] = {64, 128, 1, 1}, unit[4] = {1, 1, 1, 1};
  std::vector<double> ns;
  CUtensorMap map;
  for (int batch = 0; batch < 100; ++batch) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000; ++i) {
      // A different (16-byte aligned) base each time, as per-layer weights are.
      void *base = reinterpret_cast<void *>(weights + 256ull * ((i + batch) % 4096));
      if (encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, base, dims, strides, box, unit,
                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                 CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
        std::puts("encode failed");
        return 1;
      }
    }
    ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0)
                     .count() /
                 1000);
  }
  std::sort(ns.begin(), ns.end());
  std::printf("cuTensorMapEncodeTiled: median %.0f ns, min %.0f ns per encode\n", ns[50], ns[0]);
  return 0;
}
