// The cache root as a hostile local user would leave it: links to folders
// outside the root, dangling lock links, FIFOs at entry names, folders
// writable by others or owned by someone else, deeply nested or huge JSON,
// valid entries under another key's name, a disk that fills up, crashed
// writers' leftovers. Nothing outside the root may change, nothing may
// block or crash, and untrusted files are never loaded.
#include "api/warm.h"
#include "common/error.h"
#include "common/safe_fs.h"
#include "nvrtc/compile.h"
#include "store/atomic_file.h"
#include "store/cache_admin.h"
#include "store/cubin_store.h"
#include "tune/plan_lookup.h"
#include "tune/record.h"
#include "workload/shape.h"

#include "testkit.h"

#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SHA256.h>

#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <map>
#include <pwd.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <tuple>
#include <unistd.h>

using namespace moejit;
using namespace moejit::store;

namespace {

const std::string kId = "387f47d7f9f305486339f19135dd03caaef8e1c1f525b475e775a6128546d915";
const std::string kZeros(64, '0');

EntryName name(const std::string &key, const std::string &id = kId) {
  return {id, key, "moe_hostile_kernel", "sm_90a"};
}

Entry sampleEntry() {
  Entry e;
  e.cubin = std::string("\x7f"
                        "ELF",
                        4) +
            std::string(500, '\x03');
  e.meta = {"", "moe_hostile_kernel", "sm_90a", "13.0", 64, 0, 0, 1};
  return e;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}
void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}
bool exists(const std::string &path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}
void makeDirs(const std::string &path) {
  ASSERT_FALSE(llvm::sys::fs::create_directories(path, true, llvm::sys::fs::owner_all)) << path;
}
void symlinkTo(const std::string &target, const std::string &link) {
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0) << link;
}
mode_t modeOf(const std::string &path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

/// An entry file with `meta` as its metadata text and a valid trailer: what
/// someone who can write the root could forge.
std::string forgeEntry(const std::string &meta, const std::string &cubin) {
  std::string out = encodeEntry(sampleEntry()).substr(0, 8); // magic and version
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((meta.size() >> (8 * i)) & 0xff));
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((static_cast<uint64_t>(cubin.size()) >> (8 * i)) & 0xff));
  out += meta + cubin;
  const auto digest = llvm::SHA256::hash(llvm::arrayRefFromStringRef(out));
  out.append(digest.begin(), digest.end());
  return out;
}

/// Names and contents of the files in `dir` (one level), to compare before
/// and after.
std::map<std::string, std::string> snapshot(const std::string &dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec))
    out[it->path()] = readFile(it->path());
  return out;
}

/// A folder outside the root with files the cache's cleaners would remove
/// if they were inside it.
struct Victim {
  explicit Victim(const std::string &path) : path(path) {
    makeDirs(path);
    writeFile(path + "/precious.cubin", "not an entry");
    writeFile(path + "/precious.lock", "");
    writeFile(path + "/precious.cubin.tmp-abcd1234", "partial");
    writeFile(path + "/precious.json", "{}");
    writeFile(path + "/precious.json.tmp-abcd1234", "{");
    before = snapshot(path);
  }
  std::string path;
  std::map<std::string, std::string> before;
};

/// Runs `body` in a child process and reports whether it finished within
/// `seconds` (the child is killed otherwise): a check that cannot hang.
bool finishesWithin(int seconds, const std::function<void()> &body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::_exit(0);
  }
  for (int waited = 0; waited < seconds * 20; ++waited) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    ::usleep(50000);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return false;
}

VerifyReport verify(const std::string &root, bool fix) {
  auto r = verifyCache(root, fix);
  if (!r) {
    ADD_FAILURE() << errorMessage(r.takeError());
    return {};
  }
  return std::move(*r);
}

bool mentions(const std::vector<Finding> &findings, const std::string &path,
              const std::string &what) {
  for (const Finding &f : findings)
    if (f.path == path && f.what.find(what) != std::string::npos)
      return true;
  return false;
}

} // namespace

