// The cache under several real processes, without a GPU: concurrent warms,
// writers killed midway, a read-only root read by a user who cannot write
// it, and prune next to a process that holds an entry. The `moejit` binary
// is MOEJIT_CLI (a compile definition).
#include "common/error.h"
#include "runtime/builder.h"
#include "runtime/planner.h"
#include "store/atomic_file.h"
#include "store/cache_admin.h"
#include "store/cubin_store.h"
#include "tune/record.h"
#include "workload/shape.h"

#include "testkit.h"

#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <grp.h>
#include <pwd.h>
#include <regex>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace moejit;

namespace {

// Small enough to compile in about two seconds on two cores.
const char *kShapeText = "k=2,hidden=256,intermediate=128,experts=8";
const MoeShape kShape{2, 256, 128, 8, DType::BF16};
const char *kArch = "sm_80";

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

/// Makes the calling process die by SIGXFSZ when a write would take a file
/// past `bytes`: a kill in the middle of a write, deterministically.
void limitFileSize(rlim_t bytes) {
  const struct rlimit none = {0, 0}, limit = {bytes, bytes};
  if (::setrlimit(RLIMIT_CORE, &none) != 0 || ::setrlimit(RLIMIT_FSIZE, &limit) != 0)
    ::_exit(125);
}

/// Starts `moejit args...` with stdout in `out` and stderr in `err`;
/// `fsize_limit` (if not 0) as in limitFileSize; `in_child` (if set) runs in
/// the child just before the exec (environment, user).
pid_t spawnCli(const std::vector<std::string> &args, const std::string &out, const std::string &err,
               rlim_t fsize_limit = 0, const std::function<void()> &in_child = {}) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0)
      ::_exit(126);
    if (fsize_limit)
      limitFileSize(fsize_limit);
    if (in_child)
      in_child();
    std::vector<char *> argv{const_cast<char *>(MOEJIT_CLI)};
    for (const std::string &a : args)
      argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(MOEJIT_CLI, argv.data());
    ::_exit(127);
  }
  return pid;
}

/// The exit status, or 128 + the signal that ended it.
int waitFor(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid)
    return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct CliRun {
  int rc = -1;
  std::string out, err;
};

CliRun runCli(const std::vector<std::string> &args, const std::string &scratch,
              const std::function<void()> &in_child = {}) {
  CliRun r;
  const pid_t pid = spawnCli(args, scratch + ".out", scratch + ".err", 0, in_child);
  r.rc = waitFor(pid);
  r.out = readFile(scratch + ".out");
  r.err = readFile(scratch + ".err");
  return r;
}

struct WarmCounts {
  uint64_t hits = 0, misses = 0, compiles = 0;
};

/// The "cache hits H, misses M, compiles C" line of `moejit warm`.
bool parseWarm(const std::string &out, WarmCounts &c) {
  std::smatch m;
  if (!std::regex_search(out, m,
                         std::regex("cache hits ([0-9]+), misses ([0-9]+), compiles "
                                    "([0-9]+)")))
    return false;
  c = {std::stoull(m[1]), std::stoull(m[2]), std::stoull(m[3])};
  return true;
}

std::vector<std::string> warmArgs(const std::string &root) {
  return {"warm", "--arch", kArch, "--shape", kShapeText, "--cache-dir", root};
}

size_t kernelCount() {
  return runtime::kernelSpecs(kShape, runtime::heuristicPlan(kShape, kArch)).size();
}

store::CacheScan scan(const std::string &root) {
  auto s = store::scanCache(root);
  if (!s) {
    ADD_FAILURE() << errorMessage(s.takeError());
    return {};
  }
  return std::move(*s);
}

store::VerifyReport verify(const std::string &root, bool fix = false) {
  auto r = store::verifyCache(root, fix);
  if (!r) {
    ADD_FAILURE() << errorMessage(r.takeError());
    return {};
  }
  return std::move(*r);
}

} // namespace

