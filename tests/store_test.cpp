#include "codegen/embedded_templates.h"
#include "common/error.h"
#include "nvrtc/compile.h"
#include "nvrtc/library.h"
#include "runtime/builder.h"
#include "store/atomic_file.h"
#include "store/cache_admin.h"
#include "store/cubin_store.h"
#include "store/file_lock.h"
#include "workload/shape.h"

#include "testkit.h"

#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <thread>

using namespace moejit;
using namespace moejit::store;

namespace {

/// An entry as publish() stores it under `key` (the metadata holds the key).
Entry sampleEntry(const std::string &key = "k") {
  Entry e;
  e.cubin = std::string("\x7f"
                        "ELF",
                        4) +
            std::string(1000, '\x01');
  e.meta = {key, "moe_gemm1_test", "sm_90a", "13.0", 128, 0, 512, 321.5};
  return e;
}

const std::string kId = "387f47d7f9f305486339f19135dd03caaef8e1c1f525b475e775a6128546d915";

/// The entry `key` of the seed workload, holding sampleEntry()'s kernel.
EntryName name(const std::string &key) { return {kId, key, "moe_gemm1_test", "sm_90a"}; }

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}
void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}
bool exists(const std::string &path) { return llvm::sys::fs::exists(path); }

/// Sets a file's atime and mtime to `age_s` seconds ago.
void makeOld(const std::string &path, int age_s) {
  const time_t t = std::time(nullptr) - age_s;
  const struct timeval tv[2] = {{t, 0}, {t, 0}};
  ASSERT_EQ(::utimes(path.c_str(), tv), 0) << path;
}

/// The value, or a test failure with the error's text.
template <typename T> T get(llvm::Expected<T> value, T fallback) {
  if (value)
    return *value;
  ADD_FAILURE() << errorMessage(value.takeError());
  return fallback;
}
Removal removal(const std::string &path) {
  return get(removeIfUnheld(testkit::folderOf(path), testkit::baseName(path)), Removal::Missing);
}
Acquired acquire(const std::string &path, const LockOptions &options, FileLock &out) {
  return get(lockFile(testkit::folderOf(path), testkit::baseName(path), options, out),
             Acquired::Missing);
}
uint64_t size(const char *text) { return get<uint64_t>(parseSize(text), ~uint64_t{0}); }

CacheFile entryFile(const std::string &path, uint64_t size, int64_t atime, int64_t mtime) {
  CacheFile f;
  f.path = path;
  f.kind = FileKind::Entry;
  f.size = size;
  f.atime = atime;
  f.mtime = mtime;
  return f;
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
  testkit::TempDir dir("moejit-store-test");
  CubinStore a(dir.path);
  EXPECT_FALSE(a.load(name("key1")));
  EXPECT_EQ(a.misses(), 1u);
  a.publish(name("key1"), sampleEntry());
  EXPECT_EQ(a.entryPath(name("key1")), dir.path + "/v1/" + kId + "/key1.cubin");
  CubinStore b(dir.path); // as a new process would
  auto hit = b.load(name("key1"));
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
  testkit::TempDir dir("moejit-store-test");
  CubinStore s(dir.path);
  s.publish(name("k"), sampleEntry());
  const std::string path = s.entryPath(name("k"));
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
    EXPECT_FALSE(s.load(name("k"))) << variant;
    s.publish(name("k"), sampleEntry());
    EXPECT_TRUE(s.load(name("k"))) << variant;
  }
}

TEST(Store, UnwritableRootFallsBackToMemory) {
  testkit::TempDir dir("moejit-store-test");
  const std::string root = dir.path + "/not-a-directory";
  writeFile(root, "x");
  CubinStore s(root);
  s.publish(name("k"), sampleEntry());
  EXPECT_TRUE(s.memoryOnly());
  auto hit = s.load(name("k"));
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->cubin, sampleEntry().cubin);
  s.publish(name("k2"), sampleEntry()); // no second failure, no crash
  EXPECT_TRUE(s.load(name("k2")));
}

