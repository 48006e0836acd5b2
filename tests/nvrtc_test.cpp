#include "nvrtc/compile.h"
#include "runtime/builder.h"
#include "runtime/launch_params.h"
#include "store/cubin_store.h"

#include "common/error.h"
#include "testkit.h"

#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>

#include <cstring>
#include <fstream>

using namespace moejit;

TEST(Nvrtc, ArchChoice) {
  EXPECT_EQ(nvrtc::archForComputeCapability(9, 0), "sm_90a");
  EXPECT_EQ(nvrtc::archForComputeCapability(8, 6), "sm_86");
  EXPECT_EQ(nvrtc::archForComputeCapability(10, 0), "sm_100");
  EXPECT_FALSE(static_cast<bool>(nvrtc::checkArch("sm_80")));
  EXPECT_FALSE(static_cast<bool>(nvrtc::checkArch("sm_90a")));
  for (const char *bad : {"sm_70", "compute_90", "sm90", ""}) {
    llvm::Error e = nvrtc::checkArch(bad);
    EXPECT_TRUE(static_cast<bool>(e)) << bad;
    llvm::consumeError(std::move(e));
  }
}

TEST(Nvrtc, ParsesPtxasReport) {
  const auto r = nvrtc::parseResources(
      "ptxas info    : Used 168 registers, used 1 barriers, 4096 bytes smem\n"
      "    24 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n");
  EXPECT_EQ(r.registers, 168);
  EXPECT_EQ(r.spill_bytes, 20);
  EXPECT_EQ(r.stack_bytes, 24);
  EXPECT_EQ(r.static_shared_bytes, 4096);
}

/// A program's log, split per kernel: each its own section, and the
/// advisories ptxas prints before the sections to the kernel they name.
TEST(Nvrtc, KernelLogTakesEachKernelsSectionAndTheAdvisoriesNamingIt) {
  const std::string log =
      "ptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async instructions are "
      "serialized due to insufficient register resources for the wgmma pipeline in the function "
      "'b'\n"
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'a' for 'sm_90a'\n"
      "ptxas info    : Function properties for a\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 32 registers, used 1 barriers, 2048 bytes smem\n"
      "ptxas info    : Compiling entry function 'b' for 'sm_90a'\n"
      "ptxas info    : Function properties for b\n"
      "ptxas         .     16 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers\n";
  const std::vector<std::string> both = {"a", "b"};
  const std::string a = nvrtc::kernelLog(log, "a", both), b = nvrtc::kernelLog(log, "b", both);
  const nvrtc::Resources ra = nvrtc::parseResources(a), rb = nvrtc::parseResources(b);
  EXPECT_EQ(ra.registers, 32);
  EXPECT_EQ(ra.static_shared_bytes, 2048);
  EXPECT_EQ(ra.spill_bytes, 0);
  EXPECT_EQ(rb.registers, 168);
  EXPECT_EQ(rb.stack_bytes, 16);
  EXPECT_EQ(rb.spill_bytes, 12);
  EXPECT_EQ(a.find("serialized"), std::string::npos) << a;
  EXPECT_NE(b.find("serialized"), std::string::npos) << b;
  EXPECT_NE(a.find("gmem"), std::string::npos) << "lines naming no kernel are everyone's";
  const MoeShape shape{8, 2048, 768, 128, DType::BF16};
  const codegen::KernelSpec ws{codegen::KernelKind::Gemm1, shape, codegen::wsTile(128, 4)};
  EXPECT_EQ(runtime::refusedHopperBuild(ws, nvrtc::Resources{}, a, false), "");
  EXPECT_NE(runtime::refusedHopperBuild(ws, nvrtc::Resources{}, b, false), "");
  // A one-kernel program's log is all its kernel's.
  EXPECT_EQ(nvrtc::kernelLog(log, "b", {"b"}), log);
}