TEST(CacheProcesses, ConcurrentWarmsCompileEachEntryOnce) {
  testkit::TempDir dir("moejit-cache-process-test");
  const std::string root = dir.path + "/cache";
  const size_t kernels = kernelCount();
  constexpr int kProcesses = 4;
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcesses; ++p) {
    const std::string scratch = dir.path + "/warm" + std::to_string(p);
    pids.push_back(spawnCli(warmArgs(root), scratch + ".out", scratch + ".err"));
  }
  WarmCounts total;
  for (int p = 0; p < kProcesses; ++p) {
    const std::string scratch = dir.path + "/warm" + std::to_string(p);
    EXPECT_EQ(waitFor(pids[p]), 0) << readFile(scratch + ".err");
    WarmCounts c;
    ASSERT_TRUE(parseWarm(readFile(scratch + ".out"), c)) << readFile(scratch + ".out");
    EXPECT_EQ(c.hits + c.misses, kernels) << "process " << p;
    EXPECT_EQ(c.misses, c.compiles) << "process " << p;
    total.hits += c.hits;
    total.misses += c.misses;
    total.compiles += c.compiles;
  }
  // Each entry compiled by exactly one process; the others waited on its
  // key lock and found it on their second look.
  EXPECT_EQ(total.compiles, kernels);
  EXPECT_EQ(total.hits, kernels * (kProcesses - 1));
  const store::CacheScan s = scan(root);
  EXPECT_EQ(s.count(store::FileKind::Entry), kernels);
  EXPECT_EQ(s.count(store::FileKind::Temp), 0u);
  EXPECT_EQ(s.count(store::FileKind::Lock), 0u);
  const store::VerifyReport v = verify(root);
  EXPECT_EQ(v.entries_ok, kernels);
  EXPECT_TRUE(v.corrupt.empty());
}

TEST(CacheProcesses, KilledWarmsLeaveNothingHalfWritten) {
  testkit::TempDir dir("moejit-cache-process-test");
  const std::string root = dir.path + "/cache";
  const size_t kernels = kernelCount();
  int killed = 0;
  // From before the first compile ends to the middle of the last ones.
  for (int delay_ms : {20, 150, 400, 700, 1000, 1300}) {
    const std::string scratch = dir.path + "/killed" + std::to_string(delay_ms);
    const pid_t pid = spawnCli(warmArgs(root), scratch + ".out", scratch + ".err");
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(pid, SIGKILL);
    killed += waitFor(pid) == 128 + SIGKILL;
    const store::VerifyReport v = verify(root);
    EXPECT_TRUE(v.corrupt.empty()) << "after a kill at " << delay_ms << " ms";
    for (const store::Finding &t : v.temps) // its writer is dead
      EXPECT_NE(t.what.find("stale"), std::string::npos) << t.path;
  }
  EXPECT_GT(killed, 0) << "no warm was killed before it finished";
  // The next warm uses what the killed ones published, compiles the rest,
  // and is not held up by the locks they died holding.
  const CliRun after = runCli(warmArgs(root), dir.path + "/after");
  ASSERT_EQ(after.rc, 0) << after.err;
  WarmCounts c;
  ASSERT_TRUE(parseWarm(after.out, c)) << after.out;
  EXPECT_EQ(c.hits + c.misses, kernels);
  EXPECT_EQ(c.misses, c.compiles);
  store::VerifyReport v = verify(root, /*fix=*/true);
  EXPECT_TRUE(v.corrupt.empty());
  EXPECT_EQ(v.entries_ok, kernels);
  const store::CacheScan s = scan(root);
  EXPECT_EQ(s.count(store::FileKind::Entry), kernels);
  EXPECT_EQ(s.count(store::FileKind::Temp), 0u);
  EXPECT_EQ(s.count(store::FileKind::Lock), 0u);
}