TEST(HostileCache, SymlinkedWorkloadAndTuningFoldersAreNeverEntered) {
  testkit::TempDir dir("moejit-hostile-test");
  const std::string root = dir.path + "/cache";
  Victim victim(dir.path + "/victim"), victim2(dir.path + "/victim2");
  CubinStore s(root);
  ASSERT_TRUE(s.publish(name("good"), sampleEntry()).not_saved.empty());
  symlinkTo(victim.path, root + "/v1/" + kZeros);
  makeDirs(root + "/tuning");
  symlinkTo(victim2.path, root + "/tuning/v1");

  VerifyReport report = verify(root, /*fix=*/false);
  EXPECT_FALSE(report.ok());
  EXPECT_TRUE(mentions(report.refused, root + "/v1/" + kZeros, "symbolic link")) << root;
  EXPECT_TRUE(mentions(report.refused, root + "/tuning/v1", "symbolic link"));
  EXPECT_EQ(report.entries_ok, 1u);
  report = verify(root, /*fix=*/true);
  auto pruned = pruneCache(root, 0);
  ASSERT_TRUE(static_cast<bool>(pruned)) << errorMessage(pruned.takeError());
  // The links themselves are gone; what they pointed to is untouched.
  EXPECT_FALSE(exists(root + "/v1/" + kZeros));
  EXPECT_FALSE(exists(root + "/tuning/v1"));
  EXPECT_EQ(snapshot(victim.path), victim.before);
  EXPECT_EQ(snapshot(victim2.path), victim2.before);
  EXPECT_TRUE(verify(root, false).ok());

  // The versioned folder itself as a link: reported, removed by --fix.
  const std::string moved = root + "/v1-moved";
  ASSERT_EQ(::rename((root + "/v1").c_str(), moved.c_str()), 0);
  symlinkTo(victim.path, root + "/v1");
  report = verify(root, /*fix=*/false);
  EXPECT_TRUE(mentions(report.refused, root + "/v1", "symbolic link"));
  EXPECT_EQ(report.entries_ok, 0u);
  EXPECT_FALSE(CubinStore(root).load(name("good")));
  report = verify(root, /*fix=*/true);
  EXPECT_FALSE(exists(root + "/v1"));
  EXPECT_EQ(snapshot(victim.path), victim.before);
  ASSERT_EQ(::rename(moved.c_str(), (root + "/v1").c_str()), 0);

  // Writers refuse the link too: nothing is created through it.
  symlinkTo(victim.path, root + "/v1/" + kZeros);
  CubinStore writer(root);
  EXPECT_FALSE(writer.load(name("k", kZeros)));
  EXPECT_FALSE(writer.lockKey(name("k", kZeros)).held());
  const Published p = writer.publish(name("k", kZeros), sampleEntry());
  EXPECT_FALSE(p.lease);
  EXPECT_NE(p.not_saved.find("symbolic link"), std::string::npos) << p.not_saved;
  EXPECT_TRUE(writer.load(name("k", kZeros))); // from memory
  EXPECT_EQ(snapshot(victim.path), victim.before);
  // The record writer refuses the linked tuning folder.
  makeDirs(root + "/tuning");
  ::unlink((root + "/tuning/v1").c_str());
  symlinkTo(victim2.path, root + "/tuning/v1");
  tune::TuningRecord record = tune::shippedRecords().front();
  llvm::Error saved = tune::saveRecord(root, record);
  ASSERT_TRUE(static_cast<bool>(saved));
  EXPECT_NE(errorMessage(std::move(saved)).find("symbolic link"), std::string::npos);
  EXPECT_FALSE(tune::loadRecord(root, record.workload_id, record.gpu, record.moejit_version));
  EXPECT_EQ(snapshot(victim2.path), victim2.before);
}

