// Shared by the tests and `moejit bench`: random inputs, routing, the fp64
// CPU reference, error metrics and a device buffer. Not part of the library.
#pragma once

#include "common/safe_fs.h"
#include "moejit/moejit.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moejit::testkit {

uint16_t floatToBf16(float v);
float bf16ToFloat(uint16_t v);
uint16_t floatToHalf(float v);
float halfToFloat(uint16_t v);

/// A host tensor in the workload dtype, as raw bytes.
struct HostTensor {
  DType dtype = DType::BF16;
  std::vector<uint8_t> bytes;
  size_t size() const { return bytes.size() / dtype_bytes(dtype); }
  double at(size_t i) const;
};

/// Uniform in [-scale, scale], rounded to dtype; deterministic per seed;
/// filled by several threads.
HostTensor randomTensor(DType dtype, size_t count, float scale, uint64_t seed);
/// Decodes a device copy of y.
std::vector<double> toDoubles(const HostTensor &t);

struct Routing {
  std::vector<int32_t> index; ///< [T, k]
  std::vector<float> weights; ///< [T, k]
};
/// Each token picks k distinct experts uniformly (past `experts` slots,
/// each expert once per round); weights are a softmax of random logits (the
/// benchmark's routing).
Routing randomRouting(int64_t tokens, int k, int experts, uint64_t seed);

/// fp64 reference of the whole operation (intermediate not rounded).
std::vector<double> referenceMoe(const MoeShape &shape, int64_t tokens, const HostTensor &x,
                                 const HostTensor &gate_up, const HostTensor &down,
                                 const Routing &routing);

/// ||out - ref|| / ||ref||; infinity if any value of out is not finite.
double relativeError(const std::vector<double> &out, const std::vector<double> &ref);

/// Relative-error limit of DESIGN.md §1 for the dtype.
double errorLimit(DType dtype);

/// True when a CUDA device is usable; otherwise `why` says why not.
bool gpuAvailable(std::string &why);

/// Device memory in the primary context of device 0 (tests and bench only).
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  ~DeviceBuffer();
  template <typename T> static DeviceBuffer from(const std::vector<T> &v) {
    DeviceBuffer b(v.size() * sizeof(T));
    b.upload(v.data(), v.size() * sizeof(T));
    return b;
  }
  void upload(const void *src, size_t bytes, size_t offset = 0);
  void download(void *dst, size_t bytes) const;
  void fill(uint8_t byte);
  void *get() const { return reinterpret_cast<void *>(ptr_); }
  size_t bytes() const { return bytes_; }

private:
  unsigned long long ptr_ = 0;
  size_t bytes_ = 0;
};

/// The arguments of one run over device buffers (workspace: all of it).
MoeArgs moeArgs(const DeviceBuffer &x, const DeviceBuffer &gate_up, const DeviceBuffer &down,
                const DeviceBuffer &index, const DeviceBuffer &weights, const DeviceBuffer &y,
                int64_t tokens, const DeviceBuffer &workspace);

/// A fresh directory under the system's temporary folder, removed with
/// everything in it (read-only parts too) when the object goes.
class TempDir {
public:
  explicit TempDir(const std::string &prefix = "moejit-test");
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  std::string path;
};

/// Sets (or unsets, for nullptr) a variable for one scope, restoring it after.
class EnvVar {
public:
  EnvVar(const char *name, const char *value);
  ~EnvVar();
  EnvVar(const EnvVar &) = delete;
  EnvVar &operator=(const EnvVar &) = delete;

private:
  const char *name_;
  std::optional<std::string> old_;
};

/// The folder holding `path`, opened (and made) as the cache opens folders
/// (throws if it cannot be).
safefs::Dir folderOf(const std::string &path);
/// The last component of `path`.
std::string baseName(const std::string &path);
/// store::writeFileAtomically of `bytes` at `path` (folders made); false
/// with `why` set on failure.
bool writeAtomically(const std::string &path, const std::string &bytes, std::string &why);

/// Makes device 0's primary context current (throws if there is none).
void useDevice0();

} // namespace moejit::testkit
