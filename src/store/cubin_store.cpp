#include "store/cubin_store.h"

#include "common/bounded_json.h"
#include "common/error.h"
#include "common/log.h"
#include "common/settings.h"
#include "store/atomic_file.h"
#include "workload/shape.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/SHA256.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace moejit::store {

namespace {

constexpr char kMagic[8] = {'M', 'O', 'E', 'J', 'I', 'T', 'C', kFormatVersion};
constexpr size_t kHeaderBytes = 8 + 4 + 8; // magic, meta length, cubin length
constexpr size_t kDigestBytes = 32;
/// The largest count entry metadata may hold (registers, spill bytes,
/// static shared bytes): 1 MiB of shared memory or spill is more than any
/// GPU gives a block.
constexpr int64_t kMaxMetaCount = int64_t{1} << 20;

template <typename T> void putInt(std::string &out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i)
    out.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
}
template <typename T> T getInt(const char *p) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return static_cast<T>(v);
}

std::string rawSha256(const std::string &bytes) {
  auto d = llvm::SHA256::hash(llvm::arrayRefFromStringRef(bytes));
  return std::string(d.begin(), d.end());
}

std::string metaJson(const EntryMeta &m) {
  llvm::json::Object o{{"key", m.key},
                       {"kernel", m.kernel},
                       {"arch", m.arch},
                       {"nvrtc", m.nvrtc},
                       {"registers", m.registers},
                       {"spill_bytes", m.spill_bytes},
                       {"static_shared_bytes", m.static_shared_bytes},
                       {"compile_ms", m.compile_ms}};
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::json::Value(std::move(o));
  return os.str();
}

/// Empty on success, else why the metadata is unusable.
std::string parseMeta(llvm::StringRef text, EntryMeta &m) {
  auto value = parseBoundedJson(text, {kMaxMetaBytes, kMaxMetaDepth});
  if (!value)
    return "metadata: " + errorMessage(value.takeError());
  const llvm::json::Object *o = value->getAsObject();
  if (!o)
    return "metadata is not a JSON object";
  // Names (key, kernel, arch, NVRTC version): at most kMaxMetaName bytes of
  // printable ASCII, as moejit writes them; anything else is a hostile or
  // broken entry (a 60 KB kernel name overflowed the stack of `cache
  // list`'s regex).
  auto str = [&](const char *k, std::string &out) {
    auto v = o->getString(k);
    if (!v || v->size() > kMaxMetaName ||
        !llvm::all_of(*v, [](char c) { return c > 0x20 && c < 0x7f; }))
      return false;
    out = v->str();
    return true;
  };
  // Counts (registers, spill and static shared bytes): whole numbers from 0
  // to kMaxMetaCount, far above what ptxas reports; a larger one was cut to
  // an int (2^40 + 5 read as 5) or summed past INT_MAX in warm's report.
  auto num = [&](const char *k, int &out) {
    auto v = o->getInteger(k);
    if (!v || *v < 0 || *v > kMaxMetaCount)
      return false;
    out = static_cast<int>(*v);
    return true;
  };
  auto ms = o->getNumber("compile_ms");
  m.compile_ms = ms ? *ms : 0;
  if (!str("key", m.key))
    return "metadata has no key (written by an older moejit)";
  if (!(str("kernel", m.kernel) && str("arch", m.arch) && str("nvrtc", m.nvrtc) &&
        num("registers", m.registers) && num("spill_bytes", m.spill_bytes) &&
        num("static_shared_bytes", m.static_shared_bytes)))
    return "unreadable metadata";
  return {};
}

/// Home folder for the default root: HOME when absolute, else the password
/// database's entry for the effective user; empty when neither has one.
std::string homeFolder() {
  if (const char *home = std::getenv("HOME"); home && home[0] == '/')
    return home;
  long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(size > 0 ? static_cast<size_t>(size) : 16384);
  struct passwd pw {};
  struct passwd *found = nullptr;
  if (::getpwuid_r(::geteuid(), &pw, buffer.data(), buffer.size(), &found) == 0 && found &&
      found->pw_dir && found->pw_dir[0] == '/')
    return found->pw_dir;
  return {};
}

} // namespace

