#include "testkit.h"

#include "common/error.h"
#include "driver/driver.h"
#include "store/atomic_file.h"
#include "tune/device_data.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>

namespace moejit::testkit {

uint16_t floatToBf16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if (std::isnan(v))
    return 0x7fc0;
  bits += 0x7fff + ((bits >> 16) & 1); // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

float bf16ToFloat(uint16_t v) { return tune::bf16BitsToFloat(v); }

uint16_t floatToHalf(float v) { return tune::floatToHalfBits(v); }

float halfToFloat(uint16_t v) { return tune::halfBitsToFloat(v); }

double HostTensor::at(size_t i) const {
  switch (dtype) {
  case DType::BF16: {
    uint16_t v;
    std::memcpy(&v, bytes.data() + 2 * i, 2);
    return bf16ToFloat(v);
  }
  case DType::FP16: {
    uint16_t v;
    std::memcpy(&v, bytes.data() + 2 * i, 2);
    return halfToFloat(v);
  }
  case DType::FP32: {
    float v;
    std::memcpy(&v, bytes.data() + 4 * i, 4);
    return v;
  }
  }
  return 0;
}

namespace {
/// Runs body(begin, end) over [0, n) on all hardware threads.
template <typename F> void parallelFor(size_t n, F body) {
  const size_t threads = std::max(1u, std::thread::hardware_concurrency());
  const size_t chunk = (n + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (size_t b = 0; b < n; b += chunk)
    pool.emplace_back(body, b, std::min(n, b + chunk));
  for (auto &t : pool)
    t.join();
}
} // namespace

HostTensor randomTensor(DType dtype, size_t count, float scale, uint64_t seed) {
  HostTensor t;
  t.dtype = dtype;
  t.bytes.resize(count * dtype_bytes(dtype));
  parallelFor(count, [&](size_t begin, size_t end) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + begin * 0xBF58476D1CE4E5B9ull + 1;
    for (size_t i = begin; i < end; ++i) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17; // xorshift64
      const float v = (static_cast<float>(s >> 40) / 16777216.0f * 2 - 1) * scale;
      if (dtype == DType::FP32) {
        std::memcpy(t.bytes.data() + 4 * i, &v, 4);
      } else {
        const uint16_t h = dtype == DType::BF16 ? floatToBf16(v) : floatToHalf(v);
        std::memcpy(t.bytes.data() + 2 * i, &h, 2);
      }
    }
  });
  return t;
}

std::vector<double> toDoubles(const HostTensor &t) {
  std::vector<double> out(t.size());
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = t.at(i);
  return out;
}

Routing randomRouting(int64_t tokens, int k, int experts, uint64_t seed) {
  Routing r;
  r.index.resize(tokens * k);
  r.weights.resize(tokens * k);
  std::mt19937_64 rng(seed);
  std::vector<int> perm(experts);
  std::normal_distribution<float> logit(0.f, 1.f);
  for (int64_t t = 0; t < tokens; ++t) {
    // Partial Fisher-Yates: k distinct experts; past `experts` slots (an
    // expert map's share) it starts over, each expert once per round.
    std::iota(perm.begin(), perm.end(), 0);
    float sum = 0;
    for (int j = 0; j < k; ++j) {
      const int at = j % experts;
      std::uniform_int_distribution<int> pick(at, experts - 1);
      std::swap(perm[at], perm[pick(rng)]);
      r.index[t * k + j] = perm[at];
    }
    for (int j = 0; j < k; ++j)
      sum += (r.weights[t * k + j] = std::exp(logit(rng)));
    for (int j = 0; j < k; ++j)
      r.weights[t * k + j] /= sum;
  }
  return r;
}

std::vector<double> referenceMoe(const MoeShape &s, int64_t tokens, const HostTensor &x,
                                 const HostTensor &gate_up, const HostTensor &down,
                                 const Routing &routing) {
  const int H = s.hidden, I = s.intermediate;
  std::vector<double> y(tokens * H, 0.0);
  parallelFor(tokens, [&](size_t begin, size_t end) {
    std::vector<double> xr(H), h(I);
    for (size_t t = begin; t < end; ++t) {
      for (int c = 0; c < H; ++c)
        xr[c] = x.at(t * H + c);
      for (int j = 0; j < s.k; ++j) {
        const int e = routing.index[t * s.k + j];
        if (e < 0 || e >= s.experts)
          continue;
        for (int i = 0; i < I; ++i) {
          double g = 0, u = 0;
          const size_t grow = (static_cast<size_t>(e) * 2 * I + i) * H;
          const size_t urow = (static_cast<size_t>(e) * 2 * I + I + i) * H;
          for (int c = 0; c < H; ++c) {
            g += xr[c] * gate_up.at(grow + c);
            u += xr[c] * gate_up.at(urow + c);
          }
          h[i] = g / (1 + std::exp(-g)) * u;
        }
        const double w = routing.weights[t * s.k + j];
        for (int n = 0; n < H; ++n) {
          double acc = 0;
          const size_t drow = (static_cast<size_t>(e) * H + n) * I;
          for (int i = 0; i < I; ++i)
            acc += down.at(drow + i) * h[i];
          y[t * H + n] += w * acc;
        }
      }
    }
  });
  return y;
}

