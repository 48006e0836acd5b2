#include "runtime/builder.h"
#include "store/cubin_store.h"

#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>

#include <cstdlib>
#include <fstream>
#include <sys/stat.h>

using namespace moejit;
using namespace moejit::store;

namespace {

class TempDir {
public:
  TempDir() {
    llvm::SmallString<128> p;
    llvm::sys::fs::createUniqueDirectory("moejit-store-test", p);
    path = std::string(p);
  }
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
  std::string path;
};

Entry sampleEntry() {
  Entry e;
  e.cubin = std::string("\x7f"
                        "ELF",
                        4) +
            std::string(1000, '\x01');
  e.meta = {"moe_gemm1_test", "sm_90a", 128, 0, 512, 321.5};
  return e;
}

const std::string kId = "387f47d7f9f305486339f19135dd03caaef8e1c1f525b475e775a6128546d915";

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}
void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

} // namespace

TEST(Store, EncodeDecodeRoundTrip) {
  const Entry e = sampleEntry();
  std::string why;
  auto back = decodeEntry(encodeEntry(e), why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->cubin, e.cubin);
  EXPECT_EQ(back->meta.kernel, "moe_gemm1_test");
  EXPECT_EQ(back->meta.registers, 128);
  EXPECT_EQ(back->meta.static_shared_bytes, 512);
}

TEST(Store, MissThenHitAcrossInstances) {
  TempDir dir;
  CubinStore a(dir.path);
  EXPECT_FALSE(a.load(kId, "key1"));
  EXPECT_EQ(a.misses(), 1u);
  a.publish(kId, "key1", sampleEntry());
  EXPECT_EQ(a.entryPath(kId, "key1"), dir.path + "/v1/" + kId + "/key1.cubin");
  CubinStore b(dir.path); // as a new process would
  auto hit = b.load(kId, "key1");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->cubin, sampleEntry().cubin);
  EXPECT_EQ(b.hits(), 1u);
  // no temporary files are left behind
  std::error_code ec;
  int files = 0;
  for (llvm::sys::fs::directory_iterator it(dir.path + "/v1/" + kId, ec), end; it != end && !ec;
       it.increment(ec))
    ++files;
  EXPECT_EQ(files, 1);
}

TEST(Store, CorruptOrTruncatedEntryIsAMissAndIsReplaced) {
  TempDir dir;
  CubinStore s(dir.path);
  s.publish(kId, "k", sampleEntry());
  const std::string path = s.entryPath(kId, "k");
  const std::string good = readFile(path);
  for (int variant = 0; variant < 3; ++variant) {
    std::string bad = good;
    if (variant == 0)
      bad.resize(bad.size() / 2); // truncated
    if (variant == 1)
      bad[bad.size() / 2] ^= 0x40; // flipped bit
    if (variant == 2)
      bad = "garbage"; // not an entry
    writeFile(path, bad);
    EXPECT_FALSE(s.load(kId, "k")) << variant;
    s.publish(kId, "k", sampleEntry());
    EXPECT_TRUE(s.load(kId, "k")) << variant;
  }
}

TEST(Store, UnwritableRootFallsBackToMemory) {
  TempDir dir;
  const std::string root = dir.path + "/not-a-directory";
  writeFile(root, "x");
  CubinStore s(root);
  s.publish(kId, "k", sampleEntry());
  EXPECT_TRUE(s.memoryOnly());
  auto hit = s.load(kId, "k");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->cubin, sampleEntry().cubin);
  s.publish(kId, "k2", sampleEntry()); // no second failure, no crash
  EXPECT_TRUE(s.load(kId, "k2"));
}

TEST(Store, DefaultRootFollowsEnvironment) {
  setenv("MOEJIT_CACHE_DIR", "/some/where", 1);
  EXPECT_EQ(defaultRoot(), "/some/where");
  unsetenv("MOEJIT_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(defaultRoot(), "/xdg/moejit");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(defaultRoot(), "/home/u/.cache/moejit");
}

TEST(Store, EntryKeyCoversArchAndConfigButNoPaths) {
  const MoeShape shape{8, 2048, 768, 128, DType::BF16};
  codegen::KernelSpec spec{codegen::KernelKind::Gemm1, shape, {}};
  const std::string src = codegen::generateSource(spec);
  const std::string key = runtime::entryKey(spec, src, "sm_90a");
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key, runtime::entryKey(spec, src, "sm_90a"));
  EXPECT_NE(key, runtime::entryKey(spec, src, "sm_80"));
  codegen::KernelSpec other = spec;
  other.tile.stages = 4;
  EXPECT_NE(key, runtime::entryKey(other, codegen::generateSource(other), "sm_90a"));
  setenv("MOEJIT_CACHE_DIR", "/elsewhere", 1);
  EXPECT_EQ(key, runtime::entryKey(spec, src, "sm_90a"));
  unsetenv("MOEJIT_CACHE_DIR");
}

TEST(Store, WarmedCacheIsUsedFromACopy) {
  TempDir a, b;
  const MoeShape shape{2, 64, 32, 4, DType::BF16};
  const runtime::Plan plan = runtime::heuristicPlan(shape, "sm_80");
  const auto specs = runtime::kernelSpecs(shape, plan);
  CubinStore first(a.path);
  auto built = runtime::buildKernels(specs, "sm_80", first);
  ASSERT_TRUE(static_cast<bool>(built));
  for (const auto &k : *built)
    EXPECT_FALSE(k.from_cache);
  const std::string copy = b.path + "/moved";
  ASSERT_EQ(std::system(("cp -r " + a.path + " " + copy).c_str()), 0);
  CubinStore moved(copy);
  auto again = runtime::buildKernels(specs, "sm_80", moved);
  ASSERT_TRUE(static_cast<bool>(again));
  for (const auto &k : *again)
    EXPECT_TRUE(k.from_cache) << k.spec.name();
  EXPECT_EQ(moved.misses(), 0u);
}