namespace {
/// The bytes of section `name` of an ELF64 little-endian file ("" when
/// absent or out of its bounds).
std::string elfSection(const std::string &elf, const std::string &name) {
  auto read = [&](size_t at, size_t bytes) -> uint64_t {
    uint64_t v = 0;
    if (at + bytes <= elf.size())
      std::memcpy(&v, elf.data() + at, bytes);
    return v;
  };
  const uint64_t shoff = read(0x28, 8), entsize = read(0x3A, 2), count = read(0x3C, 2),
                 strndx = read(0x3E, 2);
  const uint64_t names = read(shoff + strndx * entsize + 0x18, 8);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t h = shoff + i * entsize;
    const uint64_t at = names + read(h, 4), offset = read(h + 0x18, 8), size = read(h + 0x20, 8);
    if (at < elf.size() && elf.compare(at, name.size() + 1, name.c_str(), name.size() + 1) == 0 &&
        offset + size <= elf.size())
      return elf.substr(offset, size);
  }
  return {};
}
} // namespace

/// Kernels of one family compiled as one NVRTC program (what the builder
/// does on few cores) get the code and resources they get alone, so each
/// may be cached under its own key with the program's cubin.
TEST(Nvrtc, AProgramOfOneFamilyHoldsTheCodeEachKernelHasAlone) {
  using codegen::KernelKind;
  const MoeShape shape{4, 512, 256, 16, DType::BF16};
  const std::vector<std::vector<codegen::KernelSpec>> families = {
      {{KernelKind::RouteCount, shape, {}},
       {KernelKind::RouteBlock, shape, {}},
       {KernelKind::RouteWide, shape, {}}},
      {{KernelKind::Gemm1, shape, codegen::swapTile(32, 9, codegen::GemmKind::Gemm1)},
       {KernelKind::Gemm2, shape, codegen::swapTile(32, 9, codegen::GemmKind::Gemm2)}},
      {{KernelKind::Gemm1, shape, codegen::wsTile(128, 4)},
       {KernelKind::Gemm2, shape, codegen::wsTile(192, 4)}}};
  for (const auto &family : families) {
    std::vector<std::string> names;
    for (const codegen::KernelSpec &spec : family) {
      EXPECT_EQ(codegen::programFamily(spec), codegen::programFamily(family.front()));
      names.push_back(spec.name());
    }
    const std::vector<std::string> options = codegen::familyOptions(family.front());
    auto together =
        nvrtc::compile("program", codegen::generateProgram(family), "sm_90a", options);
    ASSERT_TRUE(static_cast<bool>(together)) << errorMessage(together.takeError());
    for (const codegen::KernelSpec &spec : family) {
      EXPECT_EQ(codegen::familyOptions(spec), options) << spec.name();
      auto alone = nvrtc::compile(spec.name(), codegen::generateSource(spec), "sm_90a",
                                  codegen::familyOptions(spec));
      ASSERT_TRUE(static_cast<bool>(alone)) << errorMessage(alone.takeError());
      const std::string text = elfSection(alone->cubin, ".text." + spec.name());
      ASSERT_FALSE(text.empty()) << spec.name();
      EXPECT_EQ(elfSection(together->cubin, ".text." + spec.name()), text) << spec.name();
      const nvrtc::Resources a = nvrtc::parseResources(alone->log),
                             t = nvrtc::parseResources(
                                 nvrtc::kernelLog(together->log, spec.name(), names));
      EXPECT_EQ(t.registers, a.registers) << spec.name();
      EXPECT_EQ(t.spill_bytes, a.spill_bytes) << spec.name();
      EXPECT_EQ(t.stack_bytes, a.stack_bytes) << spec.name();
      EXPECT_EQ(t.static_shared_bytes, a.static_shared_bytes) << spec.name();
    }
  }
}