// One definition of the metric and the limits: the autotuner's.
double relativeError(const std::vector<double> &out, const std::vector<double> &ref) {
  return tune::relativeError(out, ref);
}

double errorLimit(DType dtype) { return tune::errorLimit(dtype); }

bool gpuAvailable(std::string &why) {
  auto api = driver::api();
  if (!api) {
    why = errorMessage(api.takeError());
    return false;
  }
  if (driver::deviceCount() == 0) {
    why = "the CUDA driver sees no device";
    return false;
  }
  return true;
}

MoeArgs moeArgs(const DeviceBuffer &x, const DeviceBuffer &gate_up, const DeviceBuffer &down,
                const DeviceBuffer &index, const DeviceBuffer &weights, const DeviceBuffer &y,
                int64_t tokens, const DeviceBuffer &workspace) {
  MoeArgs a;
  a.x = x.get();
  a.gate_up_proj = gate_up.get();
  a.down_proj = down.get();
  a.top_k_index = static_cast<const int32_t *>(index.get());
  a.top_k_weights = static_cast<const float *>(weights.get());
  a.y = y.get();
  a.tokens = tokens;
  a.workspace = workspace.get();
  a.workspace_bytes = workspace.bytes();
  return a;
}

EnvVar::EnvVar(const char *name, const char *value) : name_(name) {
  if (const char *old = std::getenv(name))
    old_ = old;
  if (value)
    ::setenv(name, value, 1);
  else
    ::unsetenv(name);
}

EnvVar::~EnvVar() {
  if (old_)
    ::setenv(name_, old_->c_str(), 1);
  else
    ::unsetenv(name_);
}

safefs::Dir folderOf(const std::string &path) {
  auto dir = safefs::openRoot(llvm::sys::path::parent_path(path).str(), safefs::cacheTrust(),
                              /*create=*/true);
  if (!dir)
    throw Error(ErrorCode::InvalidArgument, errorMessage(dir.takeError()));
  return std::move(**dir);
}

std::string baseName(const std::string &path) { return llvm::sys::path::filename(path).str(); }

bool writeAtomically(const std::string &path, const std::string &bytes, std::string &why) {
  store::WriteError error;
  const bool ok = store::writeFileAtomically(folderOf(path), baseName(path), bytes, error);
  why = error.why;
  return ok;
}

TempDir::TempDir(const std::string &prefix) {
  llvm::SmallString<128> p;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(prefix, p))
    throw Error(ErrorCode::Internal, "cannot create a temporary directory: " + ec.message());
  path = std::string(p);
}

TempDir::~TempDir() {
  // A test may leave read-only directories behind.
  std::system(("chmod -R u+rwX '" + path + "' 2>/dev/null").c_str());
  llvm::sys::fs::remove_directories(path);
}

void useDevice0() {
  static auto device = unwrapOrThrow(driver::Device::open(0));
  throwIfError(device.makeCurrent());
}

#define TK_CHECK(call) throwIfError(driver::check(driver::loaded().call, #call))

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  useDevice0();
  if (bytes)
    TK_CHECK(cuMemAlloc(&ptr_, bytes));
}
DeviceBuffer::DeviceBuffer(DeviceBuffer &&o) noexcept
    : ptr_(std::exchange(o.ptr_, 0)), bytes_(std::exchange(o.bytes_, 0)) {}
DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&o) noexcept {
  std::swap(ptr_, o.ptr_);
  std::swap(bytes_, o.bytes_);
  return *this;
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr_)
    driver::loaded().cuMemFree(ptr_);
}
void DeviceBuffer::upload(const void *src, size_t bytes, size_t offset) {
  if (bytes)
    TK_CHECK(cuMemcpyHtoD(ptr_ + offset, src, bytes));
}
void DeviceBuffer::download(void *dst, size_t bytes) const {
  if (bytes)
    TK_CHECK(cuMemcpyDtoH(dst, ptr_, bytes));
}
void DeviceBuffer::fill(uint8_t byte) {
  if (bytes_)
    TK_CHECK(cuMemsetD8(ptr_, byte, bytes_));
}

} // namespace moejit::testkit
