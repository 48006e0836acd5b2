// moejit warm: compile every kernel of some shapes into the cubin cache, or
// with --tune autotune them on GPU 0 and save tuning records.
#include "cli.h"
#include "progress.h"

#include "api/options.h"
#include "api/warm.h"
#include "common/error.h"
#include "common/settings.h"
#include "driver/driver.h"
#include "nvrtc/compile.h"
#include "runtime/builder.h"
#include "tune/autotune.h"
#include "tune/plan_lookup.h"
#include "tune/record.h"
#include "workload/shape.h"

#include <llvm/Support/JSON.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>

namespace moejit::cli {

namespace {

struct WarmArgs {
  ShapeArgs shapes;
  std::string arch, gpu, cache_dir, buckets, combine;
  bool tune = false, check = false, json = false;
};

/// "13,14" or "10-16" -> bucket numbers (runtime::bucketOf numbering).
std::vector<int> parseBuckets(const std::string &text) {
  std::vector<int> out;
  constexpr int last = runtime::kBucketCount - 1;
  // Every item, empty ones too ("1," or "1,,3"), as --shape reads its
  // items: std::getline dropped a trailing empty one.
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    begin = end + 1;
    const auto dash = item.find('-');
    const int lo = static_cast<int>(parseInteger(item.substr(0, dash), "bucket", 0, last));
    const int hi = dash == std::string::npos
                       ? lo
                       : static_cast<int>(parseInteger(item.substr(dash + 1), "bucket", 0, last));
    if (hi < lo)
      throw UsageError("bucket range '" + item + "' is empty");
    for (int b = lo; b <= hi; ++b)
      out.push_back(b);
  }
  if (out.empty())
    throw UsageError("no buckets in '" + text + "'");
  return out;
}

/// The GPU names of the shipped tuning tables, each once.
std::set<std::string> shippedGpus() {
  std::set<std::string> names;
  for (const tune::TuningRecord &r : tune::shippedRecords())
    names.insert(r.gpu);
  return names;
}

/// Where the plans api::plansToWarm warms come from, for people: the
/// heuristic's always, then the tuned one of `gpu` or, with no GPU named,
/// every shipped table of the workload for `arch` (plansToWarm's order).
std::vector<std::string> planSources(const MoeShape &shape, const Arch &arch,
                                     const std::string &gpu, const std::string &root) {
  std::vector<std::string> sources{"heuristic"};
  if (!gpu.empty()) {
    const std::string source = tune::choosePlan(shape, arch, gpu, root).source;
    if (source.rfind("shipped table", 0) == 0)
      sources.push_back("shipped table for " + gpu);
    else if (source.rfind("tuning record", 0) == 0)
      sources.push_back(source + " (" + gpu + ")");
    else
      sources.front() += " (no tuning record or shipped table for " + gpu + ")";
    return sources;
  }
  const std::string id = workload::workloadId(shape);
  for (const tune::TuningRecord &r : tune::shippedRecords())
    if (r.workload_id == id && r.arch == arch.name()) {
      auto plan = tune::planFromRecord(r, shape, arch);
      if (plan)
        sources.push_back("shipped table for " + r.gpu);
      else
        llvm::consumeError(plan.takeError());
    }
  if (sources.size() == 1)
    sources.front() += " (no shipped table for this workload on " + arch.name() + ")";
  return sources;
}

void printTuning(const tune::TuningRecord &r, const std::string &path) {
  std::printf("  tuned in %.1f s: %d configs, %d failed; record %s\n", r.tuning_seconds,
              r.candidates, r.failed, path.c_str());
  std::printf("  %6s %-28s %-28s %9s %9s %7s\n", "T", "gemm1", "gemm2", "ms", "heur. ms", "gain");
  for (const tune::BucketRecord &b : r.buckets) {
    if (b.ms <= 0)
      continue;
    std::printf("  %6lld %-28s %-28s %9.4f %9.4f %6.1f%%\n", static_cast<long long>(b.tokens),
                b.choice.gemm1.suffix().c_str(), b.choice.gemm2.suffix().c_str(), b.ms,
                b.heuristic_ms, b.heuristic_ms > 0 ? 100 * (b.heuristic_ms / b.ms - 1) : 0.0);
  }
}

llvm::json::Object tuningJson(const tune::TuningRecord &r, const std::string &path) {
  llvm::json::Array buckets;
  for (const tune::BucketRecord &b : r.buckets)
    if (b.ms > 0)
      buckets.push_back(llvm::json::Object{{"tokens", b.tokens},
                                           {"gemm1", b.choice.gemm1.suffix()},
                                           {"gemm2", b.choice.gemm2.suffix()},
                                           {"ms", b.ms},
                                           {"heuristic_ms", b.heuristic_ms}});
  return llvm::json::Object{{"record", path},
                            {"seconds", r.tuning_seconds},
                            {"candidates", r.candidates},
                            {"failed", r.failed},
                            {"buckets", std::move(buckets)}};
}

/// Opens GPU 0 for a warm that needs it: with --tune, or without --arch to
/// take its target from.
driver::Device openDevice(bool tune) {
  auto device = driver::Device::open(0);
  if (device)
    return std::move(*device);
  const std::string why = errorMessage(device.takeError());
  if (tune)
    throw Error(ErrorCode::NoDevice, "--tune needs GPU 0: " + why);
  throw Error(ErrorCode::NoDevice, why + "; without a GPU, pass --arch (e.g. --arch sm_90a) to "
                                         "say which target to compile for");
}

int runWarm(const WarmArgs &a) {
  // Every setting the runtime will read, before anything runs: a bad
  // MOEJIT_TUNING passed the warm and failed the application's Runtime, and
  // a typo in MOEJIT_DEBUG_PIPELINES (a warning) warmed the wrong keys.
  throwIfError(settings::checkAll());
  const std::vector<MoeShape> shapes = shapesOf(a.shapes);
  std::optional<std::string> arch;
  if (!a.arch.empty())
    arch = a.arch;
  std::string gpu = a.gpu;
  store::CubinStore store(cacheRoot(a.cache_dir));
  // --check, or a no-compile deployment: prove the cache complete, compile
  // nothing.
  const bool check = a.check || unwrapOrThrow(settings::readBool("MOEJIT_NO_COMPILE"));
  const Combine combine =
      a.combine.empty() ? unwrapOrThrow(api::combineSetting()) : parse_combine(a.combine);
  unwrapOrThrow(settings::readCount("MOEJIT_COMPILE_THREADS")); // before anything compiles
  if (arch) // before anything is compiled or written
    throwIfError(nvrtc::checkArch(*arch));
  if (check && a.tune)
    throw Error(ErrorCode::InvalidArgument, "--tune compiles: it does not go with "
                                            "MOEJIT_NO_COMPILE=1");
  std::optional<driver::Device> device;
  if (a.tune || !arch) {
    device = openDevice(a.tune);
    const std::string native = nvrtc::archForComputeCapability(device->cc_major, device->cc_minor);
    if (arch && *arch != native)
      throw Error(ErrorCode::InvalidArgument,
                  "--tune runs on GPU 0, which is " + native + ", not " + *arch);
    arch = native;
    // The record --tune writes is GPU 0's (autotune names it so), and the
    // plans warmed are --gpu's: with another name the tuned plans would be
    // saved for one GPU and the kernels compiled for another's.
    if (a.tune && !gpu.empty() && gpu != device->name)
      throw Error(ErrorCode::InvalidArgument,
                  "--tune runs on GPU 0, which is '" + device->name + "', not '" + gpu + "'");
    if (gpu.empty())
      gpu = device->name;
  }
  const Arch target = unwrapOrThrow(Arch::parse(*arch)); // checked above, or the GPU's
  // The root before anything is tuned or compiled: one that cannot be used
  // (not a folder, not trusted, cannot be made) was found out only after
  // every kernel had been compiled into memory. --check makes nothing: a
  // root that does not exist is a cache with nothing in it.
  throwIfError(store.checkRoot(/*create=*/!check));
  // A name that matches no table silently falls back to the heuristic: say
  // so, with the names that do match.
  if (!a.gpu.empty()) {
    const std::set<std::string> known = shippedGpus();
    if (!known.count(a.gpu)) {
      std::string names;
      for (const std::string &n : known)
        names += (names.empty() ? "'" : ", '") + n + "'";
      std::fprintf(stderr,
                   "moejit: warning: --gpu '%s' matches no shipped tuning table (shipped tables "
                   "are for %s); its tuned plans can only come from tuning records in the cache "
                   "root\n",
                   a.gpu.c_str(), names.empty() ? "no GPU" : names.c_str());
    }
  }
  const bool json = a.json;
  if (!json)
    std::printf("cache root: %s\ntarget: %s%s%s, NVRTC %s\n",
                store.root().empty() ? "(none: memory only)" : store.root().c_str(), arch->c_str(),
                gpu.empty() ? "" : " on ", gpu.c_str(), nvrtc::version().c_str());
  // --json keeps stdout for the document: progress goes to stderr.
  ProgressLine progress(json ? stderr : stdout);
  std::map<std::string, std::vector<std::string>> not_saved; // why -> kernels
  size_t total = 0;
  std::vector<std::string> missing;
  // Each shape's plans (and tuning, which its plans then use) first; then
  // every shape's kernels in one build, so that NVRTC programs group across
  // shapes; then each shape's table.
  std::vector<llvm::json::Object> shape_jsons;
  std::vector<std::string> headers;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const MoeShape &shape = shapes[i];
    const std::vector<std::string> sources = planSources(shape, target, gpu, store.root());
    std::string plans;
    for (const std::string &s : sources)
      plans += (plans.empty() ? "" : ", ") + s;
    headers.push_back("[" + std::to_string(i + 1) + "/" + std::to_string(shapes.size()) + "] " +
                      shapeText(shape) + "  (workload " + workload::workloadId(shape) + ")");
    if (json) {
      progress.note(headers.back());
    } else {
      std::printf("\n%s\n  plans: %s\n", headers.back().c_str(), plans.c_str());
      std::fflush(stdout);
    }
    llvm::json::Object shape_json{{"shape", shapeText(shape)},
                                  {"workload_id", workload::workloadId(shape)},
                                  {"plans", llvm::json::Array(sources)}};
    if (a.tune) {
      throwIfError(tune::makeRecordFolder(store.root(), workload::workloadId(shape), device->name,
                                          version()));
      tune::TuneOptions options;
      if (!a.buckets.empty())
        options.buckets = parseBuckets(a.buckets);
      // A failed candidate stays on screen; the stages and buckets are
      // summed up by the table after.
      options.progress = [&progress](const std::string &line) {
        if (line.rfind("failed", 0) == 0)
          progress.note("  " + line);
        else
          progress.update("  " + line);
      };
      const tune::TuningRecord record =
          unwrapOrThrow(tune::autotune(*device, target, shape, store, options));
      progress.clear();
      throwIfError(tune::saveRecord(store.root(), record));
      const std::string path =
          tune::recordPath(store.root(), record.workload_id, record.gpu, record.moejit_version);
      if (json)
        shape_json["tuning"] = tuningJson(record, path);
      else
        printTuning(record, path);
    }
    shape_jsons.push_back(std::move(shape_json));
  }
  const auto start = std::chrono::steady_clock::now();
  auto built = api::warmShapes(shapes, *arch, gpu, store, combine, check, kernelReporter(progress));
  progress.clear();
  const std::vector<std::vector<runtime::BuildResult>> per_shape = unwrapOrThrow(std::move(built));
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  llvm::json::Array shapes_json;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::vector<runtime::BuildResult> &results = per_shape[i];
    if (!json) {
      if (shapes.size() > 1)
        std::printf("\n%s\n", headers[i].c_str());
      std::printf("  %-64s %5s %6s %8s %10s\n", "kernel", "regs", "spill", "smem", "compile");
    }
    llvm::json::Array kernels_json;
    for (const runtime::BuildResult &r : results) {
      const runtime::BuiltKernel &b = r.kernel;
      if (!r.ok()) { // only a CacheMiss comes back: --check
        if (!json)
          std::printf("  %-64s %37s\n", b.spec.name().c_str(), "MISSING");
        kernels_json.push_back(llvm::json::Object{{"name", b.spec.name()}, {"status", "missing"}});
        missing.push_back(r.error);
        continue;
      }
      // In int64: two ints, whatever a cache entry says.
      const int64_t smem = int64_t{b.entry.meta.static_shared_bytes} + b.spec.dynamicSharedBytes();
      if (!json)
        std::printf("  %-64s %5d %6d %8lld %10s\n", b.spec.name().c_str(), b.entry.meta.registers,
                    b.entry.meta.spill_bytes, static_cast<long long>(smem),
                    b.from_cache ? "cached" : compileTime(b).c_str());
      llvm::json::Object k{{"name", b.spec.name()},
                           {"status", b.from_cache ? "cached" : "compiled"},
                           {"registers", b.entry.meta.registers},
                           {"spill_bytes", b.entry.meta.spill_bytes},
                           {"shared_bytes", smem},
                           {"compile_ms", b.from_cache ? 0.0 : b.entry.meta.compile_ms},
                           {"program_kernels", b.program_kernels}};
      if (!b.not_saved.empty()) {
        not_saved[b.not_saved].push_back(b.spec.name());
        k["not_saved"] = b.not_saved;
      }
      kernels_json.push_back(std::move(k));
    }
    if (!json && shapes.size() > 1)
      std::printf("  %zu kernels\n", results.size());
    shape_jsons[i]["kernels"] = std::move(kernels_json);
    shapes_json.push_back(std::move(shape_jsons[i]));
    total += results.size();
  }
  if (!json)
    std::printf("%s%zu kernels in %.0f ms\n", shapes.size() > 1 ? "\nall shapes: " : "  ", total,
                ms);
  if (json) {
    llvm::json::Array not_saved_json;
    for (const auto &[why, kernels] : not_saved)
      not_saved_json.push_back(
          llvm::json::Object{{"why", why}, {"kernels", llvm::json::Array(kernels)}});
    printJson(llvm::json::Object{
        {"cache_root", store.root().empty() ? llvm::json::Value(nullptr) : store.root()},
        {"arch", *arch},
        {"gpu", gpu.empty() ? llvm::json::Value(nullptr) : gpu},
        {"nvrtc_version", nvrtc::version()},
        {"check", check},
        {"ms", ms},
        {"shapes", std::move(shapes_json)},
        {"cache", llvm::json::Object{{"hits", static_cast<int64_t>(store.hits())},
                                     {"misses", static_cast<int64_t>(store.misses())},
                                     {"compiles", static_cast<int64_t>(store.compiles())},
                                     {"saved", static_cast<int64_t>(store.saved())},
                                     {"not_saved", static_cast<int64_t>(store.unsaved())}}},
        {"missing", llvm::json::Array(missing)},
        {"not_saved", std::move(not_saved_json)}});
  } else {
    std::printf("\ncache hits %llu, misses %llu, compiles %llu; saved %llu, not saved %llu\n",
                static_cast<unsigned long long>(store.hits()),
                static_cast<unsigned long long>(store.misses()),
                static_cast<unsigned long long>(store.compiles()),
                static_cast<unsigned long long>(store.saved()),
                static_cast<unsigned long long>(store.unsaved()));
  }
  if (check) {
    for (const std::string &why : missing)
      std::fprintf(stderr, "missing: %s\n", why.c_str());
    if (!missing.empty()) {
      std::fprintf(stderr, "error: %zu of %zu kernels are missing from the cache\n", missing.size(),
                   total);
      return 1;
    }
    if (!json)
      std::printf("all %zu kernels are in the cache\n", total);
    return 0;
  }
  // A warm that could not save what it compiled has not warmed the cache.
  for (const auto &[why, kernels] : not_saved)
    std::fprintf(stderr, "error: %zu kernels were not saved: %s\n", kernels.size(), why.c_str());
  return not_saved.empty() ? 0 : 1;
}

} // namespace