/// A Hopper tensor-core kernel whose wgmma ptxas serialised, or that uses
/// local memory, is a failed build; the portable kernels and debug builds
/// are not held to it.
TEST(Nvrtc, SerialisedWgmmaOrLocalMemoryFailsAHopperBuild) {
  const MoeShape shape{8, 2048, 768, 128, DType::BF16};
  const codegen::KernelSpec ws{codegen::KernelKind::Gemm1, shape, codegen::wsTile(128, 4)};
  const codegen::KernelSpec mma{codegen::KernelKind::Gemm1, shape,
                                codegen::TileConfig{64, 64, 3, 2, 2}};
  const std::string serialized =
      "ptxas warning : Potential Performance Loss: wgmma.mma_async instructions are serialized "
      "due to the presence of Extern calls in the function 'k'.\n"
      "ptxas info    : Used 168 registers\n";
  nvrtc::Resources clean;
  EXPECT_EQ(runtime::refusedHopperBuild(ws, clean, "ptxas info    : Used 168 registers\n", false),
            "");
  const std::string why = runtime::refusedHopperBuild(ws, clean, serialized, false);
  EXPECT_NE(why.find("serialised its wgmma"), std::string::npos) << why;
  EXPECT_NE(why.find("Extern calls"), std::string::npos) << why;
  nvrtc::Resources stack;
  stack.stack_bytes = 16;
  EXPECT_NE(runtime::refusedHopperBuild(ws, stack, "", false).find("local memory"),
            std::string::npos);
  EXPECT_EQ(runtime::refusedHopperBuild(ws, stack, "", true), "");
  nvrtc::Resources spill;
  spill.spill_bytes = 8;
  EXPECT_NE(runtime::refusedHopperBuild(ws, spill, "", false), "");
  EXPECT_EQ(runtime::refusedHopperBuild(mma, spill, serialized, false), "");
}

/// Every kernel `run` uses for a shape compiles for both targets, without
/// spilling, and yields a cubin (ELF).
class CompileEveryKernel : public ::testing::TestWithParam<std::tuple<std::string, DType>> {};

TEST_P(CompileEveryKernel, SeedShape) {
  const auto [arch, dtype] = GetParam();
  const MoeShape shape{8, 2048, 768, 128, dtype};
  const auto specs = runtime::kernelSpecs(shape, runtime::heuristicPlan(shape, Arch(arch.c_str())));
  ASSERT_GE(specs.size(), 6u);
  for (const codegen::KernelSpec &spec : specs) {
    auto compiled = nvrtc::compile(spec.name(), codegen::generateSource(spec), arch,
                                   codegen::familyOptions(spec));
    ASSERT_TRUE(static_cast<bool>(compiled)) << errorMessage(compiled.takeError());
    EXPECT_EQ(compiled->cubin.substr(0, 4), "\x7f"
                                            "ELF")
        << spec.name();
    EXPECT_GT(nvrtc::parseResources(compiled->log).registers, 0) << spec.name();
    EXPECT_EQ(nvrtc::parseResources(compiled->log).spill_bytes, 0) << spec.name();
  }
}

/// The builder compiles each program with its family's options, the ones
/// its entry key holds: a routing kernel it built has the code of a compile
/// with codegen::familyOptions, not that of a plain one (the two differ).
TEST(Nvrtc, TheBuilderCompilesEachFamilyWithItsOptions) {
  const MoeShape shape{4, 512, 256, 16, DType::BF16};
  const std::vector<codegen::KernelSpec> specs = {{codegen::KernelKind::RouteCount, shape, {}},
                                                  {codegen::KernelKind::RouteWide, shape, {}},
                                                  {codegen::KernelKind::Combine, shape, {}}};
  testkit::TempDir dir("moejit-family-options");
  store::CubinStore store(dir.path);
  runtime::BuildOptions one_worker;
  one_worker.workers = 1;
  const auto built = runtime::buildEach(specs, "sm_90a", store, one_worker);
  ASSERT_EQ(built.size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const codegen::KernelSpec &spec = specs[i];
    ASSERT_TRUE(built[i].ok()) << built[i].error;
    const std::string section = ".text." + spec.name();
    const std::string code = elfSection(built[i].kernel.entry.cubin, section);
    ASSERT_FALSE(code.empty()) << spec.name();
    auto with = nvrtc::compile(spec.name(), codegen::generateSource(spec), "sm_90a",
                               codegen::familyOptions(spec));
    ASSERT_TRUE(static_cast<bool>(with)) << errorMessage(with.takeError());
    // (EXPECT_TRUE: the sections are binary, not for the failure message.)
    EXPECT_TRUE(elfSection(with->cubin, section) == code)
        << spec.name() << ": built with other options than familyOptions";
    if (codegen::familyOptions(spec).empty())
      continue;
    auto plain = nvrtc::compile(spec.name(), codegen::generateSource(spec), "sm_90a");
    ASSERT_TRUE(static_cast<bool>(plain)) << errorMessage(plain.takeError());
    EXPECT_FALSE(elfSection(plain->cubin, section) == code)
        << spec.name() << ": -O3 and familyOptions give the same code; the test proves nothing";
  }
}

