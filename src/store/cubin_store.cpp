#include "store/cubin_store.h"

#include "common/error.h"
#include "common/log.h"
#include "common/settings.h"
#include "store/atomic_file.h"
#include "workload/shape.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SHA256.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace moejit::store {

namespace {

constexpr char kMagic[8] = {'M', 'O', 'E', 'J', 'I', 'T', 'C', kFormatVersion};
constexpr size_t kHeaderBytes = 8 + 4 + 8; // magic, meta length, cubin length
constexpr size_t kDigestBytes = 32;

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
  llvm::json::Object o{{"kernel", m.kernel},
                       {"arch", m.arch},
                       {"registers", m.registers},
                       {"spill_bytes", m.spill_bytes},
                       {"static_shared_bytes", m.static_shared_bytes},
                       {"compile_ms", m.compile_ms}};
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::json::Value(std::move(o));
  return os.str();
}

bool parseMeta(llvm::StringRef text, EntryMeta &m) {
  auto value = llvm::json::parse(text);
  if (!value) {
    llvm::consumeError(value.takeError());
    return false;
  }
  const llvm::json::Object *o = value->getAsObject();
  if (!o)
    return false;
  auto str = [&](const char *k, std::string &out) {
    auto v = o->getString(k);
    if (v)
      out = v->str();
    return v.hasValue();
  };
  auto num = [&](const char *k, int &out) {
    auto v = o->getInteger(k);
    if (v)
      out = static_cast<int>(*v);
    return v.hasValue();
  };
  auto ms = o->getNumber("compile_ms");
  m.compile_ms = ms ? *ms : 0;
  return str("kernel", m.kernel) && str("arch", m.arch) && num("registers", m.registers) &&
         num("spill_bytes", m.spill_bytes) && num("static_shared_bytes", m.static_shared_bytes);
}

} // namespace

std::string defaultRoot() {
  // MOEJIT_CACHE_DIR is a path: any non-empty value is valid.
  if (auto dir = settings::read("MOEJIT_CACHE_DIR"); dir && !dir->empty())
    return *dir;
  else if (!dir)
    llvm::consumeError(dir.takeError());
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/moejit";
  const char *home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/moejit";
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
  if (bytes.size() != kHeaderBytes + meta_len + cubin_len + kDigestBytes) {
    why = "size does not match its header (truncated?)";
    return std::nullopt;
  }
  const std::string body = bytes.substr(0, bytes.size() - kDigestBytes);
  if (rawSha256(body) != bytes.substr(body.size())) {
    why = "checksum mismatch";
    return std::nullopt;
  }
  Entry e;
  if (!parseMeta(llvm::StringRef(bytes).substr(kHeaderBytes, meta_len), e.meta)) {
    why = "unreadable metadata";
    return std::nullopt;
  }
  e.cubin = bytes.substr(kHeaderBytes + meta_len, cubin_len);
  return e;
}

CubinStore::CubinStore(std::string root) : root_(root.empty() ? defaultRoot() : std::move(root)) {}

std::string CubinStore::entryPath(const std::string &workload_id, const std::string &key) const {
  return fmt::format("{}/v{}/{}/{}{}", root_, kFormatVersion, workload_id, key, kEntrySuffix);
}

std::string CubinStore::lockPath(const std::string &workload_id, const std::string &key) const {
  return fmt::format("{}/v{}/{}/{}{}", root_, kFormatVersion, workload_id, key, kLockSuffix);
}

bool CubinStore::memoryOnly() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return memory_only_;
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

namespace {

/// The whole file behind `fd`; false on a read error.
bool readAll(int fd, std::string &out) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return false;
  out.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    done += static_cast<size_t>(n);
  }
  out.resize(done); // a short read shows up as a size mismatch when decoding
  return true;
}

} // namespace

std::optional<Entry> CubinStore::readEntry(const std::string &path, bool report_corrupt) {
  // The shared lock is taken before reading and kept as the lease: prune
  // and verify --fix remove only files they can lock exclusively.
  FileLock lease;
  LockOptions options;
  options.exclusive = false;
  options.create = false;
  auto got = lockFile(path, options, lease);
  if (!got) {
    warnOnce("unreadable:" + path,
             fmt::format("cannot read cache entry: {}", errorMessage(got.takeError())));
    return std::nullopt;
  }
  if (*got != Acquired::Yes)
    return std::nullopt;
  std::string bytes;
  if (!readAll(lease.fd(), bytes))
    return std::nullopt;
  std::string why;
  std::optional<Entry> entry = decodeEntry(bytes, why);
  if (!entry) {
    if (report_corrupt)
      logger().warn("corrupt cache entry {} ({}): it will be rebuilt", path, why);
    return std::nullopt;
  }
  // Marks the entry used now for prune's LRU order, even on relatime or
  // noatime mounts; a root we do not own keeps the kernel's own atime.
  const struct timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
  (void)::futimens(lease.fd(), times);
  entry->lease = std::make_shared<const FileLock>(std::move(lease));
  return entry;
}

std::optional<Entry> CubinStore::load(const std::string &workload_id, const std::string &key) {
  const std::string path = entryPath(workload_id, key);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = memory_.find(path); it != memory_.end()) {
      ++hits_;
      return it->second;
    }
  }
  std::optional<Entry> entry = readEntry(path, /*report_corrupt=*/true);
  std::lock_guard<std::mutex> lock(mutex_);
  ++(entry ? hits_ : misses_);
  return entry;
}

std::optional<Entry> CubinStore::loadAgain(const std::string &workload_id, const std::string &key) {
  // The first look already reported a corrupt file; another process that
  // replaced it meanwhile makes this a hit.
  std::optional<Entry> entry = readEntry(entryPath(workload_id, key), /*report_corrupt=*/false);
  if (entry) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (misses_ > 0)
      --misses_;
    ++hits_;
  }
  return entry;
}

Lease CubinStore::publish(const std::string &workload_id, const std::string &key,
                          const Entry &entry) {
  const std::string path = entryPath(workload_id, key);
  bool memory_only;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    memory_only = memory_only_;
  }
  std::string why;
  FileLock lease;
  if (!memory_only && writeFileAtomically(path, encodeEntry(entry), why, &lease))
    return std::make_shared<const FileLock>(std::move(lease));
  std::lock_guard<std::mutex> lock(mutex_);
  if (!memory_only_) {
    memory_only_ = true;
    warnOnce("unwritable:" + root_, fmt::format("cache root {} is not writable ({}): compiled "
                                                "kernels are kept in memory only",
                                                root_, why));
  }
  memory_[path] = entry;
  return nullptr;
}

FileLock CubinStore::lockKey(const std::string &workload_id, const std::string &key) {
  FileLock lock;
  if (memoryOnly())
    return lock;
  const std::string path = lockPath(workload_id, key);
  LockOptions options;
  options.remove_on_release = true;
  options.wait = false;
  auto got = lockFile(path, options, lock);
  if (got && *got == Acquired::Busy) {
    logger().info("another process is compiling {}; waiting for it", path);
    options.wait = true;
    got = lockFile(path, options, lock);
  }
  if (!got)
    // Expected in a read-only root: the compile goes on unlocked and its
    // result stays in memory, which publish() reports once.
    logger().debug("compiling without the key lock: {}", errorMessage(got.takeError()));
  return lock;
}

} // namespace moejit::store
