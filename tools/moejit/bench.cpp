// moejit bench: each case is checked against a GPU reference on random data,
// then timed with CUDA events: warm-up, then N runs each preceded by an L2
// flush (a 512 MB memset outside the timed region); the median is reported
// against the floor of DESIGN.md §2.
#include "cli.h"

#include "common/error.h"
#include "driver/driver.h"
#include "runtime/builder.h"
#include "runtime/kernel_set.h"
#include "runtime/launch_sequence.h"
#include "testkit.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace moejit::cli {

namespace {

using testkit::DeviceBuffer;

constexpr double kSustainedFlops = 685e12; // cuBLAS bf16, sustained (DESIGN §2)
constexpr double kReadBandwidth = 4.19e12; // DRAM read stream (DESIGN §2)
constexpr size_t kFlushBytes = size_t{512} << 20;

#define BENCH_CU(call) throwIfError(driver::check(driver::loaded().call, #call))

struct Result {
  BenchCase c;
  std::string config;
  double ms = 0, tflops = 0, tbps = 0, floor_ms = 0, error = 0;
  bool correct = false;
};

/// Device copies of random weights and x, shared by the cases of one
/// (dtype, hidden, intermediate, k) and grown as needed.
struct Inputs {
  DeviceBuffer x, gate_up, down;
  int64_t tokens = 0;
  int experts = 0;
};

Inputs &inputsFor(std::map<std::string, Inputs> &pool, const BenchCase &c) {
  const MoeShape &s = c.shape;
  Inputs &in = pool[std::string(dtype_name(s.dtype)) + "/" + std::to_string(s.hidden) + "/" +
                    std::to_string(s.intermediate)];
  if (in.tokens < c.tokens) {
    in.x = DeviceBuffer(0);
    auto x = testkit::randomTensor(s.dtype, c.tokens * s.hidden, 1.0f, 1);
    in.x = DeviceBuffer::from(x.bytes);
    in.tokens = c.tokens;
  }
  if (in.experts < s.experts) {
    in.gate_up = DeviceBuffer(0);
    in.down = DeviceBuffer(0);
    const size_t gu = size_t(s.experts) * 2 * s.intermediate * s.hidden;
    const size_t dn = size_t(s.experts) * s.hidden * s.intermediate;
    in.gate_up = DeviceBuffer::from(
        testkit::randomTensor(s.dtype, gu, 1.0f / std::sqrt(float(s.hidden)), 2).bytes);
    in.down = DeviceBuffer::from(
        testkit::randomTensor(s.dtype, dn, 1.0f / std::sqrt(float(s.intermediate)), 3).bytes);
    in.experts = s.experts;
  }
  return in;
}

/// fp32 y of the plain GPU reference kernels.
std::vector<float> gpuReference(const BenchCase &c, const MoeArgs &a, const std::string &arch) {
  using codegen::KernelKind;
  static store::CubinStore store;
  const codegen::KernelSpec specs[] = {{KernelKind::ReferenceH, c.shape, {}},
                                       {KernelKind::ReferenceY, c.shape, {}}};
  auto built = unwrapOrThrow(runtime::buildKernels(specs, arch, store));
  const int64_t T = c.tokens;
  DeviceBuffer h(sizeof(float) * T * c.shape.k * c.shape.intermediate);
  DeviceBuffer y(sizeof(float) * T * c.shape.hidden);
  CUmodule modules[2] = {nullptr, nullptr};
  auto reference_h = unwrapOrThrow(runtime::loadKernel(built[0], modules[0]));
  auto reference_y = unwrapOrThrow(runtime::loadKernel(built[1], modules[1]));
  throwIfError(
      runtime::enqueueReference(c.shape, reference_h, reference_y, a, h.get(), y.get(), nullptr));
  BENCH_CU(cuCtxSynchronize());
  for (CUmodule m : modules)
    BENCH_CU(cuModuleUnload(m));
  std::vector<float> out(T * c.shape.hidden);
  y.download(out.data(), out.size() * sizeof(float));
  return out;
}

double compare(const BenchCase &c, const DeviceBuffer &y, const std::vector<float> &ref) {
  testkit::HostTensor out;
  out.dtype = c.shape.dtype;
  out.bytes.resize(c.tokens * c.shape.hidden * dtype_bytes(c.shape.dtype));
  y.download(out.bytes.data(), out.bytes.size());
  return testkit::relativeError(testkit::toDoubles(out),
                                std::vector<double>(ref.begin(), ref.end()));
}

/// Checks each kernel set of `sets` on case `c`, then times them with their
/// runs interleaved (A B A B ...) so that the card's clock drift hits them
/// alike; one Result per set.
std::vector<Result> runCase(const std::vector<const KernelSet *> &sets, const std::string &arch,
                            std::map<std::string, Inputs> &pool, const BenchCase &c, int runs) {
  const MoeShape &s = c.shape;
  const int64_t T = c.tokens;
  Inputs &in = inputsFor(pool, c);
  const testkit::Routing routing = testkit::randomRouting(T, s.k, s.experts, 7 + T);
  DeviceBuffer index = DeviceBuffer::from(routing.index);
  DeviceBuffer weights = DeviceBuffer::from(routing.weights);
  DeviceBuffer y(T * s.hidden * dtype_bytes(s.dtype));
  size_t workspace_bytes = 0;
  for (const KernelSet *k : sets)
    workspace_bytes = std::max(workspace_bytes, k->workspace_bytes(T));
  DeviceBuffer workspace(workspace_bytes);
  const MoeArgs a = testkit::moeArgs(in.x, in.gate_up, in.down, index, weights, y, T, workspace);

  std::vector<Result> results(sets.size());
  std::vector<float> reference;
  for (size_t j = 0; j < sets.size(); ++j) {
    Result &r = results[j];
    r.c = c;
    y.fill(0xff); // NaN in every dtype: an unwritten element fails the check
    sets[j]->run(a, nullptr);
    BENCH_CU(cuCtxSynchronize());
    if (reference.empty())
      reference = gpuReference(c, a, arch);
    r.error = compare(c, y, reference);
    r.correct = r.error < testkit::errorLimit(s.dtype);
  }

  CUstream stream;
  BENCH_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  DeviceBuffer flush(kFlushBytes);
  const size_t n = sets.size();
  std::vector<CUevent> start(runs * n), stop(runs * n);
  for (size_t i = 0; i < start.size(); ++i) {
    BENCH_CU(cuEventCreate(&start[i], CU_EVENT_DEFAULT));
    BENCH_CU(cuEventCreate(&stop[i], CU_EVENT_DEFAULT));
  }
  for (int i = 0; i < 5; ++i)
    for (const KernelSet *k : sets)
      k->run(a, stream);
  for (int i = 0; i < runs; ++i)
    for (size_t j = 0; j < n; ++j) {
      BENCH_CU(cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(flush.get()), i & 0xff, kFlushBytes,
                               stream));
      BENCH_CU(cuEventRecord(start[i * n + j], stream));
      sets[j]->run(a, stream);
      BENCH_CU(cuEventRecord(stop[i * n + j], stream));
    }
  BENCH_CU(cuStreamSynchronize(stream));
  std::vector<std::vector<float>> times(n);
  for (int i = 0; i < runs; ++i)
    for (size_t j = 0; j < n; ++j) {
      float ms = 0;
      BENCH_CU(cuEventElapsedTime(&ms, start[i * n + j], stop[i * n + j]));
      times[j].push_back(ms);
    }
  for (size_t i = 0; i < start.size(); ++i) {
    BENCH_CU(cuEventDestroy(start[i]));
    BENCH_CU(cuEventDestroy(stop[i]));
  }
  BENCH_CU(cuStreamDestroy(stream));