std::string defaultRoot() {
  // MOEJIT_CACHE_DIR is a path: any non-empty value is valid.
  if (auto dir = settings::read("MOEJIT_CACHE_DIR"); dir && !dir->empty())
    return *dir;
  else if (!dir)
    llvm::consumeError(dir.takeError());
  // The XDG spec ignores a relative XDG_CACHE_HOME; so does HOME here.
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && xdg[0] == '/')
    return std::string(xdg) + "/moejit";
  const std::string home = homeFolder();
  return home.empty() ? std::string() : home + "/.cache/moejit";
}

std::string encodeEntry(const Entry &entry) {
  const std::string meta = metaJson(entry.meta);
  std::string out(kMagic, sizeof(kMagic));
  putInt<uint32_t>(out, meta.size());
  putInt<uint64_t>(out, entry.cubin.size());
  out += meta;
  out += entry.cubin;
  out += rawSha256(out);
  return out;
}

std::optional<Entry> decodeEntry(const std::string &bytes, std::string &why) {
  if (bytes.size() < kHeaderBytes + kDigestBytes) {
    why = "truncated header";
    return std::nullopt;
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    why = "bad magic or format version";
    return std::nullopt;
  }
  const uint64_t meta_len = getInt<uint32_t>(bytes.data() + 8);
  const uint64_t cubin_len = getInt<uint64_t>(bytes.data() + 12);
  if (meta_len > kMaxMetaBytes) {
    why = fmt::format("metadata of {} bytes is over the limit of {}", meta_len, kMaxMetaBytes);
    return std::nullopt;
  }
  // Checked one by one so that no sum can wrap around.
  const uint64_t room = bytes.size() - kHeaderBytes - kDigestBytes;
  if (meta_len > room || cubin_len != room - meta_len) {
    why = "size does not match its header (truncated?)";
    return std::nullopt;
  }
  const std::string body = bytes.substr(0, bytes.size() - kDigestBytes);
  if (rawSha256(body) != bytes.substr(body.size())) {
    why = "checksum mismatch";
    return std::nullopt;
  }
  Entry e;
  why = parseMeta(llvm::StringRef(bytes).substr(kHeaderBytes, meta_len), e.meta);
  if (!why.empty())
    return std::nullopt;
  e.cubin = bytes.substr(kHeaderBytes + meta_len, cubin_len);
  return e;
}

std::string entryMismatch(const EntryMeta &meta, const EntryName &name) {
  std::string wrong;
  auto compare = [&](const char *field, const std::string &found, const std::string &wanted) {
    if (found != wanted)
      wrong +=
          fmt::format("{}{} is '{}', not '{}'", wrong.empty() ? "" : "; ", field, found, wanted);
  };
  compare("key", meta.key, name.key);
  compare("kernel", meta.kernel, name.kernel);
  compare("arch", meta.arch, name.arch);
  if (!name.nvrtc.empty())
    compare("nvrtc", meta.nvrtc, name.nvrtc);
  return wrong.empty() ? wrong : "it is another entry: " + wrong;
}

CubinStore::CubinStore(std::string root, std::chrono::milliseconds key_lock_wait)
    : root_(root.empty() ? defaultRoot() : std::move(root)), trust_(safefs::cacheTrust()),
      key_lock_wait_(key_lock_wait) {
  if (root_.empty())
    warnOnce("no-cache-root",
             fmt::format("no cache root: MOEJIT_CACHE_DIR, XDG_CACHE_HOME and HOME are unset and "
                         "uid {} has no home folder in the password database; compiled kernels "
                         "are kept in memory only (set MOEJIT_CACHE_DIR)",
                         ::geteuid()));
}

namespace {
std::string entryFileName(const EntryName &name) { return name.key + kEntrySuffix; }
std::string lockFileName(const EntryName &name) { return name.key + kLockSuffix; }
} // namespace

std::string CubinStore::entryPath(const EntryName &name) const {
  return fmt::format("{}/v{}/{}/{}", root_, kFormatVersion, name.workload_id, entryFileName(name));
}

std::string CubinStore::lockPath(const EntryName &name) const {
  return fmt::format("{}/v{}/{}/{}", root_, kFormatVersion, name.workload_id, lockFileName(name));
}

bool CubinStore::memoryOnly() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return root_.empty() || unsaved_ > 0;
}
uint64_t CubinStore::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}
uint64_t CubinStore::misses() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return misses_;
}
uint64_t CubinStore::compiles() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return compiles_;
}
void CubinStore::countCompile() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++compiles_;
}
uint64_t CubinStore::saved() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return saved_;
}
uint64_t CubinStore::unsaved() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return unsaved_;
}

