#include "workload/shape.h"

#include <gtest/gtest.h>

using namespace moejit;

namespace {
MoeShape seed() { return {8, 2048, 768, 128, DType::BF16}; }
} // namespace

TEST(Workload, CanonicalTextOfSeedShape) {
  EXPECT_EQ(canonical_text(seed()),
            "moejit-workload v1 k=8 hidden=2048 intermediate=768 experts=128 "
            "dtype=bf16");
}

TEST(Workload, FixedIdVectors) {
  // sha256 of the canonical text, computed independently with sha256sum.
  EXPECT_EQ(workload_id(seed()),
            "387f47d7f9f305486339f19135dd03caaef8e1c1f525b475e775a6128546d915");
  EXPECT_EQ(workload_id({2, 4096, 14336, 8, DType::FP16}),
            "8c0d04b6ea940241a14433f7fb1a2618897e5dfa38c3d15ddf52ac2f2949a5e6");
}

TEST(Workload, EveryFieldChangesTheId) {
  const std::string base = workload_id(seed());
  std::vector<MoeShape> variants(5, seed());
  variants[0].k = 7;
  variants[1].hidden = 2056;
  variants[2].intermediate = 776;
  variants[3].experts = 127;
  variants[4].dtype = DType::FP16;
  std::set<std::string> ids{base};
  for (const MoeShape &v : variants)
    ids.insert(workload_id(v));
  EXPECT_EQ(ids.size(), 6u);
}

TEST(Workload, ValidationNamesTheField) {
  auto expectInvalid = [](MoeShape s, const std::string &needle) {
    try {
      validate(s);
      ADD_FAILURE() << "accepted " << canonical_text(s);
    } catch (const Error &e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidShape);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  struct Bad {
    void (*edit)(MoeShape &);
    const char *needle;
  } cases[] = {
      {[](MoeShape &s) { s.k = 0; }, "k = 0"},
      {[](MoeShape &s) { s.k = kMaxK + 1; }, "k = 4097"},
      {[](MoeShape &s) { s.hidden = 2050; }, "hidden = 2050"},
      {[](MoeShape &s) { s.intermediate = 0; }, "intermediate = 0"},
      {[](MoeShape &s) { s.experts = 0; }, "experts = 0"},
      {[](MoeShape &s) { s.dtype = static_cast<DType>(7); }, "unknown dtype"},
  };
  for (const Bad &b : cases) {
    MoeShape s = seed();
    b.edit(s);
    expectInvalid(s, b.needle);
  }
  EXPECT_NO_THROW(validate(seed()));
  EXPECT_NO_THROW(validate({1, 8, 8, 1, DType::FP32}));
  // More slots than experts: one GPU's share of an expert-parallel layer.
  EXPECT_NO_THROW(validate({8, 2048, 768, 1, DType::BF16}));
  EXPECT_NO_THROW(validate({kMaxK, 8, 8, 2, DType::BF16}));
}

TEST(Workload, DtypeNames) {
  EXPECT_EQ(parse_dtype("fp16"), DType::FP16);
  EXPECT_THROW(parse_dtype("int8"), Error);
  EXPECT_EQ(dtype_bytes(DType::FP32), 4);
}
