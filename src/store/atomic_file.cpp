#include "store/atomic_file.h"

#include "common/error.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <sys/file.h>
#include <unistd.h>

namespace moejit::store {

namespace {

std::string randomSuffix() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string s(8, '0');
  for (char &c : s)
    c = digits[rng() % (sizeof(digits) - 1)];
  return s;
}

/// A unique temporary file next to `name`, created, opened and share-locked.
/// A cleaner may remove the file between its creation and our flock (it
/// sees an unheld temporary file); then its name is gone and we make
/// another.
bool createLockedTemp(const safefs::Dir &dir, llvm::StringRef name, safefs::Fd &fd,
                      std::string &tmp, WriteError &error) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    tmp = name.str() + kTempMarker + randomSuffix();
    errno = 0;
    auto f = safefs::openFile(dir, tmp, O_RDWR | O_CREAT | O_EXCL, safefs::kAnySize);
    if (!f) {
      const int errnum = errno;
      if (errnum == EEXIST) {
        llvm::consumeError(f.takeError());
        continue;
      }
      error = {errorMessage(f.takeError()), errnum};
      return false;
    }
    fd = std::move((*f)->fd);
    int rc;
    while ((rc = ::flock(fd.get(), LOCK_SH)) != 0 && errno == EINTR) {
    }
    if (rc != 0) {
      error = {std::strerror(errno), errno};
      ::unlinkat(dir.fd(), tmp.c_str(), 0);
      return false;
    }
    if (safefs::namesFile(fd.get(), dir, tmp))
      return true;
  }
  error = {"temporary files kept disappearing", EAGAIN};
  return false;
}

} // namespace

bool writeFileAtomically(const safefs::Dir &dir, llvm::StringRef name, const std::string &bytes,
                         WriteError &error, FileLock *lease) {
  safefs::Fd fd;
  std::string tmp;
  if (!createLockedTemp(dir, name, fd, tmp, error))
    return false;
  int errnum = safefs::writeAll(fd.get(), bytes);
  if (errnum == 0 && ::fsync(fd.get()) != 0)
    errnum = errno;
  // rename() replaces atomically: readers see the old file or the new one.
  // The lock stays held across it, so the published file is never unheld.
  if (errnum == 0 && ::renameat(dir.fd(), tmp.c_str(), dir.fd(), name.str().c_str()) != 0)
    errnum = errno;
  if (errnum != 0) {
    error = {fmt::format("cannot write {}: {}", dir.pathOf(name), std::strerror(errnum)), errnum};
    ::unlinkat(dir.fd(), tmp.c_str(), 0);
    return false;
  }
  // A crash-looping writer must not grow the folder without bound.
  removeStaleTemps(dir);
  if (lease)
    *lease = FileLock(fd.release());
  return true;
}

size_t removeStaleTemps(const safefs::Dir &dir) {
  auto names = safefs::list(dir);
  if (!names) {
    llvm::consumeError(names.takeError());
    return 0;
  }
  size_t removed = 0;
  for (const safefs::Listed &f : *names) {
    if (!S_ISREG(f.st.st_mode) || !llvm::StringRef(f.name).contains(kTempMarker))
      continue;
    const FileId id = fileIdOf(f.st);
    auto removal = removeIfUnheld(dir, f.name, &id);
    if (!removal)
      llvm::consumeError(removal.takeError());
    else if (*removal == Removal::Removed)
      ++removed;
  }
  return removed;
}

} // namespace moejit::store