TEST(CacheProcesses, WarmKilledInTheMiddleOfAWriteLeavesOnlyAStaleTemporaryFile) {
  // Entries of this shape are 6K to 60K: with a 20000-byte file size limit
  // the first big one kills its warm by SIGXFSZ in the middle of writing it.
  testkit::TempDir dir("moejit-cache-process-test");
  const std::string root = dir.path + "/cache";
  const size_t kernels = kernelCount();
  const std::string scratch = dir.path + "/cut";
  const pid_t pid = spawnCli(warmArgs(root), scratch + ".out", scratch + ".err", 20000);
  ASSERT_EQ(waitFor(pid), 128 + SIGXFSZ) << readFile(scratch + ".err");
  store::CacheScan s = scan(root);
  // The other build thread may have been between writes too, so the cut
  // file is one of the temporary files, at the limit.
  size_t cut = 0;
  for (const store::CacheFile &f : s.files) {
    if (f.kind == store::FileKind::Temp) {
      EXPECT_LE(f.size, 20000u) << f.path;
      cut += f.size == 20000u;
    } else if (f.kind == store::FileKind::Entry) {
      EXPECT_LE(f.size, 20000u) << f.path; // only whole small entries got their names
    }
  }
  EXPECT_GE(cut, 1u);
  store::VerifyReport v = verify(root);
  EXPECT_TRUE(v.corrupt.empty());
  EXPECT_EQ(v.entries_ok, s.count(store::FileKind::Entry));
  ASSERT_EQ(v.temps.size(), s.count(store::FileKind::Temp));
  for (const store::Finding &t : v.temps)
    EXPECT_NE(t.what.find("stale"), std::string::npos) << t.path;

  const CliRun after = runCli(warmArgs(root), dir.path + "/after");
  ASSERT_EQ(after.rc, 0) << after.err;
  WarmCounts c;
  ASSERT_TRUE(parseWarm(after.out, c)) << after.out;
  EXPECT_EQ(c.hits, s.count(store::FileKind::Entry)); // what the killed warm published
  EXPECT_EQ(c.misses, kernels - c.hits);
  EXPECT_EQ(c.compiles, c.misses);
  v = verify(root, /*fix=*/true);
  EXPECT_TRUE(v.corrupt.empty());
  EXPECT_EQ(v.entries_ok, kernels);
  s = scan(root);
  EXPECT_EQ(s.count(store::FileKind::Temp), 0u);
  EXPECT_EQ(s.count(store::FileKind::Lock), 0u);
}

TEST(CacheProcesses, PublishCutShortKeepsTheOldEntry) {
  testkit::TempDir dir("moejit-cache-process-test");
  store::Entry old_entry;
  old_entry.cubin = std::string(1000, '\x01');
  old_entry.meta = {"", "moe_old", "sm_80", "13.0", 1, 0, 0, 1};
  const store::EntryName name{"id", "k", "moe_old", "sm_80"};
  store::CubinStore(dir.path).publish(name, old_entry);
  const pid_t pid = ::fork();
  if (pid == 0) {
    store::Entry bigger = old_entry;
    bigger.cubin.assign(100000, '\x02');
    limitFileSize(50000);
    store::CubinStore(dir.path).publish(name, bigger);
    ::_exit(0); // not reached: SIGXFSZ
  }
  ASSERT_EQ(waitFor(pid), 128 + SIGXFSZ);
  store::CubinStore s(dir.path);
  std::optional<store::Entry> hit = s.load(name);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->meta.kernel, "moe_old");
  EXPECT_EQ(hit->cubin, old_entry.cubin);
  hit.reset();
  store::VerifyReport v = verify(dir.path);
  EXPECT_TRUE(v.corrupt.empty());
  EXPECT_EQ(v.entries_ok, 1u);
  ASSERT_EQ(v.temps.size(), 1u);
  EXPECT_NE(v.temps[0].what.find("stale"), std::string::npos);
}

