// moejit bench --jit: how long Runtime::get takes for a shape, three ways:
// cold (empty cache: generate, compile, publish, load), disk hit (a new
// process on the warmed cache: read, verify, load) and in-process hit (the
// shared kernel set). The new processes run `moejit jit-probe`.
#include "cli.h"

#include "common/error.h"
#include "workload/shape.h"

#include <llvm/ADT/ScopeExit.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/Threading.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <string>

namespace moejit::cli {

namespace {

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

/// Runs `moejit jit-probe` in a new process and reads the ms it prints.
double probeInNewProcess(const std::string &self, const std::string &root, const MoeShape &shape) {
  llvm::SmallString<128> out;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("moejit-probe", "txt", out))
    throw Error(ErrorCode::Internal,
                "cannot create a file for jit-probe's output: " + ec.message());
  const auto remove_out = llvm::make_scope_exit([&] { llvm::sys::fs::remove(out); });
  const std::string shape_arg = shapeText(shape);
  const llvm::StringRef argv[] = {self, "jit-probe", "--cache-dir", root, "--shape", shape_arg};
  const llvm::Optional<llvm::StringRef> redirects[] = {llvm::None, llvm::StringRef(out),
                                                       llvm::None};
  std::string error;
  const int rc = llvm::sys::ExecuteAndWait(self, argv, llvm::None, redirects, 0, 0, &error);
  auto text = llvm::MemoryBuffer::getFile(out);
  if (rc != 0 || !text)
    throw Error(ErrorCode::Internal, "jit-probe failed (" + std::to_string(rc) + "): " + error);
  const llvm::StringRef printed = (*text)->getBuffer().trim();
  double ms = 0;
  const auto [end, ec] = std::from_chars(printed.begin(), printed.end(), ms);
  if (ec != std::errc() || end != printed.end())
    throw Error(ErrorCode::Internal, "jit-probe printed '" + printed.str() + "', not its ms");
  return ms;
}

int runJitProbe(const std::string &root, const std::string &shape_text) {
  const MoeShape shape = parseShape(shape_text);
  RuntimeOptions options;
  options.cache_dir = root;
  options.no_compile = true; // a disk hit or an error, never a compile
  Runtime rt(0, options);
  const auto start = std::chrono::steady_clock::now();
  rt.get(shape);
  std::printf("%.3f\n", msSince(start));
  return 0;
}

} // namespace

Command addJitProbe(CLI::App &app) {
  struct ProbeArgs {
    std::string root, shape;
  };
  auto a = std::make_shared<ProbeArgs>();
  // bench --jit's new processes; not for people, so not in the overview.
  CLI::App *cmd =
      app.add_subcommand("jit-probe", "time one Runtime::get on a warm cache")->group("");
  cmd->add_option("--cache-dir", a->root, "cache root")->type_name("DIR")->check(nonEmpty());
  cmd->add_option("--shape", a->shape, "the shape")
      ->type_name("S")
      ->check(checkedBy([](const std::string &s) { parseShape(s); }, ""));
  return {cmd, [a] { return runJitProbe(a->root, a->shape); }};
}

int runJitBench(const std::vector<MoeShape> &shapes, int processes, const std::string &self) {
  Runtime probe(0);
  std::printf("device: %s (%s), %u hardware threads for NVRTC\n", probe.device_name().c_str(),
              probe.arch().c_str(), llvm::hardware_concurrency().compute_thread_count());
  std::printf("%-52s %9s %9s %12s %9s %s\n", "shape", "cold ms", "compiles", "disk hit ms",
              "hit us", "plan");
  for (const MoeShape &shape : shapes) {
    llvm::SmallString<128> root;
    if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("moejit-jit", root))
      throw Error(ErrorCode::Internal, "cannot create a temporary cache: " + ec.message());
    // Removed however the shape's run ends (a probe that fails throws).
    const auto remove_root =
        llvm::make_scope_exit([&] { llvm::sys::fs::remove_directories(root); });
    RuntimeOptions options;
    options.cache_dir = std::string(root);
    Runtime rt(0, options);
    auto start = std::chrono::steady_clock::now();
    std::shared_ptr<const KernelSet> set = rt.get(shape);
    const double cold_ms = msSince(start);
    const uint64_t compiles = rt.cache_stats().compiles;

    std::vector<double> disk;
    for (int i = 0; i < processes; ++i)
      disk.push_back(probeInNewProcess(self, std::string(root), shape));
    std::sort(disk.begin(), disk.end());

    constexpr int kHits = 100000;
    start = std::chrono::steady_clock::now();
    for (int i = 0; i < kHits; ++i)
      rt.get(shape);
    const double hit_us = msSince(start) * 1000 / kHits;
    std::printf("%-52s %9.1f %9llu %12.2f %9.3f %s\n", shapeText(shape).c_str(), cold_ms,
                static_cast<unsigned long long>(compiles),
                disk.empty() ? 0.0 : disk[disk.size() / 2], hit_us, set->plan_source().c_str());
    std::fflush(stdout);
  }
  return 0;
}

} // namespace moejit::cli
