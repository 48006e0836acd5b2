#include "store/cache_admin.h"

#include "common/error.h"
#include "store/atomic_file.h"

#include <llvm/ADT/StringExtras.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

namespace moejit::store {

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
  auto fixed = [](const std::vector<Finding> &findings) {
    return std::all_of(findings.begin(), findings.end(),
                       [](const Finding &f) { return f.removed; });
  };
  return fixed(corrupt) && fixed(refused) && fixed(records);
}

namespace {

/// How deep the walk goes under tuning/ (records sit four folders down).
constexpr int kMaxTuningDepth = 6;

std::string joinedPath(const std::vector<std::string> &folders, llvm::StringRef name) {
  std::string out;
  for (const std::string &f : folders)
    out += f + "/";
  return out + name.str();
}

void fillStat(CacheFile &f, const struct stat &st) {
  f.size = static_cast<uint64_t>(st.st_size);
  f.atime = st.st_atim.tv_sec;
  f.mtime = st.st_mtim.tv_sec;
  f.id = fileIdOf(st);
}

llvm::Error rootError(const std::string &root, llvm::Error e) {
  return makeError(ErrorCode::InvalidArgument, "cache root {}: {}", root,
                   errorMessage(std::move(e)));
}

/// The walk of one folder: regular files go to `out` (kind from `kindFor`),
/// subfolders are entered while `depth` allows, and links, special files and
/// folders that cannot be entered (untrusted, unreadable) go to
/// scan.refused.
class Walker {
public:
  Walker(const std::string &root, CacheScan &scan) : root_(root), scan_(scan) {}

