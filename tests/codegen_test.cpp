#include "codegen/embedded_templates.h"
#include "codegen/generate.h"
#include "common/error.h"

#include <gtest/gtest.h>

#include <set>

using namespace moejit;
using namespace moejit::codegen;

namespace {
const MoeShape kSeed{8, 2048, 768, 128, DType::BF16};
}

TEST(Codegen, SourceIsDeterministicAndSmall) {
  const KernelSpec spec{KernelKind::Gemm1, kSeed, TileConfig{}};
  const std::string a = generateSource(spec), b = generateSource(spec);
  EXPECT_EQ(a, b);
  EXPECT_LT(a.size(), 1200u);
  EXPECT_NE(a.find("#include \"kernels/moe_gemm_mma.cuh\""), std::string::npos);
  EXPECT_NE(a.find("Shape<8, 2048, 768, 128, kBF16>"), std::string::npos);
  EXPECT_NE(a.find("MmaTile<128, 64, 3, 2, 2>"), std::string::npos);
  EXPECT_NE(a.find(spec.name()), std::string::npos);
}

TEST(Codegen, NameSpellsTheSpecialisation) {
  KernelSpec spec{KernelKind::Gemm2, kSeed, TileConfig{64, 128, 4, 2, 2}};
  EXPECT_EQ(spec.name(), "moe_gemm2_bf16_k8_h2048_i768_e128_bm64_bn128_s4_w2x2");
  spec.shape.dtype = DType::FP32;
  EXPECT_EQ(spec.name(), "moe_gemm2_fp32_k8_h2048_i768_e128_simt");
  EXPECT_EQ(KernelSpec({KernelKind::RouteScan, kSeed, {}}).name(),
            "moe_route_scan_bf16_k8_h2048_i768_e128");
}

// Combine::Fast's GEMM2 adds into y: a kernel of its own (name, source,
// so cache key); the flag means nothing to the other kinds.
TEST(Codegen, AddToYIsAGemm2OfItsOwn) {
  KernelSpec spec{KernelKind::Gemm2, kSeed, wsTile(256, 3, true), true};
  EXPECT_EQ(spec.name(), "moe_gemm2_bf16_k8_h2048_i768_e128_bm128_bn256_s3_wss_addy");
  EXPECT_NE(generateSource(spec).find("using S = Shape<8, 2048, 768, 128, kBF16, true>;"),
            std::string::npos)
      << generateSource(spec);
  KernelSpec plain = spec;
  plain.add_to_y = false;
  EXPECT_NE(generateSource(plain).find("using S = Shape<8, 2048, 768, 128, kBF16>;"),
            std::string::npos);
  spec.shape.dtype = DType::FP32;
  EXPECT_EQ(spec.name(), "moe_gemm2_fp32_k8_h2048_i768_e128_simt_addy");
  for (KernelKind kind : {KernelKind::Gemm1, KernelKind::Combine, KernelKind::RouteBlock}) {
    const KernelSpec other{kind, kSeed, wsTile(128, 4), true};
    EXPECT_FALSE(other.addsToY());
    EXPECT_EQ(other.name().find("_addy"), std::string::npos) << other.name();
    EXPECT_EQ(generateSource(other), generateSource(KernelSpec{kind, kSeed, wsTile(128, 4)}));
  }
}

TEST(Codegen, EveryArgumentChangesTheSource) {
  const KernelSpec base{KernelKind::Gemm1, kSeed, TileConfig{}};
  std::vector<KernelSpec> variants(9, base);
  variants[0].kind = KernelKind::Gemm2;
  variants[1].shape.k = 6;
  variants[2].shape.hidden = 1024;
  variants[3].shape.intermediate = 512;
  variants[4].shape.experts = 64;
  variants[5].shape.dtype = DType::FP16;
  variants[6].tile.bm = 64;
  variants[7].tile.stages = 4;
  variants[8].tile.warps_n = 4;
  std::set<std::string> sources{generateSource(base)};
  for (const KernelSpec &v : variants)
    sources.insert(generateSource(v));
  EXPECT_EQ(sources.size(), variants.size() + 1);
}

TEST(Codegen, LaunchShapeFollowsConfig) {
  const KernelSpec spec{KernelKind::Gemm1, kSeed, TileConfig{128, 64, 3, 2, 2}};
  EXPECT_EQ(spec.threads(), 128);
  // 3 stages of (128 A rows + 128 B rows) x 128 bytes, plus row pointers.
  EXPECT_EQ(spec.dynamicSharedBytes(), 3 * 256 * 128 + 256 * 8);
  EXPECT_NE(generateSource(spec).find("Kernel::SMEM_BYTES == 100352"), std::string::npos);
}

