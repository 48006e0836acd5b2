#include "store/file_lock.h"

#include "common/error.h"
#include "common/log.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace moejit::store {

FileLock::FileLock(int fd, std::string remove_path)
    : fd_(fd), remove_path_(std::move(remove_path)) {}

FileLock::FileLock(FileLock &&other) noexcept
    : fd_(other.fd_), remove_path_(std::move(other.remove_path_)) {
  other.fd_ = -1;
  other.remove_path_.clear();
}

FileLock &FileLock::operator=(FileLock &&other) noexcept {
  if (this != &other) {
    release();
    fd_ = other.fd_;
    remove_path_ = std::move(other.remove_path_);
    other.fd_ = -1;
    other.remove_path_.clear();
  }
  return *this;
}

FileLock::~FileLock() { release(); }

void FileLock::release() {
  if (fd_ < 0)
    return;
  // Unlinked while still held: a process waiting on this file sees that its
  // name is gone once it gets the lock, and locks the new file instead.
  if (!remove_path_.empty() && namesFile(fd_, remove_path_))
    ::unlink(remove_path_.c_str());
  ::close(fd_);
  fd_ = -1;
  remove_path_.clear();
}

FileId fileIdOf(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return {};
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

bool namesFile(int fd, const std::string &path) {
  struct stat by_name {};
  if (::stat(path.c_str(), &by_name) != 0)
    return false;
  return fileIdOf(fd) ==
         FileId{static_cast<uint64_t>(by_name.st_dev), static_cast<uint64_t>(by_name.st_ino)};
}

namespace {

/// Opens `path` for locking; -1 with errno set on failure.
int openForLock(const std::string &path, bool create) {
  if (create) {
    // Parents may be missing on the first compile of a workload; a failure
    // here shows up as the open's error.
    (void)llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path));
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd >= 0)
      return fd;
    const int saved = errno;
    // An existing lock file in a directory we cannot write still locks:
    // flock needs no write access.
    const int ro = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (ro < 0)
      errno = saved;
    return ro;
  }
  return ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
}

} // namespace

llvm::Expected<Acquired> lockFile(const std::string &path, const LockOptions &options,
                                  FileLock &out) {
  out = FileLock();
  // Each retry means the file was removed or replaced after we opened it,
  // which only happens when another holder finished with it; the bound is a
  // guard against a pathological loop, not a timeout.
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int fd = openForLock(path, options.create);
    if (fd < 0) {
      if (errno == ENOENT && !options.create)
        return Acquired::Missing;
      return makeError(ErrorCode::InvalidArgument, "cannot open {} for locking: {}", path,
                       std::strerror(errno));
    }
    if (options.expect && fileIdOf(fd) != *options.expect) {
      ::close(fd);
      return Acquired::Missing;
    }
    const int op = (options.exclusive ? LOCK_EX : LOCK_SH) | (options.wait ? 0 : LOCK_NB);
    int rc;
    while ((rc = ::flock(fd, op)) != 0 && errno == EINTR) {
    }
    if (rc != 0) {
      const int saved = errno;
      ::close(fd);
      if (saved == EWOULDBLOCK)
        return Acquired::Busy;
      return makeError(ErrorCode::InvalidArgument, "cannot lock {}: {}", path,
                       std::strerror(saved));
    }
    if (namesFile(fd, path)) {
      out = FileLock(fd, options.remove_on_release ? path : std::string());
      return Acquired::Yes;
    }
    ::close(fd);
    if (options.expect)
      return Acquired::Missing;
    logger().debug("{} changed while waiting for its lock; locking it again", path);
  }
  return makeError(ErrorCode::Internal, "{} kept changing while being locked", path);
}

llvm::Expected<Removal> removeIfUnheld(const std::string &path, const FileId *expect) {
  FileLock lock;
  LockOptions options;
  options.wait = false;
  options.create = false;
  options.expect = expect;
  auto got = lockFile(path, options, lock);
  if (!got)
    return got.takeError();
  if (*got == Acquired::Busy)
    return Removal::Held;
  if (*got == Acquired::Missing)
    return Removal::Missing;
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT)
      return Removal::Missing;
    return makeError(ErrorCode::InvalidArgument, "cannot remove {}: {}", path,
                     std::strerror(errno));
  }
  return Removal::Removed;
}

} // namespace moejit::store
