// Advisory whole-file locks (flock) for the cache, shared by every process
// that opens it:
//   - a per-key lock file (exclusive) serialises the compile of one entry,
//   - a shared lock on an entry file is a lease: prune and verify --fix take
//     LOCK_EX|LOCK_NB before removing a file and skip it when that fails,
//   - a writer holds a shared lock on its temporary file, so a temporary file
//     nobody holds is one whose writer died.
// flock locks belong to the open file, so the kernel drops them when a
// process dies: a killed process never leaves a lock held.
#pragma once

#include <llvm/Support/Error.h>

#include <cstdint>
#include <string>

namespace moejit::store {

/// An open file descriptor that holds a flock lock; closing it (destruction
/// or release()) drops the lock.
class FileLock {
public:
  FileLock() = default;
  /// Takes ownership of `fd`. With `remove_path` set, release() unlinks that
  /// path while still holding the lock (for lock files, see lockFile).
  explicit FileLock(int fd, std::string remove_path = {});
  FileLock(FileLock &&other) noexcept;
  FileLock &operator=(FileLock &&other) noexcept;
  FileLock(const FileLock &) = delete;
  FileLock &operator=(const FileLock &) = delete;
  ~FileLock();

  bool held() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  /// Unlinks the remove path (if any), then closes the descriptor.
  void release();

private:
  int fd_ = -1;
  std::string remove_path_;
};

/// Device and inode: which file a path or descriptor names.
struct FileId {
  uint64_t device = 0, inode = 0;
  bool operator==(const FileId &) const = default;
};

struct LockOptions {
  bool exclusive = true;
  bool wait = true;   ///< block until the lock is free; else Busy
  bool create = true; ///< create the file and its parent directories
  /// release() of the lock unlinks the file (per-key lock files: no lock
  /// file stays behind unless its holder was killed).
  bool remove_on_release = false;
  /// Lock only the file with this identity; another file at the path is
  /// Missing (it replaced the one the caller looked at).
  const FileId *expect = nullptr;
};

enum class Acquired { Yes, Busy, Missing };

/// Opens `path` and locks it. Because lock files are unlinked by their last
/// holder, a lock taken on a file that no longer has the name is dropped and
/// taken again on the current file: two processes never both hold "the"
/// lock of a path. InvalidArgument (with the errno text) when the file
/// cannot be opened or created, e.g. in a read-only root.
llvm::Expected<Acquired> lockFile(const std::string &path, const LockOptions &options,
                                  FileLock &out);

enum class Removal { Removed, Held, Missing };

/// Removes `path` unless someone holds a lock on it (a lease, a writer, a
/// compiling process): takes LOCK_EX|LOCK_NB, checks that the name still
/// names the locked file (and `expect`, if given), unlinks it.
llvm::Expected<Removal> removeIfUnheld(const std::string &path, const FileId *expect = nullptr);

/// Whether `fd` is the file `path` names now.
bool namesFile(int fd, const std::string &path);
/// The identity of the file `fd` refers to.
FileId fileIdOf(int fd);

} // namespace moejit::store
