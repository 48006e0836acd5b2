// Upkeep of a cache root, behind `moejit cache list | verify | prune`:
// scanning it, checking every entry, and trimming it least recently used
// first. Every removal goes through removeIfUnheld, so nothing a running
// process holds (a leased entry, a temporary file being written, a key being
// compiled) is removed. The walk goes through folder descriptors
// (common/safe_fs.h): a symbolic link, a special file or an untrusted folder
// is reported, never entered, read or followed, so no file outside the root
// is ever touched.
#pragma once

#include "common/safe_fs.h"
#include "store/cubin_store.h"
#include "store/file_lock.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace moejit::store {

enum class FileKind {
  Entry,  ///< <key>.cubin
  Temp,   ///< a writeFileAtomically temporary (name holds kTempMarker)
  Lock,   ///< <key>.lock
  Record, ///< a tuning record: <name>.json under tuning/
  Other,
};

/// What a file is, from its name.
FileKind kindOf(llvm::StringRef name);

struct CacheFile {
  std::string path;                 ///< for messages
  std::string relative;             ///< to the root, e.g. "v1/<id>/<key>.cubin"
  std::vector<std::string> folders; ///< from the root to its folder, e.g. {"v1", "<id>"}
  std::string name;                 ///< in that folder
  std::string workload_id;          ///< its directory under v<format>/ ("" under tuning/)
  /// Set for what the walk refused to enter or read: a link, a special
  /// file, an untrusted folder (why); such a file has kind Other.
  std::string refused;
  bool is_folder = false; ///< the refused thing is a folder (not removable)
  FileKind kind = FileKind::Other;
  uint64_t size = 0;
  int64_t atime = 0, mtime = 0; ///< seconds since the epoch
  FileId id;
  /// Reads mark entries used through atime (CubinStore::load), writes
  /// through mtime.
  int64_t lastUsed() const { return std::max(atime, mtime); }
};

struct CacheScan {
  std::string root;
  std::vector<CacheFile> files;   ///< under v<format>/, sorted by path
  std::vector<CacheFile> tuning;  ///< every file under tuning/, sorted by path
  std::vector<CacheFile> refused; ///< links, special files, untrusted folders (by path)
  uint64_t entryBytes() const;
  size_t count(FileKind kind) const;
};

/// Lists the root. A root that does not exist is an empty cache; one that
/// cannot be read or is not trusted (MOEJIT_CACHE_TRUST) is InvalidArgument.
llvm::Expected<CacheScan> scanCache(const std::string &root);

/// Decodes the entry file `f` of a scan of `root` without marking it used;
/// InvalidArgument saying why when it is not a valid entry (including one
/// that holds another key than its name says).
llvm::Expected<EntryMeta> checkEntryFile(const std::string &root, const CacheFile &f);

/// "12345", "100K", "512M", "2G", "1T" (powers of 1024; case does not
/// matter; a trailing "B" or "iB" is allowed). InvalidArgument otherwise.
llvm::Expected<uint64_t> parseSize(llvm::StringRef text);
/// 1536 -> "1.5K"; below 1024, the bytes.
std::string formatSize(uint64_t bytes);

/// Indices of the entries in `files`, least recently used first (ties: by
/// path, so the order is stable).
std::vector<size_t> lruOrder(const std::vector<CacheFile> &files);

/// Prune's walk: entries least recently used first, each passed to
/// `remove` while the entries left total more than `max_bytes`; an entry
/// `remove` refuses (in use) stays and keeps counting. The indices removed.
std::vector<size_t> pruneOrder(const std::vector<CacheFile> &files, uint64_t max_bytes,
                               const std::function<bool(const CacheFile &)> &remove);

/// One file a command reports on.
struct Finding {
  std::string path;
  std::string what;
  bool removed = false;
};

struct VerifyReport {
  size_t entries_ok = 0;
  std::vector<Finding> corrupt;     ///< entries that do not decode (what: why)
  std::vector<Finding> refused;     ///< links, special files, untrusted folders
  std::vector<Finding> records;     ///< tuning records that do not read back (what: why)
  std::vector<Finding> temps;       ///< temporary files (what: stale or being written)
  std::vector<Finding> stale_locks; ///< lock files nobody holds (a killed compile)
  std::vector<Finding> errors;      ///< files that could not be checked or removed
  /// No corrupt entry, refused file or bad record is left.
  bool ok() const;
};

/// Why the tuning record `name` in `dir` (`folders` from the root down to
/// it) is not usable; empty when it is (the tune stage's check, handed in:
/// records are its format and its place).
using RecordCheck = std::function<std::string(
    const safefs::Dir &dir, llvm::ArrayRef<std::string> folders, llvm::StringRef name)>;

/// Decodes every entry, checks every tuning record with `check_record` (if
/// given) and looks at every temporary and lock file. With `fix`, removes
/// corrupt entries, bad records, links and special files, stale temporary
/// files and stale lock files, each only when nobody holds it.
llvm::Expected<VerifyReport> verifyCache(const std::string &root, bool fix,
                                         const RecordCheck &check_record = {});

struct PruneReport {
  std::vector<Finding> removed; ///< entries removed, least recently used first
  std::vector<Finding> kept;    ///< entries that had to stay (what: why)
  std::vector<Finding> temps;   ///< stale temporary files removed
  std::vector<Finding> locks;   ///< lock files of removed entries, removed
  std::vector<Finding> refused; ///< links, special files, untrusted folders: left alone
  std::vector<Finding> errors;
  uint64_t final_bytes = 0; ///< entry bytes left
  size_t final_entries = 0;
};

/// Removes least recently used entries until the entries total at most
/// `max_bytes`, skipping those in use, and every stale temporary file.
llvm::Expected<PruneReport> pruneCache(const std::string &root, uint64_t max_bytes);

} // namespace moejit::store