TEST(HostileCache, DanglingLockLinkCreatesNothing) {
  testkit::TempDir dir("moejit-hostile-test");
  const std::string root = dir.path + "/cache";
  makeDirs(root + "/v1/" + kId);
  const std::string target = dir.path + "/created-by-victim";
  symlinkTo(target, root + "/v1/" + kId + "/k.lock");
  symlinkTo(dir.path + "/entry-target", root + "/v1/" + kId + "/k.cubin");
  CubinStore s(root);
  EXPECT_FALSE(s.lockKey(name("k")).held());
  EXPECT_FALSE(s.load(name("k")));
  EXPECT_FALSE(exists(target));
  EXPECT_FALSE(exists(dir.path + "/entry-target"));
  // Publishing replaces the link at the entry's name with a real entry.
  EXPECT_TRUE(s.publish(name("k"), sampleEntry()).not_saved.empty());
  EXPECT_FALSE(exists(dir.path + "/entry-target"));
  struct stat st {};
  ASSERT_EQ(::lstat(s.entryPath(name("k")).c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  const VerifyReport report = verify(root, /*fix=*/true);
  EXPECT_TRUE(mentions(report.refused, root + "/v1/" + kId + "/k.lock", "symbolic link"));
  EXPECT_FALSE(exists(root + "/v1/" + kId + "/k.lock"));
}

/// A folder at an entry's name (where nothing can be published) is
/// reported by verify, which then fails; a folder of any other name is not
/// the cache's and is left alone.
TEST(HostileCache, AFolderAtAnEntryNameIsReported) {
  testkit::TempDir dir("moejit-hostile-test");
  const std::string root = dir.path + "/cache";
  const std::string squatter = root + "/v1/" + kId + "/k.cubin";
  makeDirs(squatter + "/sub");
  makeDirs(root + "/v1/" + kId + "/notes");
  EXPECT_FALSE(CubinStore(root).load(name("k")));
  const VerifyReport report = verify(root, /*fix=*/true);
  EXPECT_TRUE(mentions(report.refused, squatter, "folder at a cache file's name"));
  EXPECT_FALSE(mentions(report.refused, root + "/v1/" + kId + "/notes", ""));
  EXPECT_FALSE(report.ok());
  EXPECT_TRUE(exists(squatter)) << "folders are left to the user";
}

TEST(HostileCache, FifoAtAnEntryNameNeverBlocks) {
  testkit::TempDir dir("moejit-hostile-test");
  const std::string root = dir.path + "/cache";
  makeDirs(root + "/v1/" + kId);
  const std::string fifo = root + "/v1/" + kId + "/k.cubin";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo((root + "/v1/" + kId + "/k.lock").c_str(), 0600), 0);
  EXPECT_TRUE(finishesWithin(20, [&] {
    CubinStore s(root);
    if (s.load(name("k")) || s.lockKey(name("k")).held())
      ::_exit(2);
    if (!verifyCache(root, false))
      ::_exit(3);
  }));
  const VerifyReport report = verify(root, /*fix=*/true);
  EXPECT_TRUE(mentions(report.refused, fifo, "FIFO"));
  EXPECT_FALSE(exists(fifo));
  EXPECT_TRUE(verify(root, false).ok());
}

TEST(HostileCache, RootsWritableByOthersAreNotTrustedUnlessShared) {
  testkit::TempDir dir("moejit-hostile-test");
  const std::string root = dir.path + "/cache";
  ASSERT_TRUE(CubinStore(root).publish(name("k"), sampleEntry()).not_saved.empty());
  const std::string folder = root + "/v1/" + kId;
  for (const std::string &where : {root, folder}) {
    for (mode_t mode : {0770, 0707, 0777}) {
      ASSERT_EQ(::chmod(where.c_str(), mode), 0);
      CubinStore s(root);
      EXPECT_FALSE(s.load(name("k"))) << where << " " << mode;
      const Published p = s.publish(name("k2"), sampleEntry());
      EXPECT_NE(p.not_saved.find("not trusted"), std::string::npos) << p.not_saved;
      EXPECT_FALSE(exists(folder + "/k2.cubin"));
      auto scan = scanCache(root);
      if (where == root) {
        EXPECT_FALSE(static_cast<bool>(scan)) << "cache commands refuse the root";
        if (!scan)
          EXPECT_NE(errorMessage(scan.takeError()).find("writable by"), std::string::npos);
      } else {
        ASSERT_TRUE(static_cast<bool>(scan));
        EXPECT_EQ(scan->refused.size(), 1u);
      }
      {
        testkit::EnvVar shared("MOEJIT_CACHE_TRUST", "shared");
        CubinStore trusting(root);
        EXPECT_TRUE(trusting.load(name("k"))) << "shared on purpose";
      }
      ASSERT_EQ(::chmod(where.c_str(), 0700), 0);
    }
  }
  EXPECT_TRUE(CubinStore(root).load(name("k")));
}

TEST(HostileCache, RootOwnedByAnotherUserIsNotTrusted) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root to give a folder to nobody (65534)";
  testkit::TempDir dir("moejit-hostile-test");
  const std::string root = dir.path + "/cache";
  ASSERT_TRUE(CubinStore(root).publish(name("k"), sampleEntry()).not_saved.empty());
  for (const std::string &where : {root, root + "/v1", root + "/v1/" + kId + "/k.cubin"}) {
    ASSERT_EQ(::chown(where.c_str(), 65534, 65534), 0);
    CubinStore s(root);
    EXPECT_FALSE(s.load(name("k"))) << where;
    testkit::EnvVar shared("MOEJIT_CACHE_TRUST", "shared");
    EXPECT_TRUE(CubinStore(root).load(name("k"))) << where;
    ASSERT_EQ(::chown(where.c_str(), 0, 0), 0);
  }
}

