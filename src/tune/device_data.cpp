#include "tune/device_data.h"

#include "common/error.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

namespace moejit::tune {

llvm::Expected<DeviceMemory> DeviceMemory::allocate(size_t bytes) {
  DeviceMemory m;
  MOEJIT_CU(cuMemAlloc(&m.ptr_, std::max<size_t>(bytes, 256)));
  m.bytes_ = bytes;
  return m;
}

DeviceMemory &DeviceMemory::operator=(DeviceMemory &&other) noexcept {
  if (this != &other) {
    if (ptr_)
      driver::loaded().cuMemFree(ptr_);
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceMemory::~DeviceMemory() {
  if (ptr_)
    driver::loaded().cuMemFree(ptr_);
}

EventPair &EventPair::operator=(EventPair &&other) noexcept {
  if (this != &other) {
    this->~EventPair();
    start = std::exchange(other.start, nullptr);
    stop = std::exchange(other.stop, nullptr);
  }
  return *this;
}

EventPair::~EventPair() {
  if (start)
    driver::loaded().cuEventDestroy(start);
  if (stop)
    driver::loaded().cuEventDestroy(stop);
  start = stop = nullptr;
}

llvm::Error EventPair::create() {
  if (!start)
    MOEJIT_CU(cuEventCreate(&start, CU_EVENT_DEFAULT));
  if (!stop)
    MOEJIT_CU(cuEventCreate(&stop, CU_EVENT_DEFAULT));
  return llvm::Error::success();
}

llvm::Expected<double> EventPair::elapsed() const {
  float ms = 0;
  MOEJIT_CU(cuEventElapsedTime(&ms, start, stop));
  return static_cast<double>(ms);
}

// fp16 through the compiler's _Float16 (GCC 12 has it on x86-64).
uint16_t floatToHalfBits(float v) {
  const _Float16 h = static_cast<_Float16>(v);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

float halfBitsToFloat(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<float>(h);
}

uint16_t floatToBf16BitsTruncated(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return static_cast<uint16_t>(bits >> 16);
}

float bf16BitsToFloat(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float v;
  std::memcpy(&v, &wide, 4);
  return v;
}

llvm::Error fillRandom(DeviceMemory &memory, DType dtype, float scale, uint32_t seed) {
  const size_t elem = dtype_bytes(dtype);
  const size_t count = memory.bytes() / elem;
  const size_t block = std::min<size_t>(count, size_t{1} << 22);
  const float step = std::exp2(std::round(std::log2(scale))) / 8;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> eighths(-8, 8);
  std::vector<char> host(block * elem);
  for (size_t i = 0; i < block; ++i) {
    const float v = static_cast<float>(eighths(rng)) * step;
    if (dtype == DType::FP32)
      std::memcpy(host.data() + 4 * i, &v, 4);
    else {
      const uint16_t bits = dtype == DType::BF16 ? floatToBf16BitsTruncated(v) : floatToHalfBits(v);
      std::memcpy(host.data() + 2 * i, &bits, 2);
    }
  }
  for (size_t at = 0; at < count; at += block) {
    const size_t n = std::min(block, count - at);
    MOEJIT_CU(cuMemcpyHtoD(memory.address() + at * elem, host.data(), n * elem));
  }
  return llvm::Error::success();
}

llvm::Error uploadRouting(DeviceMemory &index, DeviceMemory &weights, int64_t tokens, int k,
                          int experts, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> weight(0.1f, 1.0f);
  std::vector<int32_t> ids(tokens * k);
  std::vector<float> w(tokens * k);
  std::vector<int32_t> all(experts);
  for (int e = 0; e < experts; ++e)
    all[e] = e;
  for (int64_t t = 0; t < tokens; ++t) {
    // A partial shuffle: k distinct experts, uniformly; past `experts`
    // slots (an expert map's share) the shuffle starts over, so every
    // expert comes once before any comes twice.
    for (int j = 0; j < k; ++j) {
      const int at = j % experts;
      std::uniform_int_distribution<int> pick(at, experts - 1);
      std::swap(all[at], all[pick(rng)]);
      ids[t * k + j] = all[at];
      w[t * k + j] = weight(rng) / k;
    }
  }
  MOEJIT_CU(cuMemcpyHtoD(index.address(), ids.data(), ids.size() * sizeof(int32_t)));
  MOEJIT_CU(cuMemcpyHtoD(weights.address(), w.data(), w.size() * sizeof(float)));
  return llvm::Error::success();
}

llvm::Expected<std::vector<float>> downloadAsFloat(const DeviceMemory &memory, DType dtype,
                                                   int64_t count) {
  const size_t elem = dtype_bytes(dtype);
  std::vector<char> raw(count * elem);
  MOEJIT_CU(cuMemcpyDtoH(raw.data(), memory.address(), raw.size()));
  std::vector<float> out(count);
  for (int64_t i = 0; i < count; ++i) {
    if (dtype == DType::FP32) {
      std::memcpy(&out[i], raw.data() + 4 * i, 4);
      continue;
    }
    uint16_t bits;
    std::memcpy(&bits, raw.data() + 2 * i, 2);
    out[i] = dtype == DType::BF16 ? bf16BitsToFloat(bits) : halfBitsToFloat(bits);
  }
  return out;
}

double errorLimit(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return 1e-2;
  case DType::FP16:
    return 5e-3;
  case DType::FP32:
    return 1e-5;
  }
  return 0;
}

} // namespace moejit::tune
