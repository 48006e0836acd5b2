// moejit: warm the kernel cache, benchmark, or print generated source.
#include "cache_cmd.h"
#include "cli.h"

#include <cstdio>
#include <cstring>
#include <exception>

namespace {
const char *kUsage =
    "usage: moejit <command> [options]\n"
    "  warm    [--shape S | --model NAME|all]... [--arch sm_XY] [--gpu NAME] [--cache-dir DIR]\n"
    "          [--tune [--buckets 0-16]]\n"
    "          compile every kernel the shapes may use (default: the seed shape)\n"
    "          into the cache; with --arch no GPU is needed. --tune autotunes\n"
    "          them on GPU 0 first and saves tuning records in the cache root\n"
    "  bench   [--shape S --tokens T]... [--config G1:G2]... [--compare-heuristic]\n"
    "          [--json FILE] [--runs N]\n"
    "          time the 13 seed cases (or the given ones) on GPU 0; --compare-heuristic\n"
    "          times the tuned plan and the heuristic's side by side\n"
    "  bench   --jit [--shape S | --model NAME|all]... [--processes N]\n"
    "          time Runtime::get: cold, disk hit (new process), in-process hit\n"
    "  info    print the NVRTC version, cache root and visible GPUs\n"
    "  cache   list | verify [--fix] | prune --max-size SIZE  [--cache-dir DIR]\n"
    "          show, check or trim the cubin cache (SIZE: 512M, 2G, 100K, 12345)\n"
    "  settings\n"
    "          print the MOEJIT_* environment variables as a Markdown table\n"
    "  codegen --kernel KIND [--shape S] [--bm N --bn N --stages N --warps MxN | --wgmma]\n"
    "          print the generated source of one kernel\n"
    "S is k=8,hidden=2048,intermediate=768,experts=128,dtype=bf16\n";
}

int main(int argc, char **argv) {
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  try {
    moejit::cli::Args args(argc - 2, argv + 2);
    if (!std::strcmp(argv[1], "warm"))
      return moejit::cli::runWarm(std::move(args));
    if (!std::strcmp(argv[1], "bench"))
      return args.flag("--jit") ? moejit::cli::runJitBench(std::move(args), argv[0])
                                : moejit::cli::runBench(std::move(args));
    if (!std::strcmp(argv[1], "jit-probe")) // bench --jit's new processes
      return moejit::cli::runJitProbe(std::move(args));
    if (!std::strcmp(argv[1], "info"))
      return moejit::cli::runInfo(std::move(args));
    if (!std::strcmp(argv[1], "codegen"))
      return moejit::cli::runCodegen(std::move(args));
    if (!std::strcmp(argv[1], "cache"))
      return moejit::cli::runCache(std::move(args));
    if (!std::strcmp(argv[1], "settings"))
      return moejit::cli::runSettings(std::move(args));
    std::fprintf(stderr, "moejit: unknown command '%s'\n%s", argv[1], kUsage);
    return 2;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "moejit: error: %s\n", e.what());
    return 1;
  }
}