TEST(Codegen, WgmmaConfigsHaveTheirOwnNameAndTemplate) {
  TileConfig t{128, 64, 4, 0, 0, true};
  const KernelSpec spec{KernelKind::Gemm1, kSeed, t};
  EXPECT_EQ(spec.name(), "moe_gemm1_bf16_k8_h2048_i768_e128_bm128_bn64_s4_wgmma");
  EXPECT_EQ(spec.threads(), 256);
  const std::string src = generateSource(spec);
  EXPECT_NE(src.find("WgmmaGemm<S, WgmmaTile<128, 64, 4, 0>, true>"), std::string::npos);
  auto parsed = parseTileConfig("bm128_bn64_s4_wgmma");
  ASSERT_TRUE(static_cast<bool>(parsed));
  EXPECT_EQ(*parsed, t);
  auto plain = parseTileConfig("bm64_bn128_s3_w2x2");
  ASSERT_TRUE(static_cast<bool>(plain));
  EXPECT_EQ(*plain, (TileConfig{64, 128, 3, 2, 2}));
  auto f1 = parseTileConfig("bm128_bn64_s4_wgmma_f1");
  ASSERT_TRUE(static_cast<bool>(f1));
  EXPECT_EQ(f1->inflight, 1);
  EXPECT_EQ(f1->suffix(), "bm128_bn64_s4_wgmma_f1");
  // Tuning records come from a cache root that may be hostile: numbers that
  // overflow, signs, spaces, trailing bytes are all refused.
  for (const char *hostile :
       {"bm99999999999999999999_bn64_s4_ws", "bm128_bn-64_s4_ws", "bm 128_bn64_s4_wgmma",
        "bm128_bn64_s4_wss_", "bm128_bn64_s4_wgmma_f2", "bm128_bn64_s3_w2x2x", "bm128_bn64_s3_w2x",
        "bm+128_bn64_s3_w2x2", "bm128_bn64_s3_w2147483648x2", ""}) {
    auto refused = parseTileConfig(hostile);
    EXPECT_FALSE(static_cast<bool>(refused)) << hostile;
    llvm::consumeError(refused.takeError());
  }
  auto bad = parseTileConfig("bm64_bn128");
  EXPECT_FALSE(static_cast<bool>(bad));
  llvm::consumeError(bad.takeError());
  // Configs that parse but whose arithmetic would overflow: refused by
  // the rules, with no division by zero (the thread count of w16384x8192
  // was 0) and no wrapped size passing them.
  // Accumulators past the registers: 256 * 512 / 32 per thread.
  for (const char *spilling : {"bm256_bn512_s2_w1x1", "bm256_bn256_s2_w1x1"}) {
    auto tile = parseTileConfig(spilling);
    ASSERT_TRUE(static_cast<bool>(tile)) << spilling;
    llvm::Error e = checkMmaConfig(*tile, GemmKind::Gemm2);
    ASSERT_TRUE(static_cast<bool>(e)) << spilling;
    EXPECT_NE(errorMessage(std::move(e)).find("accumulators"), std::string::npos) << spilling;
  }
  for (const char *huge : {"bm262144_bn65536_s3_w16384x8192", "bm128_bn64_s3_w2147483647x1",
                           "bm536870784_bn64_s3_w1x1", "bm128_bn2147483647_s4_wgmma",
                           "bm2147483647_bn64_s8_swap", "bm128_bn1073741824_s4_ws"}) {
    auto parsed_huge = parseTileConfig(huge);
    ASSERT_TRUE(static_cast<bool>(parsed_huge)) << huge;
    for (GemmKind kind : {GemmKind::Gemm1, GemmKind::Gemm2}) {
      llvm::Error e = checkMmaConfig(*parsed_huge, kind);
      EXPECT_TRUE(static_cast<bool>(e)) << huge;
      llvm::consumeError(std::move(e));
    }
  }
}