TEST(HostileCache, NewFoldersAndFilesArePrivateWhateverTheUmask) {
  testkit::TempDir dir("moejit-hostile-test");
  const std::string root = dir.path + "/a/cache";
  const mode_t old = ::umask(002);
  CubinStore s(root);
  const bool saved = s.publish(name("k"), sampleEntry()).not_saved.empty();
  FileLock lock = s.lockKey(name("other"));
  const tune::TuningRecord record = tune::shippedRecords().front();
  llvm::Error e = tune::saveRecord(root, record);
  ::umask(old);
  ASSERT_TRUE(saved);
  ASSERT_FALSE(static_cast<bool>(e)) << errorMessage(std::move(e));
  EXPECT_EQ(modeOf(dir.path + "/a"), 0700u);
  EXPECT_EQ(modeOf(root), 0700u);
  EXPECT_EQ(modeOf(root + "/v1"), 0700u);
  EXPECT_EQ(modeOf(root + "/v1/" + kId), 0700u);
  EXPECT_EQ(modeOf(s.entryPath(name("k"))), 0600u);
  EXPECT_EQ(modeOf(s.lockPath(name("other"))), 0600u);
  const std::string path =
      tune::recordPath(root, record.workload_id, record.gpu, record.moejit_version);
  EXPECT_EQ(modeOf(path), 0600u);
  EXPECT_EQ(modeOf(llvm::sys::path::parent_path(path).str()), 0700u);
}

TEST(HostileCache, NoHomeGivesNoTmpRoot) {
  testkit::EnvVar cache("MOEJIT_CACHE_DIR", nullptr), xdg("XDG_CACHE_HOME", "relative/ignored"),
      home("HOME", nullptr);
  const struct passwd *pw = ::getpwuid(::geteuid());
  const std::string root = defaultRoot();
  EXPECT_EQ(root.rfind("/tmp", 0), std::string::npos) << root;
  if (pw && pw->pw_dir && pw->pw_dir[0] == '/')
    EXPECT_EQ(root, std::string(pw->pw_dir) + "/.cache/moejit");
  else
    EXPECT_EQ(root, "");
  testkit::EnvVar relative_home("HOME", "not/absolute");
  EXPECT_EQ(defaultRoot(), root);
}

/// A valid record copied to another GPU's folder is never read by the
/// runtime (it looks records up by workload, GPU and version): verify
/// reports it as misplaced, and with fix removes it, keeping the original.
TEST(HostileCache, ARecordFiledUnderAnotherGpuIsReportedMisplaced) {
  testkit::TempDir dir("moejit-hostile-test");
  const std::string root = dir.path + "/cache";
  const tune::TuningRecord record = tune::shippedRecords().front();
  llvm::Error saved = tune::saveRecord(root, record);
  ASSERT_FALSE(static_cast<bool>(saved)) << errorMessage(std::move(saved));
  const std::string own =
      tune::recordPath(root, record.workload_id, record.gpu, record.moejit_version);
  const std::string copy =
      tune::recordPath(root, record.workload_id, "Another GPU", record.moejit_version);
  makeDirs(llvm::sys::path::parent_path(copy).str());
  writeFile(copy, readFile(own));
  auto report = verifyCache(root, false, api::recordCheck());
  ASSERT_TRUE(static_cast<bool>(report));
  EXPECT_TRUE(mentions(report->records, copy, "filed in the wrong place"));
  EXPECT_FALSE(mentions(report->records, own, ""));
  EXPECT_FALSE(report->ok());
  report = verifyCache(root, true, api::recordCheck());
  ASSERT_TRUE(static_cast<bool>(report));
  EXPECT_FALSE(exists(copy));
  EXPECT_TRUE(exists(own));
  EXPECT_TRUE(tune::loadRecord(root, record.workload_id, record.gpu, record.moejit_version));
}

/// A folder at a tuning record's name: the runtime cannot read a record
/// there and a tune cannot publish one, so verify reports it (and fails),
/// leaving the folder to the user; other folders under tuning/ are not the
/// cache's and are left alone.
TEST(HostileCache, AFolderAtARecordNameIsReported) {
  testkit::TempDir dir("moejit-hostile-test");
  const std::string root = dir.path + "/cache";
  const tune::TuningRecord record = tune::shippedRecords().front();
  const std::string path =
      tune::recordPath(root, record.workload_id, record.gpu, record.moejit_version);
  makeDirs(path + "/sub");
  const std::string notes = llvm::sys::path::parent_path(path).str() + "/notes";
  makeDirs(notes);
  EXPECT_FALSE(tune::loadRecord(root, record.workload_id, record.gpu, record.moejit_version));
  auto report = verifyCache(root, /*fix=*/true, api::recordCheck());
  ASSERT_TRUE(static_cast<bool>(report));
  EXPECT_TRUE(mentions(report->refused, path, "folder at a cache file's name"));
  EXPECT_FALSE(mentions(report->refused, notes, ""));
  EXPECT_FALSE(report->ok());
  EXPECT_TRUE(exists(path)) << "folders are left to the user";
}