  llvm::Error walk(const safefs::Dir &dir, const std::vector<std::string> &folders, int depth,
                   const std::function<FileKind(llvm::StringRef)> &kindFor,
                   std::vector<CacheFile> &out) {
    auto names = safefs::list(dir);
    if (!names)
      return names.takeError();
    for (const safefs::Listed &l : *names) {
      CacheFile f;
      f.folders = folders;
      f.name = l.name;
      f.relative = joinedPath(folders, l.name);
      f.path = root_ + "/" + f.relative;
      f.workload_id = folders.size() == 2 && folders[0] != kTuningFolder ? folders[1] : "";
      fillStat(f, l.st);
      if (S_ISREG(l.st.st_mode)) {
        f.kind = kindFor(l.name);
        out.push_back(std::move(f));
      } else if (S_ISDIR(l.st.st_mode)) {
        if (kindFor(l.name) != FileKind::Other) {
          // A folder squatting on an entry's, lock's, record's or temporary
          // file's name: nothing can be published or read there.
          f.refused = "a folder at a cache file's name: nothing can be saved or read there "
                      "(remove it by hand)";
          f.is_folder = true;
          scan_.refused.push_back(std::move(f));
          continue;
        }
        if (depth == 0)
          continue; // not the cache's; nothing here is read from it
        auto sub = safefs::openSubdir(dir, l.name, /*create=*/false);
        if (!sub || !*sub) {
          f.refused = sub ? "vanished" : errorMessage(sub.takeError());
          f.is_folder = true;
          scan_.refused.push_back(std::move(f));
          continue;
        }
        std::vector<std::string> below = folders;
        below.push_back(l.name);
        if (llvm::Error e = walk(**sub, below, depth - 1, kindFor, out))
          return e;
      } else {
        f.refused = fmt::format("a {}: never followed or read", safefs::typeName(l.st.st_mode));
        scan_.refused.push_back(std::move(f));
      }
    }
    return llvm::Error::success();
  }

private:
  const std::string &root_;
  CacheScan &scan_;
};

/// The folder of `f`, walked down from the root again (no links, trust
/// checked): removals never trust a path that was listed earlier.
llvm::Expected<std::optional<safefs::Dir>> folderOf(const std::string &root, const CacheFile &f) {
  auto top = safefs::openRoot(root, safefs::cacheTrust(), /*create=*/false);
  if (!top || !*top)
    return top;
  return safefs::openSubdirs(**top, f.folders, /*create=*/false);
}

/// Whether the file of the scan still has its name.
bool stillThere(const std::string &root, const CacheFile &f) {
  auto dir = folderOf(root, f);
  if (!dir) {
    llvm::consumeError(dir.takeError());
    return false;
  }
  if (!*dir)
    return false;
  const auto st = safefs::statAt(**dir, f.name);
  return st && fileIdOf(*st) == f.id;
}

std::string keyLockName(const CacheFile &entry) {
  return llvm::StringRef(entry.name).drop_back(std::strlen(kEntrySuffix)).str() + kLockSuffix;
}

/// `remove` in the folder of `f`, walked down again; Missing when the
/// folder is gone.
llvm::Expected<Removal>
removeIn(const std::string &root, const CacheFile &f,
         const std::function<llvm::Expected<Removal>(const safefs::Dir &)> &remove) {
  auto dir = folderOf(root, f);
  if (!dir)
    return dir.takeError();
  if (!*dir)
    return Removal::Missing;
  return remove(**dir);
}

/// Removes an entry only when nobody compiles its key (the key lock) and
/// nobody holds it (a lease); the key lock file goes with it. Holding the
/// key lock also keeps a publisher from renaming a new file over the name
/// between our check and our unlink.
llvm::Expected<Removal> removeEntry(const std::string &root, const CacheFile &entry,
                                    bool &lock_existed) {
  return removeIn(root, entry, [&](const safefs::Dir &dir) -> llvm::Expected<Removal> {
    const std::string lock_name = keyLockName(entry);
    lock_existed = safefs::statAt(dir, lock_name).has_value();
    FileLock key;
    LockOptions options;
    options.wait = false;
    options.remove_on_release = true;
    auto got = lockFile(dir, lock_name, options, key);
    if (!got)
      return got.takeError();
    if (*got != Acquired::Yes)
      return Removal::Held;
    return removeIfUnheld(dir, entry.name, &entry.id);
  });
}

/// removeIfUnheld for a file of the scan.
llvm::Expected<Removal> removeUnheld(const std::string &root, const CacheFile &f) {
  return removeIn(root, f,
                  [&](const safefs::Dir &dir) { return removeIfUnheld(dir, f.name, &f.id); });
}

/// Removes a link or special file itself (never what a link points to): no
/// process of ours holds one, so no lock is needed.
llvm::Expected<Removal> removeRefused(const std::string &root, const CacheFile &f) {
  return removeIn(root, f, [&](const safefs::Dir &dir) -> llvm::Expected<Removal> {
    const auto st = safefs::statAt(dir, f.name);
    if (!st || fileIdOf(*st) != f.id)
      return Removal::Missing;
    if (::unlinkat(dir.fd(), f.name.c_str(), 0) != 0)
      return makeError(ErrorCode::InvalidArgument, "cannot remove {}: {}", f.path,
                       std::strerror(errno));
    return Removal::Removed;
  });
}

/// Whether someone holds a lock on the file; nullopt when it is gone.
std::optional<bool> isHeld(const std::string &root, const CacheFile &f) {
  auto dir = folderOf(root, f);
  if (!dir) {
    llvm::consumeError(dir.takeError());
    return std::nullopt;
  }
  if (!*dir)
    return std::nullopt;
  FileLock probe;
  LockOptions options;
  options.wait = false;
  options.create = false;
  options.expect = &f.id;
  auto got = lockFile(**dir, f.name, options, probe);
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
  auto top = safefs::openRoot(root, safefs::cacheTrust(), /*create=*/false);
  if (!top)
    return rootError(root, top.takeError());
  if (!*top)
    return scan;
  Walker walker(root, scan);
  const std::string versioned = "v" + std::to_string(kFormatVersion);
  const std::pair<const char *, int> tops[] = {{versioned.c_str(), 1},
                                               {kTuningFolder, kMaxTuningDepth}};
  for (const auto &[name, depth] : tops) {
    auto sub = safefs::openSubdir(**top, name, /*create=*/false);
    if (!sub) {
      // A link or special file in the folder's place can be removed; a
      // folder that is not trusted cannot.
      CacheFile f;
      f.name = f.relative = name;
      f.path = root + "/" + name;
      f.refused = errorMessage(sub.takeError());
      const auto st = safefs::statAt(**top, name);
      f.is_folder = !st || S_ISDIR(st->st_mode);
      if (st)
        fillStat(f, *st);
      scan.refused.push_back(std::move(f));
      continue;
    }
    if (!*sub)
      continue;
    const bool tuning = std::string(name) == kTuningFolder;
    // Under tuning/ only records and their temporaries are the cache's.
    auto kindFor = [tuning](llvm::StringRef file) {
      const FileKind kind = kindOf(file);
      if (!tuning || kind == FileKind::Temp)
        return kind;
      return file.endswith(kRecordSuffix) ? FileKind::Record : FileKind::Other;
    };
    if (llvm::Error e =
            walker.walk(**sub, {name}, depth, kindFor, tuning ? scan.tuning : scan.files))
      return e;
  }
  auto byPath = [](const CacheFile &a, const CacheFile &b) { return a.path < b.path; };
  std::sort(scan.files.begin(), scan.files.end(), byPath);
  std::sort(scan.tuning.begin(), scan.tuning.end(), byPath);
  std::sort(scan.refused.begin(), scan.refused.end(), byPath);
  return scan;
}

llvm::Expected<EntryMeta> checkEntryFile(const std::string &root, const CacheFile &f) {
  auto dir = folderOf(root, f);
  if (!dir)
    return dir.takeError();
  if (!*dir)
    return makeError(ErrorCode::InvalidArgument, "{} is gone", f.path);
  // Checking is not using: O_NOATIME keeps prune's LRU order (it is refused
  // on files we do not own, then the plain open still works).
  auto file = safefs::openFile(**dir, f.name, O_RDONLY | O_NOATIME, kMaxEntryBytes);
  if (!file && errno == EPERM) {
    llvm::consumeError(file.takeError());
    file = safefs::openFile(**dir, f.name, O_RDONLY, kMaxEntryBytes);
  }
  if (!file)
    return file.takeError();
  if (!*file)
    return makeError(ErrorCode::InvalidArgument, "{} is gone", f.path);
  std::string bytes;
  if (!safefs::readAll((*file)->fd.get(), static_cast<uint64_t>((*file)->st.st_size), bytes))
    return makeError(ErrorCode::InvalidArgument, "cannot read {}: {}", f.path,
                     std::strerror(errno));
  std::string why;
  std::optional<Entry> entry = decodeEntry(bytes, why);
  if (!entry)
    return makeError(ErrorCode::InvalidArgument, "{}", why);
  // The kernel and arch are only known to whoever asks for the entry; the
  // key is known from the name.
  const std::string key = llvm::StringRef(f.name).drop_back(std::strlen(kEntrySuffix)).str();
  if (entry->meta.key != key)
    return makeError(ErrorCode::InvalidArgument, "it is another entry: key is '{}', not '{}'",
                     entry->meta.key, key);
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

llvm::Expected<VerifyReport> verifyCache(const std::string &root, bool fix,
                                         const RecordCheck &check_record) {
  auto scan = scanCache(root);
  if (!scan)
    return scan.takeError();
  VerifyReport report;
  // A removal's outcome, written into the finding.
  auto removed = [&](Finding &finding, llvm::Expected<Removal> removal) {
    if (!removal)
      report.errors.push_back({finding.path, errorMessage(removal.takeError())});
    else if (*removal == Removal::Held)
      finding.what += " (in use by a running process: kept)";
    else
      finding.removed = true; // Missing: replaced or removed meanwhile, gone all the same
  };
  for (const CacheFile &f : scan->refused) {
    Finding finding{f.path, f.refused};
    if (fix && !f.is_folder)
      removed(finding, removeRefused(root, f));
    report.refused.push_back(std::move(finding));
  }
  std::vector<const CacheFile *> all;
  for (const CacheFile &f : scan->files)
    all.push_back(&f);
  for (const CacheFile &f : scan->tuning)
    all.push_back(&f);
  for (const CacheFile *f : all) {
    switch (f->kind) {
    case FileKind::Entry: {
      auto meta = checkEntryFile(root, *f);
      if (meta) {
        ++report.entries_ok;
        break;
      }
      std::string why = errorMessage(meta.takeError());
      if (!stillThere(root, *f)) // removed by a prune meanwhile
        break;
      Finding finding{f->path, why};
      if (fix) {
        bool lock_existed = false;
        removed(finding, removeEntry(root, *f, lock_existed));
      }
      report.corrupt.push_back(std::move(finding));
      break;
    }
    case FileKind::Temp:
    case FileKind::Lock: {
      const std::optional<bool> held = isHeld(root, *f);
      if (!held) // finished or removed meanwhile
        break;
      if (*held && f->kind == FileKind::Lock) // a compile in progress: nothing to report
        break;
      Finding finding{f->path, *held ? "being written" : "stale (its writer is gone)"};
      if (fix && !*held)
        removed(finding, removeUnheld(root, *f));
      (f->kind == FileKind::Temp ? report.temps : report.stale_locks).push_back(finding);
      break;
    }
    case FileKind::Record:
    case FileKind::Other: {
      if (!check_record || f->folders.empty() || f->folders[0] != kTuningFolder)
        break;
      auto dir = folderOf(root, *f);
      if (!dir) {
        report.errors.push_back({f->path, errorMessage(dir.takeError())});
        break;
      }
      if (!*dir)
        break;
      std::string why = check_record(**dir, f->folders, f->name);
      if (why.empty())
        break;
      Finding finding{f->path, why};
      if (fix)
        removed(finding, removeUnheld(root, *f));
      report.records.push_back(std::move(finding));
      break;
    }
    }
  }
  return report;
}

llvm::Expected<PruneReport> pruneCache(const std::string &root, uint64_t max_bytes) {
  auto scan = scanCache(root);
  if (!scan)
    return scan.takeError();
  PruneReport report;
  for (const CacheFile &f : scan->refused)
    report.refused.push_back({f.path, f.refused});
  for (const std::vector<CacheFile> *list : {&scan->files, &scan->tuning})
    for (const CacheFile &f : *list) {
      if (f.kind != FileKind::Temp)
        continue;
      auto removal = removeUnheld(root, f);
      if (!removal)
        report.errors.push_back({f.path, errorMessage(removal.takeError())});
      else if (*removal == Removal::Removed)
        report.temps.push_back({f.path, formatSize(f.size), true});
    }
  pruneOrder(scan->files, max_bytes, [&](const CacheFile &f) {
    bool lock_existed = false;
    auto removal = removeEntry(root, f, lock_existed);
    if (!removal) {
      report.errors.push_back({f.path, errorMessage(removal.takeError())});
      return false;
    }
    switch (*removal) {
    case Removal::Removed:
      report.removed.push_back({f.path, formatSize(f.size), true});
      if (lock_existed)
        report.locks.push_back(
            {f.path.substr(0, f.path.size() - f.name.size()) + keyLockName(f), "stale", true});
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
