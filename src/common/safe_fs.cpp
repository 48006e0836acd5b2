#include "common/safe_fs.h"

#include "common/error.h"
#include "common/log.h"
#include "common/settings.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

namespace moejit::safefs {

namespace {

constexpr mode_t kOwnerDirMode = 0700, kOwnerFileMode = 0600;

/// A failed system call; errno is left at `errnum` for the caller.
llvm::Error failure(const std::string &path, const char *what, int errnum) {
  llvm::Error e =
      makeError(ErrorCode::InvalidArgument, "cannot {} {}: {}", what, path, std::strerror(errnum));
  errno = errnum;
  return e;
}

/// A refusal (link, special file, untrusted, too large); errno is left 0.
template <typename... Args>
llvm::Error refusal(fmt::format_string<Args...> format, Args &&...args) {
  llvm::Error e = makeError(ErrorCode::InvalidArgument, format, std::forward<Args>(args)...);
  errno = 0;
  return e;
}

/// Checks what `fd` (reached as `path`) is: a folder when `want_dir`, else a
/// regular file; and trusted.
llvm::Error checkOpened(int fd, const std::string &path, Trust trust, bool want_dir,
                        struct stat &st) {
  if (::fstat(fd, &st) != 0)
    return failure(path, "inspect", errno);
  const bool right_type = want_dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode);
  if (!right_type)
    return refusal("{} is a {}, not a {}", path, typeName(st.st_mode),
                   want_dir ? "directory" : "regular file");
  if (std::string why = distrust(st, trust); !why.empty())
    return refusal("{} is not trusted: {} (set MOEJIT_CACHE_TRUST=shared if it is shared on "
                   "purpose)",
                   path, why);
  return llvm::Error::success();
}

/// The error for an open of `name` that failed with `errnum`, saying "a
/// symbolic link" where O_NOFOLLOW refused one.
llvm::Error openFailure(const Dir &dir, llvm::StringRef name, int errnum, const char *what) {
  const std::string path = dir.pathOf(name);
  if (errnum == ELOOP || errnum == ENOTDIR || errnum == ENXIO) {
    if (auto st = statAt(dir, name))
      return refusal("{} is a {}: refused", path, typeName(st->st_mode));
  }
  return failure(path, what, errnum);
}

/// Names below a folder are single components: "a/b" would walk through
/// `a` without the checks, and ".." would leave the tree.
llvm::Error checkName(const Dir &dir, llvm::StringRef name) {
  if (name.empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0'))
    return refusal("'{}' is not a name of a file in {}", name.str(), dir.path());
  return llvm::Error::success();
}

} // namespace

Trust cacheTrust() {
  auto value = settings::read("MOEJIT_CACHE_TRUST");
  if (!value) {
    warnOnce("cache-trust", errorMessage(value.takeError()) + "; using owner");
    return Trust::Owner;
  }
  return *value == "shared" ? Trust::Shared : Trust::Owner;
}

std::string distrust(const struct stat &st, Trust trust) {
  if (trust == Trust::Shared)
    return {};
  const uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0)
    return fmt::format("it is owned by uid {}, not by uid {} (this process) or root", st.st_uid,
                       me);
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return fmt::format("it is writable by {} (mode {:04o})",
                       (st.st_mode & S_IWOTH) ? "others" : "its group", st.st_mode & 07777);
  return {};
}

Fd &Fd::operator=(Fd &&other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0)
    ::close(fd_);
}

int Fd::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

std::string Dir::pathOf(llvm::StringRef name) const { return path_ + "/" + name.str(); }

llvm::Expected<Dir> Dir::duplicate() const {
  const int fd = ::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0);
  if (fd < 0)
    return failure(path_, "duplicate the descriptor of", errno);
  return Dir(Fd(fd), path_, trust_);
}

llvm::Expected<std::optional<Dir>> openRoot(const std::string &path, Trust trust, bool create,
                                            RootLink link) {
  if (path.empty())
    return refusal("no folder given");
  const bool refuse_link = link == RootLink::Refuse;
  bool made = false;
  if (create) {
    struct stat st {};
    const int looked = refuse_link ? ::lstat(path.c_str(), &st) : ::stat(path.c_str(), &st);
    if (looked != 0 && errno == ENOENT) {
      const auto perms = trust == Trust::Owner ? llvm::sys::fs::owner_all : llvm::sys::fs::all_all;
      if (std::error_code ec = llvm::sys::fs::create_directories(path, true, perms))
        return failure(path, "create", ec.value());
      made = true;
    }
  }
  Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | (refuse_link ? O_NOFOLLOW : 0)));
  if (!fd.valid()) {
    if (errno == ENOENT && !create)
      return std::nullopt;
    struct stat st {};
    if (refuse_link && (errno == ELOOP || errno == ENOTDIR) && ::lstat(path.c_str(), &st) == 0)
      return refusal("{} is a {}: refused", path, typeName(st.st_mode));
    return failure(path, "open", errno);
  }
  if (made && trust == Trust::Owner)
    (void)::fchmod(fd.get(), kOwnerDirMode); // whatever the umask
  struct stat st {};
  if (llvm::Error e = checkOpened(fd.get(), path, trust, /*want_dir=*/true, st))
    return e;
  return Dir(std::move(fd), path, trust);
}