TEST(HostileCache, DeepOrHugeJsonIsAWarningNotACrash) {
  testkit::TempDir dir("moejit-hostile-test");
  const std::string root = dir.path + "/cache";
  const MoeShape shape{8, 2048, 768, 128, DType::BF16};
  const std::string gpu = "NVIDIA H200";
  const std::string path = tune::recordPath(root, kId, gpu, version());
  makeDirs(llvm::sys::path::parent_path(path).str());
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  writeFile(path, deep);
  EXPECT_FALSE(tune::loadRecord(root, kId, gpu, version()));
  // The plan is the one of a cache root without the record (a shipped
  // table or the heuristic).
  const runtime::Plan plan = tune::choosePlan(shape, "sm_90a", gpu, root);
  const runtime::Plan without = tune::choosePlan(shape, "sm_90a", gpu, dir.path + "/empty");
  EXPECT_EQ(plan.source, without.source);
  EXPECT_EQ(plan.buckets, without.buckets);
  auto parsed = tune::parseRecord(deep);
  ASSERT_FALSE(static_cast<bool>(parsed));
  EXPECT_NE(errorMessage(parsed.takeError()).find("nested more than"), std::string::npos);
  const store::RecordCheck checkRecord = api::recordCheck();
  auto report = verifyCache(root, false, checkRecord);
  ASSERT_TRUE(static_cast<bool>(report));
  EXPECT_TRUE(mentions(report->records, path, "nested more than")) << path;

  // 200 MB, sparse: refused from its size, never read.
  ASSERT_EQ(::truncate(path.c_str(), 200ll << 20), 0);
  EXPECT_FALSE(tune::loadRecord(root, kId, gpu, version()));
  report = verifyCache(root, false, checkRecord);
  ASSERT_TRUE(static_cast<bool>(report));
  EXPECT_TRUE(mentions(report->records, path, "over the limit"));

  // Entry metadata nested 30,000 deep (under the size cap) and 100,000
  // deep (over it), each with a valid checksum.
  CubinStore s(root);
  for (int depth : {30000, 100000}) {
    const std::string key = "deep" + std::to_string(depth);
    const std::string entry = s.entryPath(name(key));
    makeDirs(llvm::sys::path::parent_path(entry).str());
    writeFile(entry, forgeEntry(std::string(depth, '[') + std::string(depth, ']'), "cubin"));
    EXPECT_FALSE(CubinStore(root).load(name(key)));
    report = verifyCache(root, false);
    ASSERT_TRUE(static_cast<bool>(report));
    EXPECT_TRUE(
        mentions(report->corrupt, entry, depth == 30000 ? "nested more than" : "over the limit"))
        << entry;
  }
}

/// Names in entry metadata are what moejit writes (printable ASCII, at
/// most kMaxMetaName bytes) or the entry is corrupt: a 60 KB kernel name
/// overflowed the stack of `cache list`'s regex, and escape sequences in
/// one reached the terminal.
TEST(HostileCache, LongOrUnprintableNamesInMetadataMakeAnEntryCorrupt) {
  testkit::TempDir dir("moejit-hostile-test");
  const std::string root = dir.path + "/cache";
  CubinStore s(root);
  auto meta = [](const std::string &kernel, const std::string &arch) {
    return llvm::formatv("{{\"key\":\"{0}\",\"kernel\":\"{1}\",\"arch\":\"{2}\","
                         "\"nvrtc\":\"13.0\",\"registers\":32,\"spill_bytes\":0,"
                         "\"static_shared_bytes\":0}",
                         "k", kernel, arch)
        .str();
  };
  const std::string entry = s.entryPath(name("k"));
  makeDirs(llvm::sys::path::parent_path(entry).str());
  // The well-formed one loads, so what follows fails for its names alone.
  std::string why;
  EXPECT_TRUE(decodeEntry(forgeEntry(meta("moe_hostile_kernel", "sm_90a"), "cubin"), why)) << why;
  for (const auto &[kernel, arch] :
       {std::pair{std::string(60000, 'a'), std::string("sm_90a")},
        std::pair{std::string(257, 'a'), std::string("sm_90a")},
        std::pair{std::string("moe_hostile_kernel"), std::string("sm_90a\\u001b[31m")},
        std::pair{std::string("moe hostile"), std::string("sm_90a")}}) {
    const std::string bytes = forgeEntry(meta(kernel, arch), "cubin");
    EXPECT_FALSE(decodeEntry(bytes, why)) << arch;
    EXPECT_EQ(why, "unreadable metadata") << arch;
    writeFile(entry, bytes);
    auto report = verifyCache(root, false);
    ASSERT_TRUE(static_cast<bool>(report));
    EXPECT_TRUE(mentions(report->corrupt, entry, "metadata")) << arch;
  }
}