TEST(Codegen, WarpSpecialisedConfigsTakeTheirTemplateAndTensorMap) {
  const TileConfig t = wsTile(128, 4);
  EXPECT_TRUE(t.wgmma); // every wgmma rule (sm_90a only) applies
  const KernelSpec spec{KernelKind::Gemm1, kSeed, t};
  EXPECT_EQ(spec.name(), "moe_gemm1_bf16_k8_h2048_i768_e128_bm128_bn128_s4_ws");
  EXPECT_EQ(spec.threads(), 384);
  // 4 stages of (128 A rows + 256 B rows) x 128 bytes, two mbarriers and a
  // 16-byte tile ticket per stage, then the producer's 16-byte claim slot
  // (no alignment slack: the kernel declares its shared memory 1024-byte
  // aligned).
  EXPECT_EQ(spec.dynamicSharedBytes(), 4 * 384 * 128 + 4 * 32 + 16);
  const std::string src = generateSource(spec);
  EXPECT_NE(src.find("WsGemm<S, WsTile<128, 4, false, 0>, true>"), std::string::npos);
  EXPECT_NE(src.find("__launch_bounds__(384, 1)"), std::string::npos);
  EXPECT_NE(src.find("const __grid_constant__ TensorMap weights)"), std::string::npos);
  // GEMM2 also takes the map of its A rows (h in sorted order, by TMA).
  EXPECT_NE(generateSource({KernelKind::Gemm2, kSeed, wsTile(256, 3, true)})
                .find("TensorMap weights, const __grid_constant__ TensorMap rows)"),
            std::string::npos);
  auto parsed = parseTileConfig("bm128_bn128_s4_ws");
  ASSERT_TRUE(static_cast<bool>(parsed));
  EXPECT_EQ(*parsed, t);
  EXPECT_EQ(parsed->suffix(), "bm128_bn128_s4_ws");
  // The staged epilogue: its own name, template flag and staging rows
  // (2 warpgroups x 64 rows x (256 + 16) bytes for 128 h columns).
  const KernelSpec staged{KernelKind::Gemm1, kSeed, wsTile(128, 3, true)};
  EXPECT_EQ(staged.name(), "moe_gemm1_bf16_k8_h2048_i768_e128_bm128_bn128_s3_wss");
  EXPECT_EQ(staged.dynamicSharedBytes(), 3 * 384 * 128 + 2 * 64 * 272 + 3 * 32 + 16);
  EXPECT_NE(generateSource(staged).find("WsTile<128, 3, true, 0>"), std::string::npos);
  auto staged_parsed = parseTileConfig("bm128_bn128_s3_wss");
  ASSERT_TRUE(static_cast<bool>(staged_parsed));
  EXPECT_EQ(*staged_parsed, staged.tile);
  // One group left in flight ("_f1"), staged or not.
  for (const char *name : {"bm128_bn128_s4_ws_f1", "bm128_bn256_s3_wss_f1"}) {
    auto held = parseTileConfig(name);
    ASSERT_TRUE(static_cast<bool>(held)) << name;
    EXPECT_EQ(held->inflight, 1);
    EXPECT_EQ(held->suffix(), name);
    EXPECT_NE(generateSource({KernelKind::Gemm2, kSeed, *held}).find(", 1>, false>"),
              std::string::npos);
  }
  for (const char *bad : {"bm128_bn128_s4_ws_f0", "bm128_bn128_s4_ws_f", "bm128_bn128_s4_wsss",
                          "bm128_bn128_s4_ws_f1x"}) {
    auto refused = parseTileConfig(bad);
    EXPECT_FALSE(static_cast<bool>(refused)) << bad;
    llvm::consumeError(refused.takeError());
  }
  // The routing waits for the kernel before it in its entry (chained
  // launches); the combine in its body, after its first loads.
  const std::string route = generateSource({KernelKind::RouteCount, kSeed, {}});
  EXPECT_NE(route.find("{ griddep_wait();"), std::string::npos);
  const std::string combine = generateSource({KernelKind::Combine, kSeed, {}});
  EXPECT_EQ(combine.find("griddep_wait"), std::string::npos);
  EXPECT_NE(combine.find("{  combine<S>(p); }"), std::string::npos);
}

