// A weight-stream probe for the T=2048..4096 band (session 42): how near the
// DRAM peak can one persistent CTA per SM stream an expert weight tensor
// [E][R][K] (bf16) through a TMA + mbarrier pipeline, as the wss GEMMs do,
// and what moves it: the box (rows x k elements, swizzled or not), the
// stages in flight, the time a consumer holds a stage (a stand-in for the
// wgmma of one k-step) and two CTAs reading the same tile at once (the
// 64-row tails that share a weight tile with a full row tile). Nothing is
// computed; each stage is waited for, held C cycles and released.
//
// Built here with nvcc (needs only libcuda at run time):
//   nvcc -arch=sm_90a -O3 -std=c++17 -Itemplates tools/bench/stream_probe.cu -lcuda \
//     -o build-gpu/stream_probe
// Output: one line per variant: layout, box, stages, hold cycles per 32 KB, dup, us
// (median of RUNS), GB/s of distinct weight bytes.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"

#define CHECK(x)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));      \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

struct Params {
  int experts, row_blocks, k_steps; // tiles = experts * row_blocks * dup
  int dup;                          // CTAs that read each weight tile
  int stages;
  unsigned stage_bytes;
  long long hold_cycles;
  int bulk_1d; // 1: contiguous bulk copies of stage_bytes instead of boxes
  const char *base;
  int box_k, box_rows;
};

using namespace moejit_dev; // templates/ptx: smem_addr, mbar_*, tma_load_3d

__global__ void __launch_bounds__(64, 1)
    stream(const __grid_constant__ CUtensorMap map, Params p, unsigned long long *sink) {
  extern __shared__ __align__(1024) unsigned char smem[];
  unsigned char *buf = reinterpret_cast<unsigned char *>(
      (reinterpret_cast<unsigned long long>(smem) + 1023) & ~1023ull);
  __shared__ unsigned long long full[16], empty[16];
  if (threadIdx.x == 0) {
    for (int s = 0; s < p.stages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 1);
    }
    fence_mbarrier_init();
  }
  __syncthreads();
  const int tiles = p.experts * p.row_blocks * p.dup;
  if (threadIdx.x == 0) { // producer
    int it = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
      const int w = t / p.dup; // weight tile: expert-major, row block minor
      const int e = w / p.row_blocks, rb = w % p.row_blocks;
      for (int k = 0; k < p.k_steps; ++k, ++it) {
        const int s = it % p.stages;
        mbar_wait(&empty[s], ((it / p.stages) & 1) ^ 1);
        mbar_arrive_expect_tx(&full[s], p.stage_bytes);
        unsigned char *dst = buf + static_cast<size_t>(s) * p.stage_bytes;
        if (p.bulk_1d) {
          const char *src = p.base + ((static_cast<size_t>(w) * p.k_steps + k) * p.stage_bytes);
          asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                       " [%0], [%1], %2, [%3];" ::"r"(smem_addr(dst)),
                       "l"(src), "r"(p.stage_bytes), "r"(smem_addr(&full[s]))
                       : "memory");
        } else {
          tma_load_3d(dst, reinterpret_cast<const TensorMap *>(&map), &full[s], k * p.box_k,
                      rb * p.box_rows, e);
        }
      }
    }
  } else if (threadIdx.x == 32) { // consumer
    int it = 0;
    unsigned long long acc = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x)
      for (int k = 0; k < p.k_steps; ++k, ++it) {
        const int s = it % p.stages;
        mbar_wait(&full[s], (it / p.stages) & 1);
        acc += buf[static_cast<size_t>(s) * p.stage_bytes + (it & 1023)];
        if (p.hold_cycles) {
          const long long t0 = clock64();
          while (clock64() - t0 < p.hold_cycles) {
          }
        }
        mbar_arrive(&empty[s]);
      }
    if (acc == 0x7fffffffffffffffull)
      *sink = acc;
  }
}