TEST(HostileCache, OutOfRangeCountsInMetadataMakeAnEntryCorrupt) {
  testkit::TempDir dir("moejit-hostile-test");
  const std::string root = dir.path + "/cache";
  CubinStore s(root);
  auto meta = [](const std::string &registers, const std::string &spill,
                 const std::string &shared) {
    return llvm::formatv("{{\"key\":\"k\",\"kernel\":\"moe_hostile_kernel\",\"arch\":\"sm_90a\","
                         "\"nvrtc\":\"13.0\",\"registers\":{0},\"spill_bytes\":{1},"
                         "\"static_shared_bytes\":{2}}",
                         registers, spill, shared)
        .str();
  };
  const std::string entry = s.entryPath(name("k"));
  makeDirs(llvm::sys::path::parent_path(entry).str());
  // At the bounds: read as written.
  std::string why;
  auto ok = decodeEntry(forgeEntry(meta("0", "0", "1048576"), "cubin"), why);
  ASSERT_TRUE(ok) << why;
  EXPECT_EQ(ok->meta.static_shared_bytes, 1 << 20);
  // Each was cut to an int (2^40 + 5 read as 5) or summed past INT_MAX in
  // warm's report (a negative shared size).
  for (const auto &[registers, spill, shared] :
       {std::tuple{"1099511627781", "0", "0"}, std::tuple{"32", "-7", "0"},
        std::tuple{"32", "0", "2147483647"}, std::tuple{"32", "0", "1048577"},
        std::tuple{"-1", "0", "0"}, std::tuple{"32", "0", "1.5"}}) {
    const std::string bytes = forgeEntry(meta(registers, spill, shared), "cubin");
    EXPECT_FALSE(decodeEntry(bytes, why)) << registers << " " << spill << " " << shared;
    EXPECT_EQ(why, "unreadable metadata") << registers << " " << spill << " " << shared;
    writeFile(entry, bytes);
    auto report = verifyCache(root, false);
    ASSERT_TRUE(static_cast<bool>(report));
    EXPECT_TRUE(mentions(report->corrupt, entry, "metadata")) << shared;
  }
}

TEST(HostileCache, RepeatedKeysInMetadataMakeAnEntryCorrupt) {
  // llvm::json keeps the last of a repeated key; the first may be what a
  // person or another tool reads.
  const std::string meta = "{\"key\":\"k\",\"kernel\":\"moe_hostile_kernel\",\"arch\":\"sm_90a\","
                           "\"nvrtc\":\"13.0\",\"registers\":32,\"spill_bytes\":0,"
                           "\"static_shared_bytes\":0}";
  std::string why;
  EXPECT_TRUE(decodeEntry(forgeEntry(meta, "cubin"), why)) << why;
  for (const char *first :
       {"\"registers\":1,", "\"kernel\":\"moe_other\",", "\"k\\u0065y\":\"k\","}) {
    EXPECT_FALSE(decodeEntry(forgeEntry("{" + std::string(first) + meta.substr(1), "cubin"), why))
        << first;
    EXPECT_EQ(why.rfind("metadata: duplicate key \"", 0), 0u) << why;
  }
}

TEST(HostileCache, EntryUnderAnotherKeysNameIsRebuilt) {
  testkit::TempDir dir("moejit-hostile-test");
  const std::string root = dir.path + "/cache";
  CubinStore s(root);
  ASSERT_TRUE(s.publish(name("a"), sampleEntry()).not_saved.empty());
  writeFile(s.entryPath(name("b")), readFile(s.entryPath(name("a"))));
  CubinStore fresh(root);
  EXPECT_TRUE(fresh.load(name("a")));
  EXPECT_FALSE(fresh.load(name("b"))) << "a copy under another key is not that key";
  // Right key, wrong kernel or arch: also not the entry asked for.
  EntryName other_kernel = name("a"), other_arch = name("a");
  other_kernel.kernel = "moe_other_kernel";
  other_arch.arch = "sm_80";
  EXPECT_FALSE(CubinStore(root).load(other_kernel));
  EXPECT_FALSE(CubinStore(root).load(other_arch));
  const VerifyReport report = verify(root, /*fix=*/true);
  EXPECT_TRUE(mentions(report.corrupt, s.entryPath(name("b")), "another entry"));
  EXPECT_FALSE(exists(s.entryPath(name("b"))));
  EXPECT_TRUE(fresh.publish(name("b"), sampleEntry()).not_saved.empty());
  EXPECT_TRUE(CubinStore(root).load(name("b")));
}

