#include "store/file_lock.h"

#include "common/error.h"
#include "common/log.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace moejit::store {

FileLock::FileLock(int fd, std::optional<safefs::Dir> remove_in, std::string remove_name)
    : fd_(fd), remove_in_(std::move(remove_in)), remove_name_(std::move(remove_name)) {}

FileLock &FileLock::operator=(FileLock &&other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::move(other.fd_);
    remove_in_ = std::move(other.remove_in_);
    remove_name_ = std::move(other.remove_name_);
    other.remove_in_.reset();
  }
  return *this;
}

FileLock::~FileLock() { release(); }

void FileLock::release() {
  if (!fd_.valid())
    return;
  // Unlinked while still held: a process waiting on this file sees that its
  // name is gone once it gets the lock, and locks the new file instead.
  if (remove_in_ && safefs::namesFile(fd_.get(), *remove_in_, remove_name_))
    ::unlinkat(remove_in_->fd(), remove_name_.c_str(), 0);
  fd_ = safefs::Fd();
  remove_in_.reset();
  remove_name_.clear();
}

FileId fileIdOf(const struct stat &st) {
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

FileId fileIdOf(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return {};
  return fileIdOf(st);
}

namespace {

/// Opens `name` for locking.
llvm::Expected<std::optional<safefs::OpenFile>> openForLock(const safefs::Dir &dir,
                                                            llvm::StringRef name, bool create) {
  if (!create)
    return safefs::openFile(dir, name, O_RDONLY, safefs::kAnySize);
  auto rw = safefs::openFile(dir, name, O_RDWR | O_CREAT, safefs::kAnySize);
  if (rw)
    return rw;
  // An existing lock file in a folder we cannot write still locks: flock
  // needs no write access.
  auto ro = safefs::openFile(dir, name, O_RDONLY, safefs::kAnySize);
  if (ro && *ro) {
    llvm::consumeError(rw.takeError());
    return ro;
  }
  if (!ro)
    llvm::consumeError(ro.takeError());
  return rw.takeError();
}

} // namespace

llvm::Expected<Acquired> lockFile(const safefs::Dir &dir, llvm::StringRef name,
                                  const LockOptions &options, FileLock &out) {
  out = FileLock();
  // One deadline for every attempt: a file replaced again and again under
  // the waiter must not restart its wait.
  const auto deadline =
      std::chrono::steady_clock::now() + options.wait_limit.value_or(std::chrono::milliseconds(0));
  // Each retry means the file was removed or replaced after we opened it,
  // which only happens when another holder finished with it; the bound is a
  // guard against a pathological loop, not a timeout.
  for (int attempt = 0; attempt < 1000; ++attempt) {
    auto opened = openForLock(dir, name, options.create);
    if (!opened)
      return makeError(ErrorCode::InvalidArgument, "cannot lock: {}",
                       errorMessage(opened.takeError()));
    if (!*opened)
      return Acquired::Missing;
    safefs::Fd fd = std::move((*opened)->fd);
    if (options.expect && fileIdOf((*opened)->st) != *options.expect)
      return Acquired::Missing;
    // A bounded wait polls without blocking: flock has no timeout.
    const bool block = options.wait && !options.wait_limit;
    const int op = (options.exclusive ? LOCK_EX : LOCK_SH) | (block ? 0 : LOCK_NB);
    auto pause = std::chrono::milliseconds(1);
    int rc;
    while ((rc = ::flock(fd.get(), op)) != 0) {
      if (errno == EINTR)
        continue;
      if (errno != EWOULDBLOCK || !options.wait || std::chrono::steady_clock::now() >= deadline)
        break;
      std::this_thread::sleep_for(pause);
      pause = std::min(2 * pause, std::chrono::milliseconds(50));
    }
    if (rc != 0) {
      if (errno == EWOULDBLOCK)
        return Acquired::Busy;
      return makeError(ErrorCode::InvalidArgument, "cannot lock {}: {}", dir.pathOf(name),
                       std::strerror(errno));
    }
    if (safefs::namesFile(fd.get(), dir, name)) {
      std::optional<safefs::Dir> remove_in;
      if (options.remove_on_release) {
        auto dup = dir.duplicate();
        if (!dup)
          return dup.takeError();
        remove_in = std::move(*dup);
      }
      out = FileLock(fd.release(), std::move(remove_in), name.str());
      return Acquired::Yes;
    }
    if (options.expect)
      return Acquired::Missing;
    logger().debug("{} changed while waiting for its lock; locking it again", dir.pathOf(name));
  }
  return makeError(ErrorCode::Internal, "{} kept changing while being locked", dir.pathOf(name));
}

llvm::Expected<Removal> removeIfUnheld(const safefs::Dir &dir, llvm::StringRef name,
                                       const FileId *expect) {
  FileLock lock;
  LockOptions options;
  options.wait = false;
  options.create = false;
  options.expect = expect;
  auto got = lockFile(dir, name, options, lock);
  if (!got)
    return got.takeError();
  if (*got == Acquired::Busy)
    return Removal::Held;
  if (*got == Acquired::Missing)
    return Removal::Missing;
  if (::unlinkat(dir.fd(), name.str().c_str(), 0) != 0) {
    if (errno == ENOENT)
      return Removal::Missing;
    return makeError(ErrorCode::InvalidArgument, "cannot remove {}: {}", dir.pathOf(name),
                     std::strerror(errno));
  }
  return Removal::Removed;
}

} // namespace moejit::store