TEST(Codegen, SwapAbConfigsTakeTheirTemplateAndSharedMemory) {
  const TileConfig t = swapTile(64, 8, GemmKind::Gemm1);
  EXPECT_TRUE(t.wgmma && t.ws && t.swap); // sm_90a only, persistent, tensor maps
  EXPECT_EQ(t.bn, 64);                    // 128 weight rows: gate and up of 64 columns
  const KernelSpec spec{KernelKind::Gemm1, kSeed, t};
  EXPECT_EQ(spec.name(), "moe_gemm1_bf16_k8_h2048_i768_e128_bm64_bn64_s8_swap");
  EXPECT_EQ(spec.threads(), 384);
  // 8 stages of (128 weight rows + 64 token rows) x 128 bytes, two
  // mbarriers and a tile ticket each, then the claim slot.
  EXPECT_EQ(spec.dynamicSharedBytes(), 8 * 192 * 128 + 8 * 32 + 16);
  EXPECT_NE(generateSource(spec).find("SwapGemm<S, SwapTile<64, 8>, true>"), std::string::npos);
  // GEMM2: 128 output columns; its token rows come in 32-row TMA boxes, so
  // a 32-row stage is the least; it takes the map of h rows too.
  const KernelSpec g2{KernelKind::Gemm2, kSeed, swapTile(32, 11, GemmKind::Gemm2)};
  EXPECT_EQ(g2.tile.bn, 128);
  EXPECT_EQ(g2.dynamicSharedBytes(), 11 * 160 * 128 + 11 * 32 + 16);
  // From 64 token rows up GEMM2 also holds each consumer warpgroup's chunk
  // of 32 tokens by 64 output columns (+8 of padding) for its row stores.
  const KernelSpec g2_staged{KernelKind::Gemm2, kSeed, swapTile(64, 7, GemmKind::Gemm2)};
  EXPECT_EQ(g2_staged.dynamicSharedBytes(), 7 * 192 * 128 + 2 * 32 * 72 * 2 + 7 * 32 + 16);
  const KernelSpec g1_same{KernelKind::Gemm1, kSeed, swapTile(64, 7, GemmKind::Gemm1)};
  EXPECT_EQ(g1_same.dynamicSharedBytes(), 7 * 192 * 128 + 7 * 32 + 16);
  EXPECT_NE(generateSource(g2).find("TensorMap weights, const __grid_constant__ TensorMap rows)"),
            std::string::npos);
  for (const KernelSpec &s : {spec, g2}) {
    auto parsed = parseTileConfig(s.tile.suffix());
    ASSERT_TRUE(static_cast<bool>(parsed)) << s.tile.suffix();
    EXPECT_EQ(*parsed, s.tile);
  }
  // From a hostile cache root: trailing bytes, overflowing or signed numbers.
  for (const char *bad : {"bm64_bn64_s8_swap_", "bm64_bn64_s8_swapf1", "bm64_bn64_s8_ws_swap",
                          "bm99999999999999999999_bn64_s8_swap", "bm32_bn64_s-9_swap",
                          "bm32_bn64_s9_swap ", "bm32_bn64_s9_swap\n"}) {
    auto refused = parseTileConfig(bad);
    EXPECT_FALSE(static_cast<bool>(refused)) << bad;
    llvm::consumeError(refused.takeError());
  }
  auto message = [](const std::string &name, GemmKind k) {
    auto c = parseTileConfig(name);
    EXPECT_TRUE(static_cast<bool>(c)) << name;
    if (!c) {
      llvm::consumeError(c.takeError());
      return std::string("unparsed");
    }
    llvm::Error e = checkMmaConfig(*c, k);
    return e ? llvm::toString(std::move(e)) : std::string();
  };
  EXPECT_EQ(message("bm128_bn64_s7_swap", GemmKind::Gemm1), "");
  EXPECT_EQ(message("bm256_bn128_s4_swap", GemmKind::Gemm2), "");
  EXPECT_EQ(message("bm256_bn64_s4_swap", GemmKind::Gemm1), "");
  EXPECT_NE(message("bm512_bn64_s2_swap", GemmKind::Gemm1).find("bm 32"), std::string::npos);
  EXPECT_NE(message("bm48_bn128_s4_swap", GemmKind::Gemm2).find("bm 32"), std::string::npos);
  EXPECT_NE(message("bm64_bn128_s8_swap", GemmKind::Gemm1).find("bn 64"), std::string::npos);
  EXPECT_NE(message("bm64_bn64_s8_swap", GemmKind::Gemm2).find("bn 64"), std::string::npos);
  EXPECT_NE(message("bm128_bn64_s8_swap", GemmKind::Gemm1).find("shared memory"),
            std::string::npos);
  EXPECT_NE(message("bm32_bn64_s13_swap", GemmKind::Gemm1).find("2..12"), std::string::npos);
}