TEST(HostileCache, FullDiskKeepsInMemoryAndTriesAgainLater) {
  testkit::TempDir dir("moejit-hostile-test");
  const std::string root = dir.path + "/cache";
  CubinStore s(root);
  ASSERT_TRUE(s.publish(name("first"), sampleEntry()).not_saved.empty());
  // A file-size limit makes the write fail as a full disk does (EFBIG with
  // SIGXFSZ ignored); the limit lifted is the disk freed.
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  const struct rlimit tiny = {100, old.rlim_max};
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &tiny), 0);
  const Published full = s.publish(name("second"), sampleEntry());
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_FALSE(full.lease);
  EXPECT_FALSE(full.not_saved.empty());
  EXPECT_TRUE(s.memoryOnly());
  EXPECT_TRUE(s.load(name("second"))); // kept in memory
  const Published later = s.publish(name("third"), sampleEntry());
  EXPECT_TRUE(later.not_saved.empty()) << later.not_saved;
  EXPECT_TRUE(later.lease);
  EXPECT_TRUE(CubinStore(root).load(name("third")));
  EXPECT_EQ(s.saved(), 2u);
  EXPECT_EQ(s.unsaved(), 1u);
  auto scan = scanCache(root);
  ASSERT_TRUE(static_cast<bool>(scan));
  EXPECT_EQ(scan->count(FileKind::Temp), 0u) << "the failed write left nothing";
}

TEST(HostileCache, PublishRemovesDeadWritersLeftovers) {
  testkit::TempDir dir("moejit-hostile-test");
  const std::string root = dir.path + "/cache";
  CubinStore s(root);
  ASSERT_TRUE(s.publish(name("a"), sampleEntry()).not_saved.empty());
  const std::string folder = root + "/v1/" + kId;
  for (int i = 0; i < 5; ++i)
    writeFile(folder + "/dead.cubin" + kTempMarker + "dead000" + std::to_string(i), "partial");
  const std::string live = folder + "/live.cubin" + kTempMarker + "live0001";
  writeFile(live, "being written");
  const int fd = ::open(live.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_SH), 0); // a writer still at work
  ASSERT_TRUE(s.publish(name("b"), sampleEntry()).not_saved.empty());
  auto scan = scanCache(root);
  ASSERT_TRUE(static_cast<bool>(scan));
  EXPECT_EQ(scan->count(FileKind::Temp), 1u);
  EXPECT_TRUE(exists(live));
  ::close(fd);
}

TEST(HostileCache, FailedCompileSourcesAreBounded) {
  testkit::TempDir dir("moejit-hostile-test");
  testkit::EnvVar tmp("TMPDIR", dir.path.c_str());
  const std::string kept = dir.path + "/moejit-" + std::to_string(::geteuid());
  for (int i = 0; i < 35; ++i) {
    auto compiled = nvrtc::compile("moe_broken", "this is not CUDA;", "sm_80");
    ASSERT_FALSE(static_cast<bool>(compiled));
    const std::string message = errorMessage(compiled.takeError());
    ASSERT_NE(message.find("source kept at: " + kept + "/moe_broken-"), std::string::npos)
        << message;
  }
  size_t files = 0;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(kept, ec), end; it != end && !ec; it.increment(ec))
    ++files;
  EXPECT_EQ(files, 32u);
  EXPECT_EQ(modeOf(kept), 0700u);
  // Another user's folder at that name is not written into.
  ASSERT_EQ(::chmod(kept.c_str(), 0777), 0);
  auto compiled = nvrtc::compile("moe_broken", "this is not CUDA;", "sm_80");
  ASSERT_FALSE(static_cast<bool>(compiled));
  EXPECT_NE(errorMessage(compiled.takeError()).find("(not kept:"), std::string::npos);
}