  const std::set<int32_t> hit(routing.index.begin(), routing.index.end());
  const double elem = dtype_bytes(s.dtype);
  const double flop = 6.0 * T * s.k * s.hidden * s.intermediate;
  const double bytes = hit.size() * 3.0 * s.hidden * s.intermediate * elem +
                       2.0 * T * s.hidden * elem + T * s.k * 8.0;
  for (size_t j = 0; j < n; ++j) {
    Result &r = results[j];
    std::sort(times[j].begin(), times[j].end());
    r.ms = times[j][runs / 2];
    r.tflops = flop / (r.ms * 1e-3) / 1e12;
    r.tbps = bytes / (r.ms * 1e-3) / 1e12;
    r.floor_ms = std::max(flop / kSustainedFlops, bytes / kReadBandwidth) * 1e3;
  }
  return results;
}

void writeJson(const std::string &path, const std::string &device,
               const std::vector<Result> &results) {
  llvm::json::Array cases;
  for (const Result &r : results)
    cases.push_back(llvm::json::Object{{"name", r.c.name},
                                       {"config", r.config},
                                       {"tokens", r.c.tokens},
                                       {"shape", shapeText(r.c.shape)},
                                       {"ms", r.ms},
                                       {"tflops", r.tflops},
                                       {"tbps", r.tbps},
                                       {"floor_ms", r.floor_ms},
                                       {"pct_of_floor", 100 * r.floor_ms / r.ms},
                                       {"rel_error", r.error},
                                       {"correct", r.correct}});
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (ec)
    throw Error(ErrorCode::InvalidArgument, "cannot write " + path + ": " + ec.message());
  out << llvm::json::Value(llvm::json::Object{{"device", device}, {"cases", std::move(cases)}});
}