/// The one-launch routing kernels compile, with their family's options
/// (--Ofast-compile=min), at the most experts they take (their tables are
/// static shared memory) and at one expert, for both targets, with no
/// local memory: at --Ofast-compile=mid route_wide's id batches went to
/// the stack.
TEST(Nvrtc, RoutingKernelsCompileAtTheirExpertBounds) {
  for (const char *arch : {"sm_80", "sm_90a"})
    for (int experts : {1, runtime::kRouteBlockMaxExperts})
      for (codegen::KernelKind kind :
           {codegen::KernelKind::RouteBlock, codegen::KernelKind::RouteWide}) {
        const codegen::KernelSpec spec{kind, MoeShape{2, 64, 32, experts, DType::BF16}, {}};
        ASSERT_FALSE(codegen::familyOptions(spec).empty());
        auto compiled = nvrtc::compile(spec.name(), codegen::generateSource(spec), arch,
                                       codegen::familyOptions(spec));
        ASSERT_TRUE(static_cast<bool>(compiled)) << errorMessage(compiled.takeError());
        const nvrtc::Resources r = nvrtc::parseResources(compiled->log);
        EXPECT_EQ(r.spill_bytes, 0) << spec.name() << " " << arch;
        EXPECT_EQ(r.stack_bytes, 0) << spec.name() << " " << arch;
      }
}

/// The warp-specialised GEMMs compile for sm_90a with no local memory and
/// no ptxas warning (a serialised wgmma would say so in the log).
TEST(Nvrtc, WarpSpecialisedGemmsCompileClean) {
  for (DType dtype : {DType::BF16, DType::FP16})
    for (auto [kind, bn, stages, staged, inflight] :
         {std::tuple{codegen::KernelKind::Gemm1, 128, 4, false, 1},
          std::tuple{codegen::KernelKind::Gemm2, 256, 4, false, 1},
          std::tuple{codegen::KernelKind::Gemm1, 32, 4, false, 1},
          std::tuple{codegen::KernelKind::Gemm1, 128, 4, true, 1},
          std::tuple{codegen::KernelKind::Gemm2, 256, 3, true, 1},
          std::tuple{codegen::KernelKind::Gemm1, 128, 4, true, 0},
          std::tuple{codegen::KernelKind::Gemm2, 256, 3, true, 0}}) {
      const codegen::KernelSpec spec{kind, MoeShape{8, 2056, 776, 128, dtype},
                                     codegen::wsTile(bn, stages, staged, inflight)};
      auto compiled = nvrtc::compile(spec.name(), codegen::generateSource(spec), "sm_90a");
      ASSERT_TRUE(static_cast<bool>(compiled)) << errorMessage(compiled.takeError());
      EXPECT_EQ(nvrtc::parseResources(compiled->log).spill_bytes, 0) << spec.name();
      EXPECT_EQ(compiled->log.find("warning"), std::string::npos) << compiled->log;
      EXPECT_NE(compiled->log.find(" 0 bytes stack frame"), std::string::npos) << compiled->log;
    }
}