// A link planted at the folder's name (another user, where /tmp does not
// protect links) leads nowhere: its target's own .cu files are neither
// added to nor pruned.
TEST(HostileCache, FailedCompileSourcesRefuseALinkedFolder) {
  testkit::TempDir dir("moejit-hostile-test");
  testkit::EnvVar tmp("TMPDIR", dir.path.c_str());
  const std::string victim = dir.path + "/victim";
  ASSERT_EQ(::mkdir(victim.c_str(), 0700), 0);
  for (int i = 0; i < 40; ++i)
    writeFile(victim + "/mine-" + std::to_string(i) + ".cu", "int x;");
  const std::string kept = dir.path + "/moejit-" + std::to_string(::geteuid());
  ASSERT_EQ(::symlink(victim.c_str(), kept.c_str()), 0);
  auto compiled = nvrtc::compile("moe_broken", "this is not CUDA;", "sm_80");
  ASSERT_FALSE(static_cast<bool>(compiled));
  const std::string message = errorMessage(compiled.takeError());
  EXPECT_NE(message.find("(not kept:"), std::string::npos) << message;
  EXPECT_NE(message.find("symbolic link"), std::string::npos) << message;
  size_t files = 0;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(victim, ec), end; it != end && !ec; it.increment(ec))
    ++files;
  EXPECT_EQ(files, 40u);
}

// A FIFO planted at the folder's name is refused at once, not opened (an
// open of a FIFO for reading would wait for a writer).
TEST(HostileCache, FailedCompileSourcesRefuseAFifoAtTheFolder) {
  testkit::TempDir dir("moejit-hostile-test");
  testkit::EnvVar tmp("TMPDIR", dir.path.c_str());
  const std::string kept = dir.path + "/moejit-" + std::to_string(::geteuid());
  ASSERT_EQ(::mkfifo(kept.c_str(), 0600), 0);
  auto compiled = nvrtc::compile("moe_broken", "this is not CUDA;", "sm_80");
  ASSERT_FALSE(static_cast<bool>(compiled));
  const std::string message = errorMessage(compiled.takeError());
  EXPECT_NE(message.find("(not kept:"), std::string::npos) << message;
  EXPECT_NE(message.find("FIFO"), std::string::npos) << message;
}

TEST(HostileCache, ArchSpellingsAreCheckedStrictly) {
  for (const char *good : {"sm_80", "sm_86", "sm_90", "sm_90a"})
    EXPECT_FALSE(static_cast<bool>(nvrtc::checkArch(good))) << good;
  for (const char *bad : {"sm_80a", "sm_999", "sm_080", "sm_99999999999", "sm_9O", "sm_90b", "sm_",
                          "sm_-90", "sm_+90", "sm_ 90", "sm_90a ", "SM_90", "sm_75"}) {
    llvm::Error e = nvrtc::checkArch(bad);
    ASSERT_TRUE(static_cast<bool>(e)) << bad;
    const std::string message = errorMessage(std::move(e));
    EXPECT_NE(message.find("unsupported target '" + std::string(bad) + "'"), std::string::npos)
        << message;
    EXPECT_NE(message.find("sm_90a"), std::string::npos) << message;
  }
}

TEST(HostileCache, NamesThatWouldWalkOutOfAFolderAreRefused) {
  testkit::TempDir dir("moejit-hostile-test");
  auto root = safefs::openRoot(dir.path, safefs::Trust::Owner, false);
  ASSERT_TRUE(root && *root);
  for (const char *bad : {"..", ".", "", "a/b", "../x"}) {
    auto sub = safefs::openSubdir(**root, bad, /*create=*/true);
    EXPECT_FALSE(static_cast<bool>(sub)) << bad;
    if (!sub)
      llvm::consumeError(sub.takeError());
    auto file = safefs::openFile(**root, bad, O_RDWR | O_CREAT, safefs::kAnySize);
    EXPECT_FALSE(static_cast<bool>(file)) << bad;
    if (!file)
      llvm::consumeError(file.takeError());
  }
  EXPECT_FALSE(exists(dir.path + "/a"));
  CubinStore s(dir.path + "/cache");
  EXPECT_FALSE(s.publish(name("k", "../escape"), sampleEntry()).not_saved.empty());
  EXPECT_FALSE(exists(dir.path + "/escape"));
}

TEST(HostileCache, EntryOfAnotherNvrtcIsRebuiltWhereNvrtcIsThere) {
  testkit::TempDir dir("moejit-hostile-test");
  const std::string root = dir.path + "/cache";
  EntryName old_build = name("k");
  old_build.nvrtc = "13.9";
  ASSERT_TRUE(CubinStore(root).publish(old_build, sampleEntry()).not_saved.empty());
  EntryName current = name("k");
  current.nvrtc = "13.0";
  EXPECT_FALSE(CubinStore(root).load(current)) << "built by another NVRTC: rebuilt";
  EXPECT_TRUE(CubinStore(root).load(name("k"))) << "no NVRTC to compare with: any build";
}