llvm::Expected<std::optional<safefs::Dir>> CubinStore::workloadDir(const std::string &workload_id,
                                                                   bool create) const {
  auto root = safefs::openRoot(root_, trust_, create);
  if (!root || !*root)
    return root;
  return safefs::openSubdirs(**root, {fmt::format("v{}", kFormatVersion), workload_id}, create);
}

llvm::Error CubinStore::checkRoot(bool create) const {
  if (root_.empty())
    return makeError(ErrorCode::InvalidArgument,
                     "no cache root: MOEJIT_CACHE_DIR, XDG_CACHE_HOME and HOME are unset and uid "
                     "{} has no home folder (set MOEJIT_CACHE_DIR)",
                     ::geteuid());
  auto refused = [&](llvm::Error e) {
    return makeError(ErrorCode::InvalidArgument, "cache root {}: {}", root_,
                     errorMessage(std::move(e)));
  };
  auto root = safefs::openRoot(root_, trust_, create);
  if (!root)
    return refused(root.takeError());
  if (!*root)
    return llvm::Error::success(); // nothing there yet: all misses
  auto versioned = safefs::openSubdir(**root, fmt::format("v{}", kFormatVersion), create);
  if (!versioned)
    return refused(versioned.takeError());
  return llvm::Error::success();
}

void CubinStore::warnRefused(const std::string &why) const {
  warnOnce("refused:" + root_ + why,
           fmt::format("cache root {}: {}; nothing is loaded from or saved there, compiled "
                       "kernels are kept in memory only",
                       root_, why));
}

std::optional<Entry> CubinStore::readEntry(const EntryName &name, bool report_corrupt) {
  if (root_.empty())
    return std::nullopt;
  const std::string path = entryPath(name);
  auto dir = workloadDir(name.workload_id, /*create=*/false);
  if (!dir) {
    const int errnum = errno;
    const std::string why = errorMessage(dir.takeError());
    if (errnum == 0) // a refusal: a link, a special file, an untrusted folder
      warnRefused(why);
    else // once per root and reason, not once per entry
      warnOnce("unreadable:" + root_ + why,
               fmt::format("cannot read the cache under {}: {}", root_, why));
    return std::nullopt;
  }
  if (!*dir)
    return std::nullopt;
  // The shared lock is taken before reading and kept as the lease: prune
  // and verify --fix remove only files they can lock exclusively.
  FileLock lease;
  LockOptions options;
  options.exclusive = false;
  options.create = false;
  options.wait_limit = kEntryLockWait;
  auto got = lockFile(**dir, entryFileName(name), options, lease);
  if (!got) {
    // A link, a FIFO or an untrusted file at the entry's name: a miss; the
    // publish after the compile renames a real entry over it.
    warnOnce("unreadable:" + path,
             fmt::format("cache entry {} is not used: {}", path, errorMessage(got.takeError())));
    return std::nullopt;
  }
  if (*got == Acquired::Busy) {
    // Prune and verify --fix hold an entry exclusively only for as long as
    // an unlink takes; longer is someone else's lock: a miss, and the
    // publish after the compile renames a new entry over the name.
    warnOnce("locked:" + path, fmt::format("cache entry {} stayed locked by another process for "
                                           "{} ms: not used",
                                           path, kEntryLockWait.count()));
    return std::nullopt;
  }
  if (*got != Acquired::Yes)
    return std::nullopt;
  auto corrupt = [&](const std::string &why) -> std::optional<Entry> {
    if (report_corrupt)
      logger().warn("corrupt cache entry {} ({}): it will be rebuilt", path, why);
    return std::nullopt;
  };
  struct stat st {};
  if (::fstat(lease.fd(), &st) != 0)
    return std::nullopt;
  if (static_cast<uint64_t>(st.st_size) > kMaxEntryBytes)
    return corrupt(fmt::format("{} bytes, over the limit of {}", st.st_size, kMaxEntryBytes));
  std::string bytes;
  if (!safefs::readAll(lease.fd(), static_cast<uint64_t>(st.st_size), bytes))
    return std::nullopt;
  std::string why;
  std::optional<Entry> entry = decodeEntry(bytes, why);
  if (!entry)
    return corrupt(why);
  // A valid entry copied under another name must not stand in for this one.
  if (std::string wrong = entryMismatch(entry->meta, name); !wrong.empty())
    return corrupt(wrong);
  // Marks the entry used now for prune's LRU order, even on relatime or
  // noatime mounts; a root we do not own keeps the kernel's own atime.
  const struct timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
  (void)::futimens(lease.fd(), times);
  entry->lease = std::make_shared<const FileLock>(std::move(lease));
  return entry;
}