TEST(CacheProcesses, ReadOnlyRootIsReadByAUserWhoCannotWriteIt) {
  testkit::TempDir dir("moejit-cache-process-test");
  // Nobody must reach the cache; the scratch files stay with us.
  ASSERT_EQ(::chmod(dir.path.c_str(), 0755), 0);
  const std::string root = dir.path + "/cache";
  const CliRun warm = runCli(warmArgs(root), dir.path + "/warm");
  ASSERT_EQ(warm.rc, 0) << warm.err;
  ASSERT_EQ(std::system(("find " + root + " -type d -exec chmod 0555 {} + && find " + root +
                         " -type f -exec chmod 0444 {} +")
                            .c_str()),
            0);
  const size_t kernels = kernelCount();
  const auto specs = runtime::kernelSpecs(kShape, runtime::heuristicPlan(kShape, kArch));
  const MoeShape other{2, 256, 128, 16, DType::BF16};
  const codegen::KernelSpec missing{codegen::KernelKind::RouteCount, other, {}};

  const std::string err_path = dir.path + "/child.err";
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(report[0]);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err < 0 || ::dup2(err, 2) < 0)
      ::_exit(10);
    // Root ignores permission bits; become nobody to meet them.
    if (::geteuid() == 0 &&
        (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0))
      ::_exit(11);
    if (::access(root.c_str(), W_OK) == 0 || ::access(root.c_str(), R_OK | X_OK) != 0)
      ::_exit(12);
    store::CubinStore store(root);
    auto built = runtime::buildKernels(specs, kArch, store);
    if (!built)
      ::_exit(13);
    const std::string first = fmt::format("{} {} {} {}\n", store.hits(), store.misses(),
                                          store.compiles(), store.memoryOnly());
    std::vector<runtime::BuildResult> more = runtime::buildEach({missing}, kArch, store);
    const std::string second = fmt::format("{} {} {} {}\n", more[0].ok(), more[0].kernel.from_cache,
                                           store.compiles(), store.memoryOnly());
    const std::string text = first + second;
    ::_exit(::write(report[1], text.data(), text.size()) == static_cast<ssize_t>(text.size()) ? 0
                                                                                              : 14);
  }
  ::close(report[1]);
  std::string text;
  char buf[256];
  for (ssize_t n; (n = ::read(report[0], buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<size_t>(n));
  ::close(report[0]);
  const std::string err = readFile(err_path);
  const int rc = waitFor(pid);
  if (rc == 11) // e.g. a user namespace without uid 65534
    GTEST_SKIP() << "running as root, and could not become nobody (65534) to meet the "
                    "permission bits";
  ASSERT_EQ(rc, 0) << err;
  // All hits, nothing compiled, no lock needed; then the missing kernel is
  // compiled into memory.
  EXPECT_EQ(text, fmt::format("{} 0 0 false\ntrue false 1 true\n", kernels));
  // One warning, for the unwritable root; none about locks.
  size_t warnings = 0;
  for (size_t at = 0; (at = err.find("[moejit W]", at)) != std::string::npos; ++at)
    ++warnings;
  EXPECT_EQ(warnings, 1u) << err;
  EXPECT_NE(err.find("not writable"), std::string::npos) << err;
  const store::CacheScan s = scan(root);
  EXPECT_EQ(s.count(store::FileKind::Entry), kernels);
  EXPECT_EQ(s.count(store::FileKind::Lock), 0u);
}

TEST(CacheProcesses, PruneKeepsTheEntryAnotherProcessHolds) {
  testkit::TempDir dir("moejit-cache-process-test");
  const std::string root = dir.path + "/cache";
  const std::string id(64, 'a');
  store::Entry e;
  e.cubin = std::string(4096, '\x01');
  e.meta = {"", "moe_test", "sm_80", "13.0", 1, 0, 0, 1};
  {
    store::CubinStore s(root);
    for (const char *k : {"k1", "k2", "k3"})
      s.publish({id, k, "moe_test", "sm_80"}, e); // the leases end here
  }
  int ready[2], done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    ::close(done[1]);
    store::CubinStore s(root);
    std::optional<store::Entry> held = s.load({id, "k2", "moe_test", "sm_80"});
    if (!held || ::write(ready[1], "r", 1) != 1)
      ::_exit(1);
    char c;
    (void)::read(done[0], &c, 1); // until the parent closes its end
    ::_exit(0);
  }
  ::close(ready[1]);
  ::close(done[0]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);

  const std::vector<std::string> prune = {"cache", "prune", "--max-size", "0", "--cache-dir", root};
  CliRun r = runCli(prune, dir.path + "/prune1");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("kept v1/" + id + "/k2.cubin: in use by a running process"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("removed v1/" + id + "/k1.cubin"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("removed v1/" + id + "/k3.cubin"), std::string::npos) << r.out;
  store::CacheScan s = scan(root);
  ASSERT_EQ(s.count(store::FileKind::Entry), 1u);
  EXPECT_EQ(s.files[0].relative, "v1/" + id + "/k2.cubin");
  EXPECT_EQ(s.count(store::FileKind::Lock), 0u);

  ::close(done[1]); // the holder exits
  EXPECT_EQ(waitFor(pid), 0);
  r = runCli(prune, dir.path + "/prune2");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("removed v1/" + id + "/k2.cubin"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("final size: 0 (0 bytes) in 0 entries"), std::string::npos) << r.out;
  EXPECT_EQ(scan(root).count(store::FileKind::Entry), 0u);
}

TEST(CacheProcesses, CacheCommandListsVerifiesAndPrunes) {
  testkit::TempDir dir("moejit-cache-process-test");
  const std::string root = dir.path + "/cache";
  const std::string id(64, 'b');
  store::Entry e;
  e.cubin = std::string(2048, '\x02');
  e.meta = {"", "moe_listed_kernel", "sm_80", "13.0", 1, 0, 0, 1};
  auto name = [&](const char *key) {
    return store::EntryName{id, key, "moe_listed_kernel", "sm_80"};
  };
  store::CubinStore s(root);
  s.publish(name("good"), e);
  s.publish(name("bad"), e);
  std::string bytes = readFile(s.entryPath(name("bad")));
  bytes.resize(bytes.size() - 10);
  std::ofstream(s.entryPath(name("bad")), std::ios::binary | std::ios::trunc) << bytes;
  std::ofstream(s.entryPath(name("temp")) + store::kTempMarker + "dead0001") << "partial";
  std::ofstream(s.lockPath(name("killed"))) << "";
  std::string why;
  // A good record, where its workload, GPU and version put it (verify
  // reports one filed elsewhere), and a bad one.
  const tune::TuningRecord shipped = tune::shippedRecords().front();
  const std::string record =
      tune::recordPath("", shipped.workload_id, shipped.gpu, shipped.moejit_version);
  ASSERT_TRUE(testkit::writeAtomically(root + "/" + record, tune::toJson(shipped), why)) << why;
  const std::string bad_record = "tuning/v1/" + id + "/nvidia-h200/moejit-0.0.1.json";
  ASSERT_TRUE(testkit::writeAtomically(root + "/" + bad_record, "{}", why)) << why;
  auto cache = [&](std::vector<std::string> args, const char *name) {
    args.insert(args.begin(), "cache");
    args.insert(args.end(), {"--cache-dir", root});
    return runCli(args, dir.path + "/" + name);
  };

  CliRun r = cache({"list"}, "list");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("workload " + id + ": 2 entries"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("moe_listed_kernel sm_80"), std::string::npos) << r.out;
  // No kernel name spells a shape that hashes to this id: said, not guessed.
  EXPECT_NE(r.out.find("shape unknown"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(corrupt: size does not match"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 temporary, 1 lock files"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(record), std::string::npos) << r.out;

  r = cache({"verify"}, "verify1");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("corrupt entry v1/" + id + "/bad.cubin"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("temporary file v1/" + id + "/temp.cubin.tmp-dead0001: stale"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("stale lock file v1/" + id + "/killed.lock"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bad tuning record " + bad_record + ": tuning record: \"format\""),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("1 entries ok, 1 corrupt, 1 temporary files, 1 stale lock files, 0 "
                       "refused, 1 bad tuning records"),
            std::string::npos)
      << r.out;

  r = cache({"verify", "--fix"}, "verify2");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("bad.cubin: size does not match its header (truncated?) (removed)"),
            std::string::npos)
      << r.out;
  r = cache({"verify"}, "verify3");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("1 entries ok, 0 corrupt, 0 temporary files, 0 stale lock files, 0 "
                       "refused, 0 bad tuning records"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(llvm::sys::fs::exists(root + "/" + bad_record));

  r = cache({"prune", "--max-size", "1G"}, "prune");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.find("removed"), std::string::npos) << r.out;
  EXPECT_EQ(scan(root).count(store::FileKind::Entry), 1u);
  EXPECT_TRUE(llvm::sys::fs::exists(root + "/" + record)); // prune leaves tuning records

  // Usage errors exit 2, before the root is looked at.
  r = cache({"prune", "--max-size", "lots"}, "bad_size");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("size 'lots'"), std::string::npos) << r.err;
  r = cache({}, "no_subcommand");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("list, verify"), std::string::npos) << r.err;
}

TEST(CacheProcesses, WarmThatCannotUseItsRootFailsBeforeCompiling) {
  testkit::TempDir dir("moejit-cache-process-test");
  const std::string file = dir.path + "/a-file";
  std::ofstream(file) << "x";
  const std::string loop = dir.path + "/loop";
  ASSERT_EQ(::symlink(loop.c_str(), loop.c_str()), 0);
  // A root whose versioned folder others may write: its entries are
  // refused, so --check must not call them missing either.
  const std::string open_to_all = dir.path + "/open-to-all";
  ASSERT_EQ(::mkdir(open_to_all.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((open_to_all + "/v1").c_str(), 0700), 0);
  ASSERT_EQ(::chmod((open_to_all + "/v1").c_str(), 0777), 0);
  for (const std::string &root : {file, loop, file + "/below", open_to_all})
    for (bool check : {false, true}) {
      std::vector<std::string> args = warmArgs(root);
      if (check)
        args.push_back("--check");
      const CliRun r = runCli(args, dir.path + "/warm");
      EXPECT_EQ(r.rc, 1) << root << "\n" << r.out << r.err;
      // One line naming the root and why, and nothing compiled or listed.
      EXPECT_EQ(r.err.rfind("moejit: error: cache root " + root + ": ", 0), 0u) << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_EQ(r.out.find("moe_"), std::string::npos) << r.out;
      EXPECT_EQ(r.out.find("cache hits"), std::string::npos) << r.out;
    }
  // A warm that saves everything says so and exits 0.
  const CliRun ok = runCli(warmArgs(dir.path + "/cache"), dir.path + "/ok");
  EXPECT_EQ(ok.rc, 0) << ok.err;
  EXPECT_NE(ok.out.find("saved " + std::to_string(kernelCount()) + ", not saved 0"),
            std::string::npos)
      << ok.out;
}

TEST(CacheProcesses, WarmIntoARootOnlyRootCanWriteExitsNonZero) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root to act as nobody (65534) on a root-owned cache";
  testkit::TempDir dir("moejit-cache-process-test");
  ASSERT_EQ(::chmod(dir.path.c_str(), 0755), 0);
  const std::string root = dir.path + "/cache";
  ASSERT_EQ(::mkdir(root.c_str(), 0755), 0);
  auto asNobody = [] {
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0)
      ::_exit(11);
  };
  // Without its versioned folder, which nobody cannot make: refused before
  // anything compiles.
  CliRun r = runCli(warmArgs(root), dir.path + "/warm", asNobody);
  if (r.rc == 11)
    GTEST_SKIP() << "could not become nobody (65534)";
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("moejit: error: cache root " + root + ": ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("moe_"), std::string::npos) << r.out;
  // A system-wide cache (v1 there, readable): the kernels it lacks compile
  // into memory, and the warm says they were not saved.
  ASSERT_EQ(::mkdir((root + "/v1").c_str(), 0755), 0);
  r = runCli(warmArgs(root), dir.path + "/warm", asNobody);
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("not writable"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("kernels were not saved"), std::string::npos) << r.err;
}

TEST(CacheProcesses, BadArchSpellingsFailBeforeCompilingAndLeaveNoFiles) {
  testkit::TempDir dir("moejit-cache-process-test");
  const std::string tmp = dir.path + "/tmp", root = dir.path + "/cache";
  ASSERT_EQ(::mkdir(tmp.c_str(), 0700), 0);
  for (const char *arch : {"sm_80a", "sm_999", "sm_080", "sm_99999999999"}) {
    const CliRun r = runCli({"warm", "--arch", arch, "--shape", kShapeText, "--cache-dir", root},
                            dir.path + "/warm", [&] { ::setenv("TMPDIR", tmp.c_str(), 1); });
    EXPECT_EQ(r.rc, 1) << arch;
    EXPECT_NE(r.err.find("unsupported target '" + std::string(arch) + "'"), std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("stoi"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one error line: " << r.err;
    EXPECT_FALSE(llvm::sys::fs::exists(root)) << arch;
    std::error_code ec;
    EXPECT_EQ(llvm::sys::fs::directory_iterator(tmp, ec), llvm::sys::fs::directory_iterator())
        << "files left in TMPDIR after " << arch;
  }
}

TEST(CacheProcesses, UserWithoutAHomeGetsNoCacheRoot) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root to run as a uid with no password entry";
  testkit::TempDir dir("moejit-cache-process-test");
  ASSERT_EQ(::chmod(dir.path.c_str(), 0755), 0);
  const uid_t nobody_known = 54321;
  if (::getpwuid(nobody_known))
    GTEST_SKIP() << "uid 54321 has a password entry here";
  const CliRun r = runCli({"info"}, dir.path + "/info", [&] {
    ::unsetenv("HOME");
    ::unsetenv("XDG_CACHE_HOME");
    ::unsetenv("MOEJIT_CACHE_DIR");
    if (::setgroups(0, nullptr) != 0 || ::setgid(nobody_known) != 0 || ::setuid(nobody_known) != 0)
      ::_exit(11);
  });
  if (r.rc == 11)
    GTEST_SKIP() << "could not become uid 54321";
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("cache root: (none"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("/tmp"), std::string::npos) << r.out;
}

TEST(CacheProcesses, VerifyFixThroughALinkTouchesNothingOutside) {
  testkit::TempDir dir("moejit-cache-process-test");
  const std::string root = dir.path + "/cache", victim = dir.path + "/victim";
  ASSERT_EQ(runCli(warmArgs(root), dir.path + "/warm").rc, 0);
  ASSERT_EQ(::mkdir(victim.c_str(), 0700), 0);
  for (const char *f : {"/a.cubin", "/b.lock", "/c.cubin.tmp-12345678"})
    std::ofstream(victim + f) << "victim's";
  const std::string link = root + "/v1/" + std::string(64, '0');
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  for (const std::vector<std::string> &args :
       {std::vector<std::string>{"cache", "verify", "--fix", "--cache-dir", root},
        std::vector<std::string>{"cache", "prune", "--max-size", "0", "--cache-dir", root}}) {
    ::symlink(victim.c_str(), link.c_str());
    const CliRun r = runCli(args, dir.path + "/cache_cmd");
    EXPECT_NE(r.out.find("refused"), std::string::npos) << r.out;
    for (const char *f : {"/a.cubin", "/b.lock", "/c.cubin.tmp-12345678"})
      EXPECT_EQ(readFile(victim + f), "victim's") << f;
  }
  const CliRun warm = runCli(warmArgs(root), dir.path + "/warm2");
  EXPECT_EQ(warm.rc, 0) << warm.err;
}

TEST(CacheProcesses, WarmedCacheNeedsNoNvrtc) {
  testkit::TempDir dir("moejit-cache-process-test");
  const std::string root = dir.path + "/cache";
  ASSERT_EQ(runCli(warmArgs(root), dir.path + "/warm").rc, 0);
  auto noNvrtc = [] { ::setenv("MOEJIT_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so.13", 1); };
  // Every kernel is in the cache: no NVRTC is looked for, nothing fails.
  const CliRun hits = runCli(warmArgs(root), dir.path + "/hits", noNvrtc);
  EXPECT_EQ(hits.rc, 0) << hits.err;
  WarmCounts c;
  ASSERT_TRUE(parseWarm(hits.out, c)) << hits.out;
  EXPECT_EQ(c.hits, kernelCount());
  EXPECT_EQ(c.compiles, 0u);
  EXPECT_NE(hits.out.find("NVRTC none"), std::string::npos) << hits.out;
  // Something to compile: a typed error saying where NVRTC was looked for.
  const CliRun cold = runCli(warmArgs(dir.path + "/cold"), dir.path + "/cold", noNvrtc);
  EXPECT_EQ(cold.rc, 1);
  EXPECT_NE(cold.err.find("no NVRTC 13 could be loaded"), std::string::npos) << cold.err;
  EXPECT_NE(cold.err.find("/nonexistent/libnvrtc.so.13"), std::string::npos) << cold.err;
}