TEST(Store, CheckRootSaysWhyARootCannotBeUsed) {
  testkit::TempDir dir("moejit-store-test");
  auto why = [](const CubinStore &s, bool create) {
    llvm::Error e = s.checkRoot(create);
    return e ? errorMessage(std::move(e)) : std::string();
  };
  // A file where the root should be, or above it.
  const std::string file = dir.path + "/a-file";
  writeFile(file, "x");
  for (const std::string &root : {file, file + "/below"})
    for (bool create : {false, true}) {
      const std::string message = why(CubinStore(root), create);
      EXPECT_EQ(message.rfind("cache root " + root + ": ", 0), 0u) << message;
      EXPECT_NE(message.find("Not a directory"), std::string::npos) << message;
    }
  // A versioned folder others may write: not trusted, found before any use.
  const std::string shared = dir.path + "/shared";
  ASSERT_EQ(::mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((shared + "/v1").c_str(), 0700), 0);
  ASSERT_EQ(::chmod((shared + "/v1").c_str(), 0777), 0);
  for (bool create : {false, true})
    EXPECT_NE(why(CubinStore(shared), create).find("v1 is not trusted"), std::string::npos)
        << why(CubinStore(shared), create);
  // Missing: fine as it is (all misses), or made with its versioned folder.
  const std::string fresh = dir.path + "/fresh/cache";
  EXPECT_EQ(why(CubinStore(fresh), false), "");
  EXPECT_FALSE(exists(fresh));
  EXPECT_EQ(why(CubinStore(fresh), true), "");
  EXPECT_TRUE(llvm::sys::fs::is_directory(fresh + "/v1"));
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
  testkit::TempDir a("moejit-store-test"), b("moejit-store-test");
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

TEST(EntryKey, ChangesWithEachInputAndHoldsNoPath) {
  const MoeShape shape{2, 256, 128, 8, DType::BF16};
  codegen::KernelSpec spec{codegen::KernelKind::Gemm1, shape, {}};
  const std::string src = codegen::generateSource(spec);
  const runtime::EntryKeyInputs in = runtime::entryKeyInputs(spec, src, "sm_80");
  // The inputs are the real ones, so a new NVRTC, generator or template set
  // does reach the key.
  EXPECT_EQ(in.kernel, spec.name());
  EXPECT_EQ(in.arch, "sm_80");
  EXPECT_EQ(in.nvrtc_version, std::to_string(nvrtc::majorVersion()));
  EXPECT_EQ(in.generator_version, codegen::kGeneratorVersion);
  EXPECT_EQ(in.templates_hash, codegen::templatesHash());
  EXPECT_EQ(in.source_hash, workload::sha256Hex(src));
  EXPECT_EQ(in.options, nvrtc::compileOptions("sm_80"));
  EXPECT_TRUE(codegen::familyOptions(spec).empty());
  const std::string key = runtime::keyFromInputs(in);
  EXPECT_EQ(key, runtime::entryKey(spec, src, "sm_80"));

  auto changed = [&](auto mutate) {
    runtime::EntryKeyInputs other = in;
    mutate(other);
    return runtime::keyFromInputs(other);
  };
  EXPECT_NE(key, changed([](auto &i) { i.nvrtc_version += ".1"; })) << "NVRTC version";
  EXPECT_NE(key, changed([](auto &i) { i.arch = "sm_90a"; })) << "arch";
  EXPECT_NE(key, changed([](auto &i) { i.arch = "sm_90"; })) << "arch suffix";
  EXPECT_NE(key, changed([](auto &i) { i.templates_hash[0] ^= 1; })) << "templates";
  EXPECT_NE(key, changed([](auto &i) { ++i.generator_version; })) << "generator";
  EXPECT_NE(key, changed([](auto &i) { i.source_hash[0] ^= 1; })) << "source";
  EXPECT_NE(key, changed([](auto &i) { i.kernel += "x"; })) << "kernel";
  EXPECT_NE(key, changed([](auto &i) { i.options.push_back("-lineinfo"); })) << "options";
  // The real arch change moves both the arch and the options.
  EXPECT_NE(key, runtime::entryKey(spec, src, "sm_90a"));

  // No input is a path: neither the root nor any absolute path, whatever
  // the root is.
  std::vector<std::string> texts = {in.kernel, in.arch, in.nvrtc_version, in.templates_hash,
                                    in.source_hash};
  texts.insert(texts.end(), in.options.begin(), in.options.end());
  for (const char *root : {"/tmp/root-a", "/var/tmp/root-b"}) {
    setenv("MOEJIT_CACHE_DIR", root, 1);
    EXPECT_EQ(key, runtime::entryKey(spec, src, "sm_80"));
    for (const std::string &t : texts) {
      EXPECT_EQ(t.find(root), std::string::npos) << t;
      EXPECT_EQ(t.find('/'), std::string::npos) << t;
    }
  }
  unsetenv("MOEJIT_CACHE_DIR");
}

/// A kernel whose family adds NVRTC options (routing) has them in its key,
/// so the cache never hands it a cubin compiled with other options.
TEST(EntryKey, HoldsTheFamilyOptions) {
  const MoeShape shape{2, 256, 128, 8, DType::BF16};
  const codegen::KernelSpec spec{codegen::KernelKind::RouteWide, shape, {}};
  const std::string src = codegen::generateSource(spec);
  const std::vector<std::string> family = codegen::familyOptions(spec);
  ASSERT_FALSE(family.empty());
  const runtime::EntryKeyInputs in = runtime::entryKeyInputs(spec, src, "sm_90a");
  EXPECT_EQ(in.options, nvrtc::compileOptions("sm_90a", family));
  EXPECT_NE(in.options, nvrtc::compileOptions("sm_90a"));
  runtime::EntryKeyInputs plain = in;
  plain.options = nvrtc::compileOptions("sm_90a");
  EXPECT_NE(runtime::keyFromInputs(in), runtime::keyFromInputs(plain));
}

TEST(Store, LeftoverTemporaryFileIsNeverLoaded) {
  testkit::TempDir dir("moejit-store-test");
  CubinStore s(dir.path);
  const std::string path = s.entryPath(name("k"));
  const std::string good = encodeEntry(sampleEntry());
  llvm::sys::fs::create_directories(dir.path + "/v1/" + kId);
  // What a writer killed midway leaves: a partial file, and even a complete
  // one killed before its rename. Neither has the entry's name.
  writeFile(path + kTempMarker + "abcd1234", good.substr(0, good.size() / 2));
  writeFile(path + kTempMarker + "efgh5678", good);
  EXPECT_FALSE(s.load(name("k")));
  EXPECT_EQ(s.misses(), 1u);
  auto report = verifyCache(dir.path, /*fix=*/false);
  ASSERT_TRUE(static_cast<bool>(report));
  EXPECT_TRUE(report->corrupt.empty());
  ASSERT_EQ(report->temps.size(), 2u);
  for (const Finding &f : report->temps)
    EXPECT_NE(f.what.find("stale"), std::string::npos) << f.what;
  auto fixed = verifyCache(dir.path, /*fix=*/true);
  ASSERT_TRUE(static_cast<bool>(fixed));
  EXPECT_EQ(fixed->temps.size(), 2u);
  auto scan = scanCache(dir.path);
  ASSERT_TRUE(static_cast<bool>(scan));
  EXPECT_EQ(scan->count(FileKind::Temp), 0u);
}

TEST(Store, TemporaryFileOfALiveWriterIsKept) {
  testkit::TempDir dir("moejit-store-test");
  const std::string path = dir.path + "/v1/" + kId + "/k.cubin";
  // Published through writeFileAtomically while another "writer" holds a
  // temporary file share-locked, as writeFileAtomically does while writing.
  std::string why;
  ASSERT_TRUE(testkit::writeAtomically(path, encodeEntry(sampleEntry()), why)) << why;
  const std::string tmp = path + kTempMarker + "live0001";
  writeFile(tmp, "partial");
  FileLock writer;
  LockOptions shared;
  shared.exclusive = false;
  shared.create = false;
  ASSERT_EQ(acquire(tmp, shared, writer), Acquired::Yes);
  auto report = verifyCache(dir.path, /*fix=*/true);
  ASSERT_TRUE(static_cast<bool>(report));
  ASSERT_EQ(report->temps.size(), 1u);
  EXPECT_EQ(report->temps[0].what, "being written");
  EXPECT_FALSE(report->temps[0].removed);
  EXPECT_TRUE(exists(tmp));
  auto pruned = pruneCache(dir.path, 1ull << 30);
  ASSERT_TRUE(static_cast<bool>(pruned));
  EXPECT_TRUE(pruned->temps.empty());
  EXPECT_TRUE(exists(tmp));
  writer.release(); // the writer dies
  pruned = pruneCache(dir.path, 1ull << 30);
  ASSERT_TRUE(static_cast<bool>(pruned));
  EXPECT_EQ(pruned->temps.size(), 1u);
  EXPECT_FALSE(exists(tmp));
  EXPECT_TRUE(exists(path));
}

TEST(Store, LoadedAndPublishedEntriesAreLeased) {
  testkit::TempDir dir("moejit-store-test");
  CubinStore s(dir.path);
  const std::string path = s.entryPath(name("k"));
  // flock locks belong to the open file, so a second open in this process
  // conflicts with the lease just as another process would.
  Lease published = s.publish(name("k"), sampleEntry()).lease;
  ASSERT_TRUE(published);
  EXPECT_EQ(removal(path), Removal::Held);
  published.reset();
  std::optional<Entry> hit = s.load(name("k"));
  ASSERT_TRUE(hit);
  ASSERT_TRUE(hit->lease);
  EXPECT_EQ(removal(path), Removal::Held);
  Entry copy = *hit; // copies share the lease
  hit.reset();
  EXPECT_EQ(removal(path), Removal::Held);
  copy = Entry();
  EXPECT_EQ(removal(path), Removal::Removed);
  EXPECT_FALSE(exists(path));
  EXPECT_EQ(removal(path), Removal::Missing);
}

/// Anyone who may read an entry may flock it: an exclusive lock held by
/// someone else (another local user on a world-readable root) makes the
/// entry a miss after kEntryLockWait, not a reader that waits forever.
TEST(Store, AForeignLockOnAnEntryIsAMissNotAHang) {
  testkit::TempDir dir("moejit-store-test");
  CubinStore s(dir.path);
  s.publish(name("k"), sampleEntry());
  const int fd = ::open(s.entryPath(name("k")).c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  CubinStore reader(dir.path); // as another process would
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(reader.load(name("k")));
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, kEntryLockWait);
  EXPECT_LT(waited, kEntryLockWait + std::chrono::seconds(10));
  // A lock released while the reader waits is taken: the entry is a hit.
  std::thread unlock([fd] {
    std::this_thread::sleep_for(kEntryLockWait / 5);
    ::flock(fd, LOCK_UN);
  });
  EXPECT_TRUE(reader.load(name("k")));
  unlock.join();
  ::close(fd);
}

TEST(Store, KeyLockIsExclusiveAndLeavesNoFile) {
  testkit::TempDir dir("moejit-store-test");
  CubinStore s(dir.path);
  const std::string lock_path = s.lockPath(name("k"));
  EXPECT_EQ(lock_path, dir.path + "/v1/" + kId + "/k.lock");
  FileLock first = s.lockKey(name("k"));
  ASSERT_TRUE(first.held());
  EXPECT_TRUE(exists(lock_path));
  FileLock probe;
  LockOptions no_wait;
  no_wait.wait = false;
  EXPECT_EQ(acquire(lock_path, no_wait, probe), Acquired::Busy);

  // A second taker waits; when the first releases (and removes the file) it
  // must end up holding the lock of the file that has the name now.
  std::atomic<bool> taken{false};
  FileLock second;
  std::thread waiter([&] {
    second = s.lockKey(name("k"));
    taken = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(taken);
  first.release();
  waiter.join();
  ASSERT_TRUE(second.held());
  EXPECT_TRUE(
      safefs::namesFile(second.fd(), testkit::folderOf(lock_path), testkit::baseName(lock_path)));
  EXPECT_EQ(acquire(lock_path, no_wait, probe), Acquired::Busy);
  second.release();
  EXPECT_FALSE(exists(lock_path));
}

// A holder that never lets go (another user's process on a shared root, or
// a stopped one) costs a compile its lock after a bounded wait, not its
// progress.
TEST(Store, AKeyLockHeldForeverIsWaitedForBoundedly) {
  testkit::TempDir dir("moejit-store-test");
  CubinStore holder(dir.path);
  FileLock held = holder.lockKey(name("k"));
  ASSERT_TRUE(held.held());
  const std::chrono::milliseconds bound{300};
  CubinStore s(dir.path, bound); // as another process would
  const auto start = std::chrono::steady_clock::now();
  FileLock waited_for = s.lockKey(name("k"));
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(waited_for.held());
  EXPECT_GE(waited, bound);
  EXPECT_LT(waited, bound + std::chrono::seconds(10));
  held.release();
  EXPECT_TRUE(s.lockKey(name("k")).held());
}

// The keys of one program share one bound (ProgramBuild passes it): two
// keys held for ever cost one wait, not two.
TEST(Store, KeyLocksShareOneBound) {
  testkit::TempDir dir("moejit-store-test");
  CubinStore holder(dir.path);
  FileLock a = holder.lockKey(name("a")), b = holder.lockKey(name("b"));
  ASSERT_TRUE(a.held() && b.held());
  const std::chrono::milliseconds bound{400};
  CubinStore s(dir.path, bound);
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + s.keyLockWait();
  EXPECT_FALSE(s.lockKey(name("a"), until).held());
  EXPECT_FALSE(s.lockKey(name("b"), until).held());
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, bound);
  EXPECT_LT(waited, 2 * bound - std::chrono::milliseconds(100));
}

TEST(Store, KeyLockIsSkippedWhereItCannotBeCreated) {
  testkit::TempDir dir("moejit-store-test");
  const std::string root = dir.path + "/not-a-directory";
  writeFile(root, "x");
  CubinStore s(root);
  EXPECT_FALSE(s.lockKey(name("k")).held());
  s.publish(name("k"), sampleEntry()); // memory-only from here on
  EXPECT_TRUE(s.memoryOnly());
  EXPECT_FALSE(s.lockKey(name("k")).held());
}

TEST(Store, SecondLookTurnsTheMissIntoAHit) {
  testkit::TempDir dir("moejit-store-test");
  CubinStore mine(dir.path), other(dir.path);
  EXPECT_FALSE(mine.load(name("k")));
  EXPECT_FALSE(mine.loadAgain(name("k")));
  EXPECT_EQ(mine.misses(), 1u); // one spec, one miss, however many looks
  other.publish(name("k"), sampleEntry());
  EXPECT_TRUE(mine.loadAgain(name("k")));
  EXPECT_EQ(mine.misses(), 0u);
  EXPECT_EQ(mine.hits(), 1u);
}

TEST(CacheAdmin, ParseSize) {
  EXPECT_EQ(size("12345"), 12345u);
  EXPECT_EQ(size("0"), 0u);
  EXPECT_EQ(size("100K"), 102400u);
  EXPECT_EQ(size("512M"), 512ull << 20);
  EXPECT_EQ(size("2G"), 2ull << 30);
  EXPECT_EQ(size("2g"), 2ull << 30);
  EXPECT_EQ(size("2GiB"), 2ull << 30);
  EXPECT_EQ(size("3kb"), 3072u);
  EXPECT_EQ(size("1T"), 1ull << 40);
  EXPECT_EQ(size("7B"), 7u);
  for (const char *bad :
       {"", "M", "-1", "1.5G", "12Q", "1 G", "G1", "1iB", "99999999999999999999", "20000000T"}) {
    auto v = parseSize(bad);
    EXPECT_FALSE(static_cast<bool>(v)) << bad;
    if (!v) {
      EXPECT_NE(errorMessage(v.takeError()).find("512M"), std::string::npos);
    }
  }
  EXPECT_EQ(formatSize(1000), "1000");
  EXPECT_EQ(formatSize(1536), "1.5K");
  EXPECT_EQ(formatSize(3ull << 30), "3.0G");
}

TEST(CacheAdmin, LruOrderAndPruneWalk) {
  std::vector<CacheFile> files = {
      entryFile("/c/d.cubin", 100, 50, 10), // last used 50
      entryFile("/c/a.cubin", 100, 5, 30),  // 30: written after its last read
      entryFile("/c/b.cubin", 100, 20, 10), // 20
      entryFile("/c/e.cubin", 100, 30, 30), // 30, ties with a: by path
  };
  CacheFile lock = entryFile("/c/a.lock", 1000, 0, 0);
  lock.kind = FileKind::Lock;
  files.push_back(lock);
  EXPECT_EQ(lruOrder(files), (std::vector<size_t>{2, 1, 3, 0}));

  std::vector<std::string> offered;
  auto removeAll = [&](const CacheFile &f) {
    offered.push_back(f.path);
    return true;
  };
  EXPECT_EQ(pruneOrder(files, 400, removeAll), std::vector<size_t>{});
  EXPECT_EQ(pruneOrder(files, 250, removeAll), (std::vector<size_t>{2, 1}));
  EXPECT_EQ(pruneOrder(files, 0, removeAll), (std::vector<size_t>{2, 1, 3, 0}));
  // An entry in use stays, counts, and the walk goes on to the next one.
  offered.clear();
  auto keepA = [&](const CacheFile &f) {
    offered.push_back(f.path);
    return f.path != "/c/a.cubin";
  };
  EXPECT_EQ(pruneOrder(files, 250, keepA), (std::vector<size_t>{2, 3}));
  EXPECT_EQ(offered, (std::vector<std::string>{"/c/b.cubin", "/c/a.cubin", "/c/e.cubin"}));
}

TEST(CacheAdmin, LoadMarksUseForPrune) {
  testkit::TempDir dir("moejit-store-test");
  CubinStore s(dir.path);
  for (const char *k : {"a", "b", "c"})
    s.publish(name(k), sampleEntry());
  makeOld(s.entryPath(name("a")), 3000);
  makeOld(s.entryPath(name("b")), 2000);
  makeOld(s.entryPath(name("c")), 1000);
  // "a" is the oldest file but the most recently used one.
  ASSERT_TRUE(s.load(name("a")));
  const uint64_t one = encodeEntry(sampleEntry("a")).size();
  auto report = pruneCache(dir.path, one);
  ASSERT_TRUE(static_cast<bool>(report));
  ASSERT_EQ(report->removed.size(), 2u);
  EXPECT_EQ(report->removed[0].path, s.entryPath(name("b")));
  EXPECT_EQ(report->removed[1].path, s.entryPath(name("c")));
  EXPECT_EQ(report->final_entries, 1u);
  EXPECT_EQ(report->final_bytes, one);
  EXPECT_TRUE(exists(s.entryPath(name("a"))));
  EXPECT_FALSE(exists(s.lockPath(name("b")))); // prune's key locks leave nothing
}

TEST(CacheAdmin, VerifyFindsAndFixesCorruptEntriesAndStaleLocks) {
  testkit::TempDir dir("moejit-store-test");
  CubinStore s(dir.path);
  s.publish(name("good"), sampleEntry());
  s.publish(name("bad"), sampleEntry());
  std::string bytes = readFile(s.entryPath(name("bad")));
  bytes[bytes.size() / 2] ^= 0x40;
  writeFile(s.entryPath(name("bad")), bytes);
  writeFile(s.lockPath(name("gone")), ""); // a compile killed with its lock
  auto report = verifyCache(dir.path, /*fix=*/false);
  ASSERT_TRUE(static_cast<bool>(report));
  EXPECT_FALSE(report->ok());
  EXPECT_EQ(report->entries_ok, 1u);
  ASSERT_EQ(report->corrupt.size(), 1u);
  EXPECT_EQ(report->corrupt[0].path, s.entryPath(name("bad")));
  EXPECT_EQ(report->corrupt[0].what, "checksum mismatch");
  ASSERT_EQ(report->stale_locks.size(), 1u);
  // A lock held by a compile in progress is not stale.
  FileLock compiling = s.lockKey(name("busy"));
  report = verifyCache(dir.path, /*fix=*/true);
  ASSERT_TRUE(static_cast<bool>(report));
  EXPECT_TRUE(report->ok());
  ASSERT_EQ(report->corrupt.size(), 1u);
  EXPECT_TRUE(report->corrupt[0].removed);
  ASSERT_EQ(report->stale_locks.size(), 1u);
  EXPECT_TRUE(report->stale_locks[0].removed);
  EXPECT_FALSE(exists(s.entryPath(name("bad"))));
  EXPECT_FALSE(exists(s.lockPath(name("gone"))));
  EXPECT_TRUE(exists(s.lockPath(name("busy"))));
  EXPECT_TRUE(exists(s.entryPath(name("good"))));
}

TEST(CacheAdmin, ScanListsEntriesAndTuningFiles) {
  testkit::TempDir dir("moejit-store-test");
  auto empty = scanCache(dir.path + "/nothing-here");
  ASSERT_TRUE(static_cast<bool>(empty));
  EXPECT_TRUE(empty->files.empty());
  CubinStore s(dir.path);
  s.publish(name("a"), sampleEntry());
  const std::string record = dir.path + "/tuning/v1/" + kId + "/nvidia-h200/moejit-0.2.0.json";
  std::string why;
  ASSERT_TRUE(testkit::writeAtomically(record, "{}", why)) << why;
  auto scan = scanCache(dir.path);
  ASSERT_TRUE(static_cast<bool>(scan));
  ASSERT_EQ(scan->files.size(), 1u);
  EXPECT_EQ(scan->files[0].relative, "v1/" + kId + "/a.cubin");
  EXPECT_EQ(scan->files[0].workload_id, kId);
  EXPECT_EQ(scan->entryBytes(), encodeEntry(sampleEntry("a")).size());
  ASSERT_EQ(scan->tuning.size(), 1u);
  EXPECT_EQ(scan->tuning[0].relative, "tuning/v1/" + kId + "/nvidia-h200/moejit-0.2.0.json");
  auto meta = checkEntryFile(dir.path, scan->files[0]);
  ASSERT_TRUE(static_cast<bool>(meta));
  EXPECT_EQ(meta->kernel, "moe_gemm1_test");
}
