// moejit: warm the kernel cache, benchmark, or print generated source.
#include "cli.h"

#include <cstdio>
#include <cstring>
#include <exception>

namespace {
const char *kUsage =
    "usage: moejit <command> [options]\n"
    "  warm    [--shape S]... [--arch sm_XY] [--cache-dir DIR]\n"
    "          compile every kernel of the shapes (default: the seed shape)\n"
    "          into the cache; with --arch no GPU is needed\n"
    "  bench   [--shape S --tokens T]... [--config G1:G2]... [--json FILE] [--runs N]\n"
    "          time the 13 seed cases (or the given ones) on GPU 0\n"
    "  info    print the NVRTC version, cache root and visible GPUs\n"
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
      return moejit::cli::runBench(std::move(args));
    if (!std::strcmp(argv[1], "info"))
      return moejit::cli::runInfo(std::move(args));
    if (!std::strcmp(argv[1], "codegen"))
      return moejit::cli::runCodegen(std::move(args));
    std::fprintf(stderr, "moejit: unknown command '%s'\n%s", argv[1], kUsage);
    return 2;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "moejit: error: %s\n", e.what());
    return 1;
  }
}