int main(int argc, char **argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 15;
  if (runs < 1 || runs > 1000) {
    std::fprintf(stderr, "usage: stream_probe [RUNS, 1..1000]\n");
    return 2;
  }
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# %s, %d SMs\n", prop.name, sms);
  CHECK(cudaFuncSetAttribute(stream, cudaFuncAttributeMaxDynamicSharedMemorySize, 220 * 1024));
  struct Layout {
    const char *name;
    int experts, rows, k;
  };
  // GEMM1 of the seed shape (gate and up: 2 x 768 rows of K=2048) and GEMM2
  // (2048 rows of K=768).
  const Layout layouts[] = {{"gemm1", 128, 1536, 2048}, {"gemm2", 128, 2048, 768}};
  size_t most = 0;
  for (const Layout &l : layouts)
    most = std::max(most, size_t(l.experts) * l.rows * l.k * 2);
  char *w = nullptr;
  CHECK(cudaMalloc(&w, most));
  CHECK(cudaMemset(w, 1, most));
  unsigned long long *sink = nullptr;
  CHECK(cudaMalloc(&sink, 8));
  char *flush = nullptr;
  const size_t flush_bytes = 256u << 20;
  CHECK(cudaMalloc(&flush, flush_bytes));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  struct Box {
    int k, rows;
    bool bulk;
  };
  const Box boxes[] = {{64, 256, false}, {64, 128, false}, {128, 128, false},
                       {256, 64, false}, {64, 256, true}};
  const int stage_counts[] = {2, 3, 4, 6, 8, 12};
  const long long holds[] = {0, 1500};
  const int dups[] = {1, 2};
  for (const Layout &l : layouts)
    for (const Box &bx : boxes)
      for (int stages : stage_counts)
        for (long long hold : holds)
          for (int dup : dups) {
            const unsigned stage_bytes = unsigned(bx.k) * bx.rows * 2;
            if (size_t(stage_bytes) * stages + 1024 > 220 * 1024 || l.k % bx.k || l.rows % bx.rows)
              continue;
            if (dup == 2 && hold == 0)
              continue;
            CUtensorMap map{};
            const cuuint64_t dims[3] = {cuuint64_t(l.k), cuuint64_t(l.rows), cuuint64_t(l.experts)};
            const cuuint64_t strides[2] = {cuuint64_t(l.k) * 2, cuuint64_t(l.k) * l.rows * 2};
            const cuuint32_t box[3] = {cuuint32_t(bx.k), cuuint32_t(bx.rows), 1};
            const cuuint32_t estr[3] = {1, 1, 1};
            CUresult r = cuTensorMapEncodeTiled(
                &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, w, dims, strides, box, estr,
                CU_TENSOR_MAP_INTERLEAVE_NONE,
                bx.k == 64 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
            if (r != CUDA_SUCCESS) {
              std::printf("%s box %dx%d encode failed %d\n", l.name, bx.rows, bx.k, int(r));
              continue;
            }
            Params p{};
            p.experts = l.experts;
            p.row_blocks = l.rows / bx.rows;
            p.k_steps = l.k / bx.k;
            p.dup = dup;
            p.stages = stages;
            p.stage_bytes = stage_bytes;
            p.hold_cycles = hold * stage_bytes / 32768; // per 32 KB: the same work per byte
            p.bulk_1d = bx.bulk;
            p.base = w;
            p.box_k = bx.k;
            p.box_rows = bx.rows;
            std::vector<float> us;
            for (int i = 0; i < runs + 1; ++i) {
              CHECK(cudaMemsetAsync(flush, i, flush_bytes));
              CHECK(cudaEventRecord(a));
              stream<<<sms, 64, stage_bytes * stages + 1024>>>(map, p, sink);
              CHECK(cudaEventRecord(b));
              CHECK(cudaEventSynchronize(b));
              float ms = 0;
              CHECK(cudaEventElapsedTime(&ms, a, b));
              if (i > 0)
                us.push_back(ms * 1000);
            }
            CHECK(cudaGetLastError());
            std::sort(us.begin(), us.end());
            const double med = us[us.size() / 2];
            const double bytes = double(l.experts) * l.rows * l.k * 2;
            std::printf("%s box %3dx%-3d %s stages %2d hold %4lld dup %d  %8.1f us  %6.0f GB/s\n",
                        l.name, bx.rows, bx.k, bx.bulk ? "bulk1d" : (bx.k == 64 ? "sw128 " : "plain "),
                        stages, hold, dup, med, bytes / med / 1e3);
            std::fflush(stdout);
          }
  return 0;
}
