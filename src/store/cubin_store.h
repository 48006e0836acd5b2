// The on-disk cubin cache (cache/FORMAT.md):
//   <root>/v<format>/<workload id>/<entry key>.cubin
// Each file carries a header, its metadata, the cubin and a sha256 trailer,
// and is published atomically (temporary file, fsync, rename). A corrupt or
// truncated file is a logged miss; an unwritable root gives one warning and
// an in-memory cache.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace moejit::store {

inline constexpr int kFormatVersion = 1;

struct EntryMeta {
  std::string kernel; ///< kernel name
  std::string arch;
  int registers = 0;
  int spill_bytes = 0;
  int static_shared_bytes = 0;
  double compile_ms = 0;
};

struct Entry {
  std::string cubin;
  EntryMeta meta;
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
  /// logged).
  std::optional<Entry> load(const std::string &workload_id, const std::string &key);
  /// Publishes atomically; falls back to memory if the root is unwritable.
  void publish(const std::string &workload_id, const std::string &key, const Entry &entry);

  const std::string &root() const { return root_; }
  /// <root>/v<format>/<workload id>/<key>.cubin
  std::string entryPath(const std::string &workload_id, const std::string &key) const;
  bool memoryOnly() const;
  uint64_t hits() const;
  uint64_t misses() const;
  /// NVRTC compiles done for this store (counted by the builder).
  uint64_t compiles() const;
  void countCompile();

private:
  std::string root_;
  mutable std::mutex mutex_;
  bool memory_only_ = false;
  std::map<std::string, Entry> memory_; // key: path
  uint64_t hits_ = 0, misses_ = 0, compiles_ = 0;
};

} // namespace moejit::store