llvm::Expected<std::optional<Dir>> openSubdir(const Dir &parent, llvm::StringRef name,
                                              bool create) {
  if (llvm::Error e = checkName(parent, name))
    return e;
  const std::string n = name.str();
  bool made = false;
  if (create) {
    const mode_t mode = parent.trust() == Trust::Owner ? kOwnerDirMode : 0777;
    if (::mkdirat(parent.fd(), n.c_str(), mode) == 0)
      made = true;
    else if (errno != EEXIST)
      return failure(parent.pathOf(name), "create", errno);
  }
  Fd fd(::openat(parent.fd(), n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT && !create)
      return std::nullopt;
    return openFailure(parent, name, errno, "open");
  }
  if (made && parent.trust() == Trust::Owner)
    (void)::fchmod(fd.get(), kOwnerDirMode);
  struct stat st {};
  const std::string path = parent.pathOf(name);
  if (llvm::Error e = checkOpened(fd.get(), path, parent.trust(), /*want_dir=*/true, st))
    return e;
  return Dir(std::move(fd), path, parent.trust());
}

llvm::Expected<std::optional<Dir>> openSubdirs(const Dir &parent, llvm::ArrayRef<std::string> names,
                                               bool create) {
  auto at = parent.duplicate();
  if (!at)
    return at.takeError();
  std::optional<Dir> dir = std::move(*at);
  for (const std::string &name : names) {
    auto next = openSubdir(*dir, name, create);
    if (!next || !*next)
      return next;
    dir = std::move(*next);
  }
  return dir;
}

llvm::Expected<std::optional<OpenFile>> openFile(const Dir &dir, llvm::StringRef name, int flags,
                                                 uint64_t max_bytes) {
  if (llvm::Error e = checkName(dir, name))
    return e;
  const std::string n = name.str();
  const mode_t mode = dir.trust() == Trust::Owner ? kOwnerFileMode : 0666;
  OpenFile f;
  f.fd = Fd(::openat(dir.fd(), n.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode));
  if (!f.fd.valid()) {
    if (errno == ENOENT && !(flags & O_CREAT))
      return std::nullopt;
    return openFailure(dir, name, errno, "open");
  }
  const std::string path = dir.pathOf(name);
  if (llvm::Error e = checkOpened(f.fd.get(), path, dir.trust(), /*want_dir=*/false, f.st))
    return e;
  if ((flags & O_CREAT) && dir.trust() == Trust::Owner && f.st.st_uid == ::geteuid() &&
      (f.st.st_mode & 07777) != kOwnerFileMode)
    (void)::fchmod(f.fd.get(), kOwnerFileMode); // whatever the umask
  if (static_cast<uint64_t>(f.st.st_size) > max_bytes)
    return refusal("{} is {} bytes, over the limit of {}", path,
                   static_cast<uint64_t>(f.st.st_size), max_bytes);
  // Reads block from here on where they may (the flag was only for open).
  const int fl = ::fcntl(f.fd.get(), F_GETFL);
  if (fl >= 0)
    (void)::fcntl(f.fd.get(), F_SETFL, fl & ~O_NONBLOCK);
  return f;
}

bool readAll(int fd, uint64_t size, std::string &out) {
  out.resize(static_cast<size_t>(size));
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return false;
    if (n == 0)
      break;
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return true;
}

int writeAll(int fd, llvm::StringRef bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return n < 0 ? errno : EIO;
    done += static_cast<size_t>(n);
  }
  return 0;
}

llvm::Expected<std::optional<std::string>> readFile(const Dir &dir, llvm::StringRef name,
                                                    uint64_t max_bytes) {
  auto f = openFile(dir, name, O_RDONLY, max_bytes);
  if (!f)
    return f.takeError();
  if (!*f)
    return std::nullopt;
  std::string bytes;
  if (!readAll((*f)->fd.get(), static_cast<uint64_t>((*f)->st.st_size), bytes))
    return failure(dir.pathOf(name), "read", errno);
  return bytes;
}

std::optional<struct stat> statAt(const Dir &dir, llvm::StringRef name) {
  struct stat st {};
  if (::fstatat(dir.fd(), name.str().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return std::nullopt;
  return st;
}

bool namesFile(int fd, const Dir &dir, llvm::StringRef name) {
  struct stat open {};
  const std::optional<struct stat> named = statAt(dir, name);
  return named && ::fstat(fd, &open) == 0 && open.st_dev == named->st_dev &&
         open.st_ino == named->st_ino;
}

llvm::Expected<std::vector<Listed>> list(const Dir &dir) {
  const int fd = ::openat(dir.fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *stream = fd >= 0 ? ::fdopendir(fd) : nullptr;
  if (!stream) {
    const int saved = errno;
    if (fd >= 0)
      ::close(fd);
    return failure(dir.path(), "list", saved);
  }
  std::vector<Listed> out;
  errno = 0;
  while (const struct dirent *d = ::readdir(stream)) {
    const llvm::StringRef name(d->d_name);
    if (name == "." || name == "..")
      continue;
    if (auto st = statAt(dir, name))
      out.push_back({name.str(), *st});
    errno = 0;
  }
  const int saved = errno;
  ::closedir(stream);
  if (saved)
    return failure(dir.path(), "list", saved);
  std::sort(out.begin(), out.end(),
            [](const Listed &a, const Listed &b) { return a.name < b.name; });
  return out;
}

const char *typeName(mode_t mode) {
  if (S_ISLNK(mode))
    return "symbolic link";
  if (S_ISFIFO(mode))
    return "FIFO";
  if (S_ISSOCK(mode))
    return "socket";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "device";
  if (S_ISDIR(mode))
    return "directory";
  if (S_ISREG(mode))
    return "regular file";
  return "special file";
}

} // namespace moejit::safefs
