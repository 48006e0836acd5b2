// Device buffers, random inputs and result checks for the autotuner (the
// library's own: the test kit is not part of it).
#pragma once

#include "driver/driver.h"
#include "moejit/moejit.hpp"

#include <llvm/Support/Error.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace moejit::tune {

/// cuMemAlloc'd memory, freed on destruction.
class DeviceMemory {
public:
  DeviceMemory() = default;
  static llvm::Expected<DeviceMemory> allocate(size_t bytes);
  DeviceMemory(DeviceMemory &&other) noexcept { *this = std::move(other); }
  DeviceMemory &operator=(DeviceMemory &&other) noexcept;
  ~DeviceMemory();
  void *get() const { return reinterpret_cast<void *>(ptr_); }
  CUdeviceptr address() const { return ptr_; }
  size_t bytes() const { return bytes_; }

private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

/// A start/stop event pair, created on first use.
struct EventPair {
  CUevent start = nullptr, stop = nullptr;
  EventPair() = default;
  EventPair(EventPair &&other) noexcept { *this = std::move(other); }
  EventPair &operator=(EventPair &&other) noexcept;
  ~EventPair();
  llvm::Error create();
  llvm::Expected<double> elapsed() const; ///< ms
};

/// fp16 bits of `v` rounded to nearest even, and back.
uint16_t floatToHalfBits(float v);
float halfBitsToFloat(uint16_t bits);
/// bf16 bits of `v` by truncation (exact for values bf16 holds), and back.
uint16_t floatToBf16BitsTruncated(float v);
float bf16BitsToFloat(uint16_t bits);

/// Fills `memory` with random values of `dtype` times `scale`. The values
/// are multiples of 1/8 in [-1, 1] times a power of two near `scale`, so
/// they are exact in bf16, fp16 and fp32 alike. A random block is repeated
/// over large buffers: filling gigabytes from the host stays fast.
llvm::Error fillRandom(DeviceMemory &memory, DType dtype, float scale, uint32_t seed);

/// Uploads a routing of `tokens` tokens: k distinct experts per token (each
/// once per round where k > experts) and positive weights, into the first
/// tokens*k entries of the buffers.
llvm::Error uploadRouting(DeviceMemory &index, DeviceMemory &weights, int64_t tokens, int k,
                          int experts, uint32_t seed);

/// The first `count` elements of a `dtype` buffer, as floats.
llvm::Expected<std::vector<float>> downloadAsFloat(const DeviceMemory &memory, DType dtype,
                                                   int64_t count);

/// ||out - ref|| / ||ref||; infinity if `out` has a non-finite value.
template <typename T> double relativeError(const std::vector<T> &out, const std::vector<T> &ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < out.size() && i < ref.size(); ++i) {
    if (!std::isfinite(out[i]))
      return INFINITY;
    const double d = static_cast<double>(out[i]) - static_cast<double>(ref[i]);
    num += d * d;
    den += static_cast<double>(ref[i]) * static_cast<double>(ref[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}
/// The largest relative error a correct kernel of `dtype` may show against
/// the fp32 reference (as the tests use).
double errorLimit(DType dtype);

} // namespace moejit::tune