TEST(Codegen, InvalidConfigsAreRejectedWithTheRule) {
  auto message = [](TileConfig c, GemmKind k) {
    llvm::Error e = checkMmaConfig(c, k);
    return e ? llvm::toString(std::move(e)) : std::string();
  };
  EXPECT_EQ(message({128, 64, 3, 2, 2}, GemmKind::Gemm1), "");
  EXPECT_NE(message({24, 64, 3, 1, 4}, GemmKind::Gemm1).find("16-row"), std::string::npos);
  EXPECT_NE(message({128, 64, 1, 2, 2}, GemmKind::Gemm1).find("stages"), std::string::npos);
  EXPECT_NE(message({128, 24, 3, 2, 2}, GemmKind::Gemm2).find("multiples of 16"),
            std::string::npos);
  EXPECT_NE(message({256, 256, 8, 2, 2}, GemmKind::Gemm1).find("shared memory"), std::string::npos);
  EXPECT_NE(message({128, 64, 3, 8, 8}, GemmKind::Gemm1).find("1024 threads"), std::string::npos);
  EXPECT_NE(message({96, 64, 3, 0, 0, true}, GemmKind::Gemm1).find("warpgroup"), std::string::npos);
  EXPECT_NE(message({128, 96, 3, 0, 0, true}, GemmKind::Gemm2).find("B rows"), std::string::npos);
  // ptxas refuses these (it asks for 154 registers; 512 threads get 128).
  EXPECT_NE(message({256, 128, 3, 0, 0, true}, GemmKind::Gemm1).find("registers"),
            std::string::npos);
  EXPECT_NE(message({256, 256, 3, 0, 0, true}, GemmKind::Gemm2).find("registers"),
            std::string::npos);
  EXPECT_EQ(message({256, 192, 3, 0, 0, true}, GemmKind::Gemm2), "");
  EXPECT_EQ(message({192, 192, 4, 0, 0, true, 1}, GemmKind::Gemm2), "");
  EXPECT_EQ(message(wsTile(128, 4), GemmKind::Gemm1), "");
  EXPECT_EQ(message(wsTile(256, 4), GemmKind::Gemm2), "");
  EXPECT_NE(message(wsTile(256, 4), GemmKind::Gemm1).find("B rows"), std::string::npos);
  EXPECT_NE(message(wsTile(128, 5), GemmKind::Gemm1).find("shared memory"), std::string::npos);
  // Four stages fit beside GEMM1's staging rows (231,488 bytes), five not.
  EXPECT_EQ(message(wsTile(128, 4, true), GemmKind::Gemm1), "");
  EXPECT_NE(message(wsTile(128, 5, true), GemmKind::Gemm1).find("shared memory"),
            std::string::npos);
  EXPECT_EQ(message(wsTile(128, 3, true), GemmKind::Gemm1), "");
  EXPECT_EQ(message(wsTile(128, 4, false, 1), GemmKind::Gemm1), "");
  EXPECT_NE(message(wsTile(128, 4, false, 2), GemmKind::Gemm1).find("in flight"),
            std::string::npos);
  EXPECT_NE(message({128, 64, 3, 2, 2, false, 1}, GemmKind::Gemm1).find("in flight"),
            std::string::npos);
  TileConfig staged_plain{128, 64, 3, 0, 0, true, 0};
  staged_plain.staged = true;
  EXPECT_NE(message(staged_plain, GemmKind::Gemm1).find("staged"), std::string::npos);
  TileConfig tall = wsTile(64, 4);
  tall.bm = 192;
  EXPECT_NE(message(tall, GemmKind::Gemm2).find("bm 128"), std::string::npos);
  auto tall_parsed = parseTileConfig("bm192_bn64_s4_ws");
  ASSERT_TRUE(static_cast<bool>(tall_parsed));
  EXPECT_NE(message(*tall_parsed, GemmKind::Gemm2).find("bm 128"), std::string::npos);
}

TEST(Codegen, TemplatesAreEmbeddedWithoutToolkitHeaders) {
  const auto &all = embeddedTemplates();
  ASSERT_GE(all.size(), 8u);
  for (const EmbeddedTemplate &t : all) {
    const std::string text = t.text;
    EXPECT_EQ(text.find("#include <"), std::string::npos) << t.name;
    EXPECT_EQ(text.find("#include \"cuda"), std::string::npos) << t.name;
  }
  EXPECT_EQ(templatesHash().size(), 64u);
  EXPECT_EQ(templatesHash(), templatesHash());
}
