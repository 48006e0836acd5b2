#include "store/atomic_file.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace moejit::store {

namespace {

/// A unique temporary file next to `path`, opened and share-locked. A
/// cleaner may remove the file between its creation and our flock (it sees
/// an unheld temporary file); then its name is gone and we make another.
bool createLockedTemp(const std::string &path, int &fd, llvm::SmallString<256> &tmp,
                      std::string &why) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    if (std::error_code ec =
            llvm::sys::fs::createUniqueFile(path + kTempMarker + "%%%%%%%%", fd, tmp)) {
      why = ec.message();
      return false;
    }
    int rc;
    while ((rc = ::flock(fd, LOCK_SH)) != 0 && errno == EINTR) {
    }
    if (rc == 0 && namesFile(fd, tmp.str().str()))
      return true;
    if (rc != 0) {
      why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    ::close(fd);
  }
  why = "temporary files kept disappearing";
  return false;
}

} // namespace

bool writeFileAtomically(const std::string &path, const std::string &bytes, std::string &why,
                         FileLock *lease) {
  if (std::error_code ec = llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path))) {
    why = ec.message();
    return false;
  }
  int fd = -1;
  llvm::SmallString<256> tmp;
  if (!createLockedTemp(path, fd, tmp, why))
    return false;
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    done += static_cast<size_t>(n);
  }
  const bool ok = done == bytes.size() && ::fsync(fd) == 0;
  const int saved = errno;
  // rename() replaces atomically: readers see the old file or the new one.
  // The lock stays held across it, so the published file is never unheld.
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    why = std::strerror(ok ? errno : (saved ? saved : EIO));
    ::unlink(tmp.c_str());
    ::close(fd);
    return false;
  }
  if (lease)
    *lease = FileLock(fd);
  else
    ::close(fd);
  return true;
}

} // namespace moejit::store