/// The swap-AB GEMMs too, at every token width they are built for (one
/// main loop of bm token columns up to bm = 64; from 128 up, those of
/// bm/4, bm/2 and the steps of 32 above bm/2).
TEST(Nvrtc, SwapAbGemmsCompileClean) {
  for (DType dtype : {DType::BF16, DType::FP16})
    for (auto [kind, bm, stages] : {std::tuple{codegen::GemmKind::Gemm1, 32, 10},
                                    std::tuple{codegen::GemmKind::Gemm1, 64, 7},
                                    std::tuple{codegen::GemmKind::Gemm1, 128, 6},
                                    std::tuple{codegen::GemmKind::Gemm2, 32, 10},
                                    std::tuple{codegen::GemmKind::Gemm2, 64, 7},
                                    std::tuple{codegen::GemmKind::Gemm2, 256, 4}}) {
      const codegen::KernelSpec spec{kind == codegen::GemmKind::Gemm1 ? codegen::KernelKind::Gemm1
                                                                      : codegen::KernelKind::Gemm2,
                                     MoeShape{8, 2056, 776, 128, dtype},
                                     codegen::swapTile(bm, stages, kind)};
      ASSERT_FALSE(static_cast<bool>(codegen::checkMmaConfig(spec.tile, kind))) << spec.name();
      auto compiled = nvrtc::compile(spec.name(), codegen::generateSource(spec), "sm_90a");
      ASSERT_TRUE(static_cast<bool>(compiled)) << errorMessage(compiled.takeError());
      EXPECT_EQ(nvrtc::parseResources(compiled->log).spill_bytes, 0) << spec.name();
      EXPECT_EQ(compiled->log.find("warning"), std::string::npos) << compiled->log;
      EXPECT_NE(compiled->log.find(" 0 bytes stack frame"), std::string::npos) << compiled->log;
    }
}

/// MOEJIT_DEBUG_PIPELINES=1 compiles the bounded mbarrier wait in (an option,
/// so a cache key of its own) and the kernels still compile (the clock
/// checks cost some local memory: debug kernels are for finding hangs).
TEST(Nvrtc, DebugPipelinesIsAnOptionOfItsOwnKey) {
  const auto plain = nvrtc::compileOptions("sm_90a");
  testkit::EnvVar debug("MOEJIT_DEBUG_PIPELINES", "1");
  const auto options = nvrtc::compileOptions("sm_90a");
  ASSERT_EQ(options.size(), plain.size() + 1);
  EXPECT_EQ(options.back(), "-DMOEJIT_PIPELINE_TIMEOUT_NS=10000000000ull");
  const codegen::KernelSpec spec{codegen::KernelKind::Gemm2,
                                 MoeShape{8, 2048, 768, 128, DType::BF16},
                                 codegen::wsTile(256, 3, true)};
  auto compiled = nvrtc::compile(spec.name(), codegen::generateSource(spec), "sm_90a");
  ASSERT_TRUE(static_cast<bool>(compiled)) << errorMessage(compiled.takeError());
  EXPECT_EQ(compiled->cubin.substr(0, 4), "\x7f"
                                          "ELF");
  EXPECT_EQ(compiled->log.find("warning"), std::string::npos) << compiled->log;
}

/// A value that is not a bool is one warning and no debug option.
TEST(Nvrtc, DebugPipelinesWithAHostileValueIsOff) {
  const auto plain = nvrtc::compileOptions("sm_90a");
  for (const char *value : {"yes; rm -rf /", "-DX=1", "99999999999999999999", ""}) {
    testkit::EnvVar debug("MOEJIT_DEBUG_PIPELINES", value);
    EXPECT_FALSE(nvrtc::debugPipelines()) << value;
    EXPECT_EQ(nvrtc::compileOptions("sm_90a"), plain) << value;
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, CompileEveryKernel,
                         ::testing::Values(std::make_tuple("sm_80", DType::BF16),
                                           std::make_tuple("sm_90a", DType::BF16),
                                           std::make_tuple("sm_90a", DType::FP16),
                                           std::make_tuple("sm_90a", DType::FP32)));

TEST(Nvrtc, FailureCarriesLogOptionsAndKeptSource) {
  const std::string source = "extern \"C\" __global__ void broken() { this_is_not_defined(); }\n";
  auto r = nvrtc::compile("broken_kernel", source, "sm_90a");
  ASSERT_FALSE(static_cast<bool>(r));
  const std::string msg = errorMessage(r.takeError());
  EXPECT_NE(msg.find("this_is_not_defined"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--gpu-architecture=sm_90a"), std::string::npos) << msg;
  const auto at = msg.find("source kept at: ");
  ASSERT_NE(at, std::string::npos) << msg;
  const std::string path = msg.substr(at + 16, msg.find('\n', at) - at - 16);
  std::ifstream kept(path);
  std::string text((std::istreambuf_iterator<char>(kept)), {});
  EXPECT_EQ(text, source);
  llvm::sys::fs::remove(path);
}