std::optional<Entry> CubinStore::load(const EntryName &name) {
  const std::string path = entryPath(name);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = memory_.find(path); it != memory_.end()) {
      ++hits_;
      return it->second;
    }
  }
  std::optional<Entry> entry = readEntry(name, /*report_corrupt=*/true);
  std::lock_guard<std::mutex> lock(mutex_);
  ++(entry ? hits_ : misses_);
  return entry;
}

std::optional<Entry> CubinStore::loadAgain(const EntryName &name) {
  // The first look already reported a corrupt file; another process that
  // replaced it meanwhile makes this a hit.
  std::optional<Entry> entry = readEntry(name, /*report_corrupt=*/false);
  if (entry) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (misses_ > 0)
      --misses_;
    ++hits_;
  }
  return entry;
}

Published CubinStore::publish(const EntryName &name, const Entry &entry) {
  Entry stored = entry;
  stored.meta.key = name.key;
  stored.meta.kernel = name.kernel;
  stored.meta.arch = name.arch;
  if (!name.nvrtc.empty())
    stored.meta.nvrtc = name.nvrtc;
  stored.lease = nullptr;
  WriteError error{"no cache root", 0};
  if (!root_.empty()) {
    auto dir = workloadDir(name.workload_id, /*create=*/true);
    if (!dir) {
      const int errnum = errno;
      error = {errorMessage(dir.takeError()), errnum};
    } else {
      FileLock lease;
      if (writeFileAtomically(**dir, entryFileName(name), encodeEntry(stored), error, &lease)) {
        std::lock_guard<std::mutex> lock(mutex_);
        ++saved_;
        return {std::make_shared<const FileLock>(std::move(lease)), {}};
      }
    }
    // Each publish tries the disk again (space may be freed, a root
    // repaired): that costs a failed open or write, never a wrong entry.
    // The warning, once per root and kind, says which case this is.
    if (error.errnum == 0)
      warnRefused(error.why);
    else if (error.errnum == EACCES || error.errnum == EPERM || error.errnum == EROFS)
      warnOnce("unwritable:" + root_,
               fmt::format("cache root {} is not writable ({}): compiled kernels are kept in "
                           "memory only",
                           root_, error.why));
    else
      warnOnce("unsaved:" + root_,
               fmt::format("cannot save to cache root {} ({}): compiled kernels are kept in "
                           "memory; later compiles try the disk again",
                           root_, error.why));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++unsaved_;
  memory_[entryPath(name)] = std::move(stored);
  return {nullptr, error.why};
}

FileLock CubinStore::lockKey(const EntryName &name,
                             std::optional<std::chrono::steady_clock::time_point> until) {
  FileLock lock;
  if (root_.empty())
    return lock;
  auto dir = workloadDir(name.workload_id, /*create=*/true);
  if (!dir || !*dir) {
    // Expected in a read-only root: the compile goes on unlocked and its
    // result stays in memory, which publish() reports once.
    if (!dir)
      logger().debug("compiling without the key lock: {}", errorMessage(dir.takeError()));
    return lock;
  }
  const std::string path = lockPath(name);
  LockOptions options;
  options.remove_on_release = true;
  options.wait = false;
  auto got = lockFile(**dir, lockFileName(name), options, lock);
  if (got && *got == Acquired::Busy) {
    logger().info("another process is compiling {}; waiting for it", path);
    const auto now = std::chrono::steady_clock::now();
    const auto limit = until ? std::max(*until, now) - now : key_lock_wait_;
    options.wait = true;
    options.wait_limit = std::chrono::duration_cast<std::chrono::milliseconds>(limit);
    got = lockFile(**dir, lockFileName(name), options, lock);
    if (got && *got == Acquired::Busy)
      logger().warn("{} was still locked when the wait for it ran out; compiling without the lock",
                    path);
  }
  if (!got)
    logger().debug("compiling without the key lock: {}", errorMessage(got.takeError()));
  return lock;
}

} // namespace moejit::store