/// The kernel set of `c` with one GEMM plan for every bucket, bypassing the
/// planner (for comparing configs).
std::shared_ptr<const KernelSet> withPlan(const BenchCase &c, const std::string &arch,
                                          const runtime::GemmPlan &g) {
  static store::CubinStore store;
  static const driver::Device device = unwrapOrThrow(driver::Device::open(0));
  runtime::Plan plan;
  plan.buckets.assign(runtime::kBucketCount, g);
  auto built =
      unwrapOrThrow(runtime::buildKernels(runtime::kernelSpecs(c.shape, plan), arch, store));
  return unwrapOrThrow(runtime::KernelSetImpl::load(device, c.shape, plan, std::move(built)));
}

/// "G1:G2", each a tile config suffix (bm128_bn64_s3_w2x2), for `arch`.
runtime::GemmPlan parsePlan(const std::string &text, const std::string &arch) {
  const auto colon = text.find(':');
  if (colon == std::string::npos)
    throw Error(ErrorCode::InvalidArgument, "--config takes GEMM1:GEMM2 tile configs");
  runtime::GemmPlan g{unwrapOrThrow(codegen::parseTileConfig(text.substr(0, colon))),
                      unwrapOrThrow(codegen::parseTileConfig(text.substr(colon + 1)))};
  throwIfError(runtime::checkGemmPlan(g, arch));
  return g;
}

} // namespace

int runBench(Args args) {
  const std::optional<std::string> json = args.value("--json");
  const int runs = std::stoi(args.value("--runs").value_or("50"));
  const std::vector<std::string> shapes = args.values("--shape");
  const std::vector<std::string> tokens = args.values("--tokens");
  const bool compare_heuristic = args.flag("--compare-heuristic");
  const std::vector<std::string> configs = args.values("--config");
  args.finish();
  if (runs < 1)
    throw Error(ErrorCode::InvalidArgument, "--runs must be at least 1");
  std::vector<BenchCase> cases;
  if (shapes.empty() && tokens.empty()) {
    cases = seedCases();
  } else {
    for (const std::string &t : tokens)
      for (const std::string &s : shapes.empty() ? std::vector<std::string>{""} : shapes)
        cases.push_back({"custom_t" + t, std::stoll(t), parseShape(s)});
  }
  Runtime rt(0);
  testkit::useDevice0();
  std::vector<runtime::GemmPlan> plans;
  for (const std::string &config : configs)
    plans.push_back(parsePlan(config, rt.arch()));
  // --compare-heuristic: the tuned plan (records, shipped tables) and the
  // heuristic's, interleaved run by run.
  std::unique_ptr<Runtime> heuristic;
  std::vector<Runtime *> runtimes{&rt};
  if (compare_heuristic) {
    RuntimeOptions options;
    options.tuning = Tuning::Heuristic;
    heuristic = std::make_unique<Runtime>(0, options);
    runtimes.push_back(heuristic.get());
  }
  std::printf("device: %s (%s), %d runs per case, L2 flushed before each\n",
              rt.device_name().c_str(), rt.arch().c_str(), runs);
  std::printf("%-12s %6s %4s %9s %8s %7s %9s %7s %9s  %-3s %s\n", "case", "T", "E", "ms", "TFLOP/s",
              "TB/s", "floor ms", "%floor", "rel err", "ok", "config");
  std::map<std::string, Inputs> pool;
  std::vector<Result> results;
  bool all_correct = true;
  for (const BenchCase &c : cases) {
    std::vector<std::pair<std::string, std::shared_ptr<const KernelSet>>> sets;
    if (plans.empty()) {
      for (Runtime *runtime : runtimes) {
        auto set = runtime->get(c.shape);
        // "heuristic", "shipped", "tuning" (record) or "autotuned".
        const std::string &source = set->plan_source();
        sets.emplace_back(source.substr(0, source.find(' ')), set);
      }
    }
    for (const runtime::GemmPlan &g : plans)
      sets.emplace_back(g.gemm1.suffix() + ":" + g.gemm2.suffix(), withPlan(c, rt.arch(), g));
    std::vector<const KernelSet *> raw;
    for (const auto &set : sets)
      raw.push_back(set.second.get());
    std::vector<Result> case_results = runCase(raw, rt.arch(), pool, c, runs);
    for (size_t j = 0; j < sets.size(); ++j) {
      Result &r = case_results[j];
      r.config = sets[j].first;
      std::printf("%-12s %6lld %4d %9.4f %8.1f %7.2f %9.4f %6.1f%% %9.2e  %-3s %s\n",
                  c.name.c_str(), static_cast<long long>(c.tokens), c.shape.experts, r.ms, r.tflops,
                  r.tbps, r.floor_ms, 100 * r.floor_ms / r.ms, r.error, r.correct ? "yes" : "NO",
                  r.config.c_str());
      std::fflush(stdout);
      all_correct &= r.correct;
      results.push_back(r);
    }
  }
  if (json)
    writeJson(*json, rt.device_name(), results);
  return all_correct ? 0 : 1;
}

} // namespace moejit::cli
