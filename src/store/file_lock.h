// Advisory whole-file locks (flock) for the cache, shared by every process
// that opens it:
//   - a per-key lock file (exclusive) serialises the compile of one entry,
//   - a shared lock on an entry file is a lease: prune and verify --fix take
//     LOCK_EX|LOCK_NB before removing a file and skip it when that fails,
//   - a writer holds a shared lock on its temporary file, so a temporary file
//     nobody holds is one whose writer died.
// flock locks belong to the open file, so the kernel drops them when a
// process dies: a killed process never leaves a lock held. Files are named
// by a folder descriptor and a name (common/safe_fs.h): no lock file is
// created or opened through a symbolic link.
#pragma once

#include "common/safe_fs.h"

#include <llvm/Support/Error.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace moejit::store {

/// An open file descriptor that holds a flock lock; closing it (destruction
/// or release()) drops the lock.
class FileLock {
public:
  FileLock() = default;
  /// Takes ownership of `fd`. With `remove_in` set, release() unlinks
  /// `remove_name` in that folder while still holding the lock (for lock
  /// files, see lockFile).
  explicit FileLock(int fd, std::optional<safefs::Dir> remove_in = std::nullopt,
                    std::string remove_name = {});
  FileLock(FileLock &&other) noexcept = default;
  FileLock &operator=(FileLock &&other) noexcept;
  FileLock(const FileLock &) = delete;
  FileLock &operator=(const FileLock &) = delete;
  ~FileLock();

  bool held() const { return fd_.valid(); }
  int fd() const { return fd_.get(); }
  /// Unlinks the remove name (if any), then closes the descriptor.
  void release();

private:
  safefs::Fd fd_;
  std::optional<safefs::Dir> remove_in_;
  std::string remove_name_;
};

/// Device and inode: which file a name or descriptor refers to.
struct FileId {
  uint64_t device = 0, inode = 0;
  bool operator==(const FileId &) const = default;
};

struct LockOptions {
  bool exclusive = true;
  bool wait = true;   ///< block until the lock is free; else Busy
  /// With `wait`, give up (Busy) after this long. Readers of entries set
  /// it: anyone who may read a file may flock it, so another local user
  /// could otherwise hang every reader of a shared, world-readable root.
  std::optional<std::chrono::milliseconds> wait_limit;
  bool create = true; ///< create the file (0600 under Trust::Owner)
  /// release() of the lock unlinks the file (per-key lock files: no lock
  /// file stays behind unless its holder was killed).
  bool remove_on_release = false;
  /// Lock only the file with this identity; another file at the name is
  /// Missing (it replaced the one the caller looked at).
  const FileId *expect = nullptr;
};

enum class Acquired { Yes, Busy, Missing };

/// Opens `name` in `dir` and locks it. Because lock files are unlinked by
/// their last holder, a lock taken on a file that no longer has the name is
/// dropped and taken again on the current file: two processes never both
/// hold "the" lock of a name. InvalidArgument (with the reason) when the
/// file cannot be opened or created, e.g. in a read-only root, or when it
/// is a link, a special file or not trusted.
llvm::Expected<Acquired> lockFile(const safefs::Dir &dir, llvm::StringRef name,
                                  const LockOptions &options, FileLock &out);

enum class Removal { Removed, Held, Missing };

/// Removes `name` in `dir` unless someone holds a lock on it (a lease, a
/// writer, a compiling process): takes LOCK_EX|LOCK_NB, checks that the name
/// still names the locked file (and `expect`, if given), unlinks it.
llvm::Expected<Removal> removeIfUnheld(const safefs::Dir &dir, llvm::StringRef name,
                                       const FileId *expect = nullptr);

/// The identity of the file `fd` refers to.
FileId fileIdOf(int fd);
FileId fileIdOf(const struct stat &st);

} // namespace moejit::store
