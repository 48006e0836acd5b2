#include "store/atomic_file.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace moejit::store {

bool writeFileAtomically(const std::string &path, const std::string &bytes, std::string &why) {
  if (std::error_code ec = llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path))) {
    why = ec.message();
    return false;
  }
  int fd = -1;
  llvm::SmallString<256> tmp;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueFile(path + kTempMarker + "%%%%%%%%", fd, tmp)) {
    why = ec.message();
    return false;
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0)
      break;
    done += static_cast<size_t>(n);
  }
  const bool ok = done == bytes.size() && ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  // rename() replaces atomically: readers see the old file or the new one.
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    why = std::strerror(ok ? errno : (saved ? saved : EIO));
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

} // namespace moejit::store
