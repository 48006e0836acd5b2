#include "store/cache_admin.h"

#include "common/error.h"
#include "store/atomic_file.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

namespace moejit::store {

namespace fs = llvm::sys::fs;

FileKind kindOf(llvm::StringRef name) {
  // "<key>.cubin.tmp-XXXXXXXX" ends neither in .cubin nor in .lock, but the
  // marker is checked first all the same.
  if (name.contains(kTempMarker))
    return FileKind::Temp;
  if (name.endswith(kEntrySuffix))
    return FileKind::Entry;
  if (name.endswith(kLockSuffix))
    return FileKind::Lock;
  return FileKind::Other;
}

uint64_t CacheScan::entryBytes() const {
  uint64_t total = 0;
  for (const CacheFile &f : files)
    if (f.kind == FileKind::Entry)
      total += f.size;
  return total;
}

size_t CacheScan::count(FileKind kind) const {
  return static_cast<size_t>(std::count_if(files.begin(), files.end(),
                                           [&](const CacheFile &f) { return f.kind == kind; }));
}

bool VerifyReport::ok() const {
  return std::all_of(corrupt.begin(), corrupt.end(), [](const Finding &f) { return f.removed; });
}

namespace {

/// Fills size, times and identity from lstat; false for anything but a
/// regular file (or a file removed since it was listed).
bool statFile(CacheFile &f) {
  struct stat st {};
  if (::lstat(f.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return false;
  f.size = static_cast<uint64_t>(st.st_size);
  f.atime = st.st_atim.tv_sec;
  f.mtime = st.st_mtim.tv_sec;
  f.id = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  return true;
}

bool isDirectory(const std::string &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

llvm::Error listError(const std::string &path, std::error_code ec) {
  return makeError(ErrorCode::InvalidArgument, "cannot list {}: {}", path, ec.message());
}

std::string keyLockPath(const std::string &entry_path) {
  llvm::StringRef p(entry_path);
  return (p.drop_back(std::strlen(kEntrySuffix)) + kLockSuffix).str();
}

/// Removes an entry only when nobody compiles its key (the key lock) and
/// nobody holds it (a lease); the key lock file goes with it. Holding the
/// key lock also keeps a publisher from renaming a new file over the name
/// between our check and our unlink.
llvm::Expected<Removal> removeEntry(const CacheFile &entry, bool &lock_existed) {
  const std::string lock_path = keyLockPath(entry.path);
  lock_existed = fs::exists(lock_path);
  FileLock key;
  LockOptions options;
  options.wait = false;
  options.remove_on_release = true;
  auto got = lockFile(lock_path, options, key);
  if (!got)
    return got.takeError();
  if (*got != Acquired::Yes)
    return Removal::Held;
  return removeIfUnheld(entry.path, &entry.id);
}

/// Whether someone holds a lock on the file; nullopt when it is gone.
std::optional<bool> isHeld(const CacheFile &f) {
  FileLock probe;
  LockOptions options;
  options.wait = false;
  options.create = false;
  options.expect = &f.id;
  auto got = lockFile(f.path, options, probe);
  if (!got) {
    llvm::consumeError(got.takeError());
    return std::nullopt;
  }
  if (*got == Acquired::Missing)
    return std::nullopt;
  return *got == Acquired::Busy;
}

} // namespace

llvm::Expected<CacheScan> scanCache(const std::string &root) {
  CacheScan scan;
  scan.root = root;
  if (!fs::exists(root))
    return scan;
  if (!isDirectory(root))
    return makeError(ErrorCode::InvalidArgument, "cache root {} is not a directory", root);
  const std::string top = "v" + std::to_string(kFormatVersion);
  const std::string versioned = root + "/" + top;
  std::error_code ec;
  if (isDirectory(versioned)) {
    for (fs::directory_iterator w(versioned, ec), end; w != end && !ec; w.increment(ec)) {
      const std::string id = llvm::sys::path::filename(w->path()).str();
      if (!isDirectory(w->path()))
        continue;
      std::error_code inner;
      for (fs::directory_iterator it(w->path(), inner), stop; it != stop && !inner;
           it.increment(inner)) {
        CacheFile f;
        f.path = it->path();
        const std::string name = llvm::sys::path::filename(f.path).str();
        f.relative = top + "/" + id + "/" + name;
        f.workload_id = id;
        f.kind = kindOf(name);
        if (statFile(f))
          scan.files.push_back(std::move(f));
      }
      if (inner)
        return listError(w->path(), inner);
    }
    if (ec)
      return listError(versioned, ec);
  }
  const std::string tuning = root + "/tuning";
  if (isDirectory(tuning)) {
    for (fs::recursive_directory_iterator it(tuning, ec), end; it != end && !ec; it.increment(ec)) {
      CacheFile f;
      f.path = it->path();
      f.relative = llvm::StringRef(f.path).drop_front(root.size() + 1).str();
      f.kind = kindOf(llvm::sys::path::filename(f.path)) == FileKind::Temp ? FileKind::Temp
                                                                           : FileKind::Other;
      if (statFile(f))
        scan.tuning.push_back(std::move(f));
    }
    if (ec)
      return listError(tuning, ec);
  }
  auto byPath = [](const CacheFile &a, const CacheFile &b) { return a.path < b.path; };
  std::sort(scan.files.begin(), scan.files.end(), byPath);
  std::sort(scan.tuning.begin(), scan.tuning.end(), byPath);
  return scan;
}

llvm::Expected<EntryMeta> checkEntryFile(const std::string &path) {
  // Checking is not using: O_NOATIME keeps prune's LRU order (it is refused
  // on files we do not own, then the plain open still works).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOATIME);
  if (fd < 0 && errno == EPERM)
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return makeError(ErrorCode::InvalidArgument, "cannot open {}: {}", path, std::strerror(errno));
  auto buffer = llvm::MemoryBuffer::getOpenFile(fd, path, /*FileSize=*/-1,
                                                /*RequiresNullTerminator=*/false,
                                                /*IsVolatile=*/true);
  ::close(fd);
  if (!buffer)
    return makeError(ErrorCode::InvalidArgument, "cannot read {}: {}", path,
                     buffer.getError().message());
  std::string why;
  std::optional<Entry> entry = decodeEntry((*buffer)->getBuffer().str(), why);
  if (!entry)
    return makeError(ErrorCode::InvalidArgument, "{}", why);
  return entry->meta;
}

llvm::Expected<uint64_t> parseSize(llvm::StringRef text) {
  auto bad = [&] {
    return makeError(ErrorCode::InvalidArgument,
                     "size '{}' is not a whole number of bytes with an optional K, M, G or T "
                     "suffix (e.g. 512M)",
                     text.str());
  };
  llvm::StringRef rest = text.trim();
  const size_t digits = rest.find_if_not([](char c) { return llvm::isDigit(c); });
  if (digits == 0)
    return bad();
  uint64_t value = 0;
  if (rest.take_front(digits).getAsInteger(10, value))
    return bad();
  const std::string unit = rest.drop_front(std::min(digits, rest.size())).lower();
  uint64_t scale = 1;
  if (!unit.empty() && unit != "b") {
    const size_t power = llvm::StringRef("kmgt").find(unit.front());
    const llvm::StringRef tail = llvm::StringRef(unit).drop_front();
    if (power == llvm::StringRef::npos || !(tail.empty() || tail == "b" || tail == "ib"))
      return bad();
    scale = uint64_t{1} << (10 * (power + 1));
  }
  if (value > std::numeric_limits<uint64_t>::max() / scale)
    return bad();
  return value * scale;
}

std::string formatSize(uint64_t bytes) {
  if (bytes < 1024)
    return std::to_string(bytes);
  const char *units = "KMGT";
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f}{}", v, units[u]);
}

std::vector<size_t> lruOrder(const std::vector<CacheFile> &files) {
  std::vector<size_t> order;
  for (size_t i = 0; i < files.size(); ++i)
    if (files[i].kind == FileKind::Entry)
      order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (files[a].lastUsed() != files[b].lastUsed())
      return files[a].lastUsed() < files[b].lastUsed();
    return files[a].path < files[b].path;
  });
  return order;
}

std::vector<size_t> pruneOrder(const std::vector<CacheFile> &files, uint64_t max_bytes,
                               const std::function<bool(const CacheFile &)> &remove) {
  uint64_t total = 0;
  for (const CacheFile &f : files)
    if (f.kind == FileKind::Entry)
      total += f.size;
  std::vector<size_t> removed;
  for (size_t i : lruOrder(files)) {
    if (total <= max_bytes)
      break;
    if (remove(files[i])) {
      total -= files[i].size;
      removed.push_back(i);
    }
  }
  return removed;
}

llvm::Expected<VerifyReport> verifyCache(const std::string &root, bool fix) {
  auto scan = scanCache(root);
  if (!scan)
    return scan.takeError();
  VerifyReport report;
  std::vector<const CacheFile *> all;
  for (const CacheFile &f : scan->files)
    all.push_back(&f);
  for (const CacheFile &f : scan->tuning)
    all.push_back(&f);
  for (const CacheFile *f : all) {
    switch (f->kind) {
    case FileKind::Entry: {
      auto meta = checkEntryFile(f->path);
      if (meta) {
        ++report.entries_ok;
        break;
      }
      std::string why = errorMessage(meta.takeError());
      if (!fs::exists(f->path)) // removed by a prune meanwhile
        break;
      Finding finding{f->path, why};
      if (fix) {
        bool lock_existed = false;
        auto removal = removeEntry(*f, lock_existed);
        if (!removal)
          report.errors.push_back({f->path, errorMessage(removal.takeError())});
        else if (*removal == Removal::Removed)
          finding.removed = true;
        else if (*removal == Removal::Held)
          finding.what += " (in use by a running process: kept)";
        else
          finding.removed = true; // replaced by a new file meanwhile: this one is gone
      }
      report.corrupt.push_back(std::move(finding));
      break;
    }
    case FileKind::Temp:
    case FileKind::Lock: {
      const std::optional<bool> held = isHeld(*f);
      if (!held) // finished or removed meanwhile
        break;
      if (*held && f->kind == FileKind::Lock) // a compile in progress: nothing to report
        break;
      Finding finding{f->path, *held ? "being written" : "stale (its writer is gone)"};
      if (fix && !*held) {
        auto removal = removeIfUnheld(f->path, &f->id);
        if (!removal)
          report.errors.push_back({f->path, errorMessage(removal.takeError())});
        else
          finding.removed = *removal != Removal::Held;
      }
      (f->kind == FileKind::Temp ? report.temps : report.stale_locks).push_back(finding);
      break;
    }
    case FileKind::Other:
      break;
    }
  }
  return report;
}

llvm::Expected<PruneReport> pruneCache(const std::string &root, uint64_t max_bytes) {
  auto scan = scanCache(root);
  if (!scan)
    return scan.takeError();
  PruneReport report;
  for (const std::vector<CacheFile> *list : {&scan->files, &scan->tuning})
    for (const CacheFile &f : *list) {
      if (f.kind != FileKind::Temp)
        continue;
      auto removal = removeIfUnheld(f.path, &f.id);
      if (!removal)
        report.errors.push_back({f.path, errorMessage(removal.takeError())});
      else if (*removal == Removal::Removed)
        report.temps.push_back({f.path, formatSize(f.size), true});
    }
  pruneOrder(scan->files, max_bytes, [&](const CacheFile &f) {
    bool lock_existed = false;
    auto removal = removeEntry(f, lock_existed);
    if (!removal) {
      report.errors.push_back({f.path, errorMessage(removal.takeError())});
      return false;
    }
    switch (*removal) {
    case Removal::Removed:
      report.removed.push_back({f.path, formatSize(f.size), true});
      if (lock_existed)
        report.locks.push_back({keyLockPath(f.path), "stale", true});
      return true;
    case Removal::Held:
      report.kept.push_back({f.path, "in use by a running process"});
      return false;
    case Removal::Missing:
      report.kept.push_back({f.path, "replaced or removed by another process meanwhile"});
      return false;
    }
    return false;
  });
  // The final figures come from the disk, not from arithmetic: other
  // processes may publish while prune runs.
  auto after = scanCache(root);
  if (!after)
    return after.takeError();
  report.final_bytes = after->entryBytes();
  report.final_entries = after->count(FileKind::Entry);
  return report;
}

} // namespace moejit::store
