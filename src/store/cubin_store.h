// The on-disk cubin cache (cache/FORMAT.md):
//   <root>/v<format>/<workload id>/<entry key>.cubin
// Each file carries a header, its metadata, the cubin and a sha256 trailer,
// and is published atomically (temporary file, fsync, rename). A corrupt or
// truncated file is a logged miss; an unwritable root gives one warning and
// an in-memory cache. Entries read or published are leased (a shared flock
// on the open file) so that `moejit cache prune` never removes them while
// this process uses them; a per-key lock file serialises the compile of one
// entry across processes.
#pragma once

#include "store/file_lock.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace moejit::store {

inline constexpr int kFormatVersion = 1;
inline constexpr const char *kEntrySuffix = ".cubin";
inline constexpr const char *kLockSuffix = ".lock";

struct EntryMeta {
  std::string kernel; ///< kernel name
  std::string arch;
  int registers = 0;
  int spill_bytes = 0;
  int static_shared_bytes = 0;
  double compile_ms = 0;
};

/// Keeps an entry file open with a shared lock for as long as it lives;
/// type-erased so that holders (kernel sets) need not know how.
using Lease = std::shared_ptr<const void>;

struct Entry {
  std::string cubin;
  EntryMeta meta;
  /// Set for entries read from or published to disk; keep it while the
  /// cubin is in use (null for memory-only entries).
  Lease lease;
};

/// Cache root from the environment: MOEJIT_CACHE_DIR, else
/// $XDG_CACHE_HOME/moejit, else $HOME/.cache/moejit.
std::string defaultRoot();

/// Serialised form of an entry (header, metadata JSON, cubin, sha256).
std::string encodeEntry(const Entry &entry);
/// Parses an encoded entry; nullopt with `why` set when it is not valid.
std::optional<Entry> decodeEntry(const std::string &bytes, std::string &why);

class CubinStore {
public:
  /// `root` empty: defaultRoot(). Nothing is created until the first publish.
  explicit CubinStore(std::string root = "");

  /// The entry, or nullopt on a miss (a corrupt file counts as a miss and is
  /// logged). A hit marks the file used now (its atime, prune's LRU order).
  std::optional<Entry> load(const std::string &workload_id, const std::string &key);
  /// The second look after taking the key's lock, following a load() that
  /// missed: a hit here turns that miss into a hit (another process
  /// published the entry meanwhile); a miss counts nothing more.
  std::optional<Entry> loadAgain(const std::string &workload_id, const std::string &key);
  /// Publishes atomically and returns the published file's lease; falls back
  /// to memory if the root is unwritable (null lease then).
  Lease publish(const std::string &workload_id, const std::string &key, const Entry &entry);
  /// Takes the key's exclusive compile lock (<key>.lock next to the entry),
  /// waiting while another process holds it; the file is removed when the
  /// lock is released. Not held when it cannot be taken (memory-only store,
  /// root not writable): the caller then compiles without it.
  FileLock lockKey(const std::string &workload_id, const std::string &key);

  const std::string &root() const { return root_; }
  /// <root>/v<format>/<workload id>/<key>.cubin
  std::string entryPath(const std::string &workload_id, const std::string &key) const;
  /// <root>/v<format>/<workload id>/<key>.lock
  std::string lockPath(const std::string &workload_id, const std::string &key) const;
  bool memoryOnly() const;
  uint64_t hits() const;
  uint64_t misses() const;
  /// NVRTC compiles done for this store (counted by the builder).
  uint64_t compiles() const;
  void countCompile();

private:
  /// Reads and leases the entry file at `path`; nullopt when it is missing
  /// or corrupt (logged if `report_corrupt`).
  std::optional<Entry> readEntry(const std::string &path, bool report_corrupt);

  std::string root_;
  mutable std::mutex mutex_;
  bool memory_only_ = false;
  std::map<std::string, Entry> memory_; // key: path
  uint64_t hits_ = 0, misses_ = 0, compiles_ = 0;
};

} // namespace moejit::store
