// The on-disk cubin cache (cache/FORMAT.md):
//   <root>/v<format>/<workload id>/<entry key>.cubin
// Each file carries a header, its metadata (with the entry's own key, kernel
// and arch), the cubin and a sha256 trailer, and is published atomically
// (temporary file, fsync, rename). A corrupt, truncated, oversized or
// misplaced file is a logged miss. Everything under the root is reached
// through common/safe_fs.h: no link is followed, no special file is read,
// and a root or folder that fails the trust rule is neither loaded from nor
// written to (one warning; compiled kernels then live in memory). A write
// that fails keeps the kernel in memory and the next publish tries the disk
// again (a full disk may be freed). Entries read or published are leased (a
// shared flock on the open file) so that `moejit cache prune` never removes
// them while this process uses them; a per-key lock file serialises the
// compile of one entry across processes.
#pragma once

#include "common/safe_fs.h"
#include "store/file_lock.h"

#include <chrono>
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
/// Tuning records (tune/record.h) live under <root>/tuning/, as *.json.
inline constexpr const char *kTuningFolder = "tuning";
inline constexpr const char *kRecordSuffix = ".json";
/// Larger entry files are corrupt without being read (cubins of these
/// kernels are well under a megabyte).
inline constexpr uint64_t kMaxEntryBytes = uint64_t{64} << 20;
/// Larger or deeper entry metadata is corrupt without being parsed.
inline constexpr uint64_t kMaxMetaBytes = uint64_t{64} << 10;
inline constexpr int kMaxMetaDepth = 4;
/// Longer names in entry metadata make it corrupt (kernel names are ~70).
inline constexpr size_t kMaxMetaName = 256;
/// How long a reader waits for an entry's shared lock (its lease) before
/// taking the entry for a miss: prune and verify --fix lock an entry only
/// while they unlink it, so a longer hold is a foreign lock.
inline constexpr std::chrono::milliseconds kEntryLockWait{500};
/// How long a compile waits for another process's compile lock on the same
/// key before compiling the kernel itself: far longer than a compile, but
/// bounded, as a holder that never lets go (another user's process on a
/// shared root, or a stopped one) would otherwise stall every get() of it.
inline constexpr std::chrono::milliseconds kKeyLockWait{60'000};

/// Which entry a caller wants: where it lives (workload id, key) and what it
/// must hold (kernel, arch); an entry holding anything else is corrupt.
struct EntryName {
  std::string workload_id;
  std::string key;
  std::string kernel;
  std::string arch;
  /// The NVRTC version it must have been built by; empty: any.
  std::string nvrtc;
};

struct EntryMeta {
  std::string key;    ///< the entry key the file was published under
  std::string kernel; ///< kernel name
  std::string arch;
  std::string nvrtc; ///< the NVRTC version that built it ("13.0")
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

/// What publish() did.
struct Published {
  Lease lease;           ///< the published file's lease; null when not saved
  std::string not_saved; ///< why the entry lives in memory only; empty when saved
};

/// Cache root from the environment: MOEJIT_CACHE_DIR, else
/// $XDG_CACHE_HOME/moejit, else <home>/.cache/moejit with the home from
/// HOME, else from the password database ($XDG_CACHE_HOME and HOME count
/// only when absolute). Empty when there is no home at all: the cache is
/// then memory-only, never a guessable folder under /tmp.
std::string defaultRoot();

/// Serialised form of an entry (header, metadata JSON, cubin, sha256).
std::string encodeEntry(const Entry &entry);
/// Parses an encoded entry; nullopt with `why` set when it is not valid
/// (including metadata over kMaxMetaBytes or kMaxMetaDepth).
std::optional<Entry> decodeEntry(const std::string &bytes, std::string &why);
/// Why a decoded entry is not the one `name` asks for; empty when it is.
std::string entryMismatch(const EntryMeta &meta, const EntryName &name);

class CubinStore {
public:
  /// `root` empty: defaultRoot() (none: memory only, one warning). Nothing is
  /// created until the first publish. The trust mode is MOEJIT_CACHE_TRUST.
  /// `key_lock_wait`: lockKey()'s bound on waiting for another holder.
  explicit CubinStore(std::string root = "",
                      std::chrono::milliseconds key_lock_wait = kKeyLockWait);

  /// The entry, or nullopt on a miss (a corrupt file counts as a miss and is
  /// logged). A hit marks the file used now (its atime, prune's LRU order).
  std::optional<Entry> load(const EntryName &name);
  /// The second look after taking the key's lock, following a load() that
  /// missed: a hit here turns that miss into a hit (another process
  /// published the entry meanwhile); a miss counts nothing more.
  std::optional<Entry> loadAgain(const EntryName &name);
  /// Publishes atomically (the metadata takes the name's key, kernel and
  /// arch); where the root cannot take it, the entry is kept in memory and
  /// the reason is returned (logged once per root and kind of reason).
  Published publish(const EntryName &name, const Entry &entry);
  /// Takes the key's exclusive compile lock (<key>.lock next to the entry),
  /// waiting while another process holds it until `until` (default:
  /// key_lock_wait from now; the keys of one program share one bound); the
  /// file is removed when the lock is released. Not held when it cannot be
  /// taken (memory-only store, root not writable or not trusted, the wait
  /// ran out): the caller then compiles without it.
  FileLock lockKey(const EntryName &name,
                   std::optional<std::chrono::steady_clock::time_point> until = std::nullopt);
  std::chrono::milliseconds keyLockWait() const { return key_lock_wait_; }

  /// Opens the root and its v<format> folder the way load() and publish()
  /// reach them, making them when `create`: the error says why entries can
  /// be neither loaded from nor saved there (no root, not a folder, a link
  /// where a folder should be, not trusted, cannot be made). A root that
  /// does not exist is fine without `create`. For callers that would rather
  /// stop before compiling than keep what they compile in memory (moejit
  /// warm), since the store itself only warns.
  llvm::Error checkRoot(bool create) const;

  const std::string &root() const { return root_; }
  /// <root>/v<format>/<workload id>/<key>.cubin
  std::string entryPath(const EntryName &name) const;
  /// <root>/v<format>/<workload id>/<key>.lock
  std::string lockPath(const EntryName &name) const;
  /// Some entry of this store lives in memory only (it could not be saved).
  bool memoryOnly() const;
  uint64_t hits() const;
  uint64_t misses() const;
  /// Kernels NVRTC compiled for this store (counted by the builder; several
  /// may have shared one NVRTC program).
  uint64_t compiles() const;
  void countCompile();
  /// Entries published to disk, and entries that could not be.
  uint64_t saved() const;
  uint64_t unsaved() const;

private:
  /// <root>/v<format>/<workload id>, checked on the way down.
  llvm::Expected<std::optional<safefs::Dir>> workloadDir(const std::string &workload_id,
                                                         bool create) const;
  /// Reads and leases the entry file; nullopt when it is missing, corrupt or
  /// refused (logged if `report_corrupt`).
  std::optional<Entry> readEntry(const EntryName &name, bool report_corrupt);
  /// One warning per root for a tree that is not used at all.
  void warnRefused(const std::string &why) const;

  std::string root_;
  safefs::Trust trust_;
  std::chrono::milliseconds key_lock_wait_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> memory_; // key: entry path
  uint64_t hits_ = 0, misses_ = 0, compiles_ = 0, saved_ = 0, unsaved_ = 0;
};

} // namespace moejit::store