Command addWarm(CLI::App &app) {
  auto a = std::make_shared<WarmArgs>();
  CLI::App *cmd = app.add_subcommand(
      "warm", "Compile every kernel the shapes may use into the cache (with --arch, no GPU).");
  cmd->footer("The plans warmed: the heuristic's and the tuned one (the tuning record or shipped "
              "table for --gpu, by default GPU 0's; with --arch and no GPU, every shipped table of "
              "that arch). Exits 1 when a compiled kernel could not be saved. Progress goes to "
              "stdout (stderr with --json): one live line on a terminal, one line per update "
              "otherwise.\nA shape S is k=8,hidden=2048,intermediate=768,experts=128,dtype=bf16.");
  addShapeOptions(*cmd, a->shapes);
  cmd->add_option("--arch", a->arch,
                  "target to compile for, e.g. sm_90a: no GPU needed (default: GPU 0's)")
      ->type_name("sm_XY")
      ->check(nonEmpty());
  cmd->add_option("--gpu", a->gpu,
                  "GPU name whose tuned plans to warm, e.g. 'NVIDIA H200' (default: GPU 0's)")
      ->type_name("NAME")
      ->check(nonEmpty());
  cmd->add_option("--cache-dir", a->cache_dir, "cache root (default: MOEJIT_CACHE_DIR or ~/.cache)")
      ->type_name("DIR")
      ->check(nonEmpty());
  CLI::Option *tune = cmd->add_flag(
      "--tune", a->tune, "autotune the shapes on GPU 0 first, saving tuning records in the root");
  cmd->add_option("--buckets", a->buckets,
                  "token buckets to tune, e.g. 0-16 or 12,13 (default: all)")
      ->type_name("LIST")
      ->needs(tune)
      ->check(checkedBy([](const std::string &s) { parseBuckets(s); }, ""));
  cmd->add_flag("--check", a->check,
                "compile nothing: list the kernels missing from the cache, exit 1 if any (as "
                "MOEJIT_NO_COMPILE=1 does)")
      ->excludes(tune);
  cmd->add_option("--combine", a->combine,
                  "the combine mode whose kernels to warm: deterministic (also serves "
                  "batch-invariant), fast (default: MOEJIT_COMBINE's)")
      ->type_name("MODE")
      ->check(combineMode());
  cmd->add_flag("--json", a->json, "print a JSON document on stdout instead of text");
  return {cmd, [a] { return runWarm(*a); }};
}

} // namespace moejit::cli
