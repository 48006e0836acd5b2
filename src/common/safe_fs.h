// File access inside a tree that may hold hostile files (the cache root,
// the folder of kept failed-compile sources). Below the starting folder
// every step goes through a directory descriptor with O_NOFOLLOW, so nothing
// is read, created or removed through a symbolic link; files are opened with
// O_NONBLOCK and must be regular files, so a FIFO never blocks; and every
// folder and file met is checked against the trust rule below, the way
// OpenSSH's StrictModes checks a key file.
//
// Trust rule (Trust::Owner, the default): a folder or file is trusted when
// it is owned by the effective user, or by root, and is writable by neither
// its group nor others. A root-owned tree is thereby usable for reading by
// everyone (a system-wide warmed cache); writes to it simply fail.
// Trust::Shared (MOEJIT_CACHE_TRUST=shared) is the operator saying the tree
// is shared on purpose: owner and mode are not checked, and new folders and
// files follow the umask; links and special files are still refused.
//
// Every error is InvalidArgument with a message naming the path; errno is
// left at the failing call's error number, or 0 for a refusal (a link, a
// special file, an untrusted or oversized file), so callers can tell a full
// disk from a hostile tree.
#pragma once

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include <cstdint>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace moejit::safefs {

enum class Trust { Owner, Shared };
/// Whether openRoot follows a link that is the path's last component.
enum class RootLink { Follow, Refuse };

/// MOEJIT_CACHE_TRUST: `owner` (default) or `shared`; a bad value is warned
/// about once and read as `owner`.
Trust cacheTrust();

/// Why a folder or file with this status is not trusted; empty when it is.
std::string distrust(const struct stat &st, Trust trust);

/// An open file descriptor, closed on destruction.
class Fd {
public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd &&other) noexcept : fd_(other.release()) {}
  Fd &operator=(Fd &&other) noexcept;
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  ~Fd();
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();

private:
  int fd_ = -1;
};

/// An open folder, the path it was reached by (for messages) and the trust
/// mode it was checked under (inherited by everything opened below it).
class Dir {
public:
  int fd() const { return fd_.get(); }
  const std::string &path() const { return path_; }
  Trust trust() const { return trust_; }
  /// "<path>/<name>", for messages.
  std::string pathOf(llvm::StringRef name) const;
  /// A second descriptor of the same folder.
  llvm::Expected<Dir> duplicate() const;

private:
  friend llvm::Expected<std::optional<Dir>> openRoot(const std::string &, Trust, bool, RootLink);
  friend llvm::Expected<std::optional<Dir>> openSubdir(const Dir &, llvm::StringRef, bool);
  Dir(Fd fd, std::string path, Trust trust)
      : fd_(std::move(fd)), path_(std::move(path)), trust_(trust) {}
  Fd fd_;
  std::string path_;
  Trust trust_ = Trust::Owner;
};

/// Opens the folder at `path`. Links in `path` are the operator's choice and
/// are followed, the last component's too unless `link` is Refuse (a
/// folder of the library's own making in a shared place such as /tmp,
/// where another user could plant a link). nullopt when it does not exist
/// and `create` is false; with `create`, missing folders are made (0700
/// under Owner). An error saying why when it is not a folder, a refused
/// link, or not trusted.
llvm::Expected<std::optional<Dir>> openRoot(const std::string &path, Trust trust, bool create,
                                            RootLink link = RootLink::Follow);
/// Opens the folder `name` in `parent` without following a link. nullopt
/// when missing and not `create`; an error for a link, a non-folder, an
/// untrusted folder, or one that cannot be made.
llvm::Expected<std::optional<Dir>> openSubdir(const Dir &parent, llvm::StringRef name, bool create);
/// openSubdir along `names`, one folder per step.
llvm::Expected<std::optional<Dir>> openSubdirs(const Dir &parent, llvm::ArrayRef<std::string> names,
                                               bool create);

struct OpenFile {
  Fd fd;
  struct stat st {};
};

/// Opens the regular file `name` in `dir` with O_NOFOLLOW | O_NONBLOCK |
/// O_CLOEXEC and `flags` (O_RDONLY, O_RDWR, optionally O_CREAT/O_EXCL; new
/// files are 0600 under Owner). nullopt when it does not exist (without
/// O_CREAT). An error for a link, a special file, an untrusted file, or one
/// larger than `max_bytes`.
llvm::Expected<std::optional<OpenFile>> openFile(const Dir &dir, llvm::StringRef name, int flags,
                                                 uint64_t max_bytes);
/// The whole regular file `name` in `dir`, at most `max_bytes` (a larger
/// file is an error, read no further than its size); nullopt when missing.
llvm::Expected<std::optional<std::string>> readFile(const Dir &dir, llvm::StringRef name,
                                                    uint64_t max_bytes);
/// Reads `fd` from the start up to `size` bytes (fewer on a short file).
bool readAll(int fd, uint64_t size, std::string &out);
/// Writes all of `bytes` at the file offset; 0, or the errno of the failure.
int writeAll(int fd, llvm::StringRef bytes);
/// For openFile where the size does not matter (files being created).
inline constexpr uint64_t kAnySize = ~uint64_t{0};

/// lstat of `name` in `dir`; nullopt when it is gone.
std::optional<struct stat> statAt(const Dir &dir, llvm::StringRef name);
/// Whether `fd` is the file `name` names in `dir` now (no link followed).
bool namesFile(int fd, const Dir &dir, llvm::StringRef name);

/// One name in a folder, with its lstat.
struct Listed {
  std::string name;
  struct stat st {};
};
/// The entries of `dir` except . and .., sorted by name; entries that vanish
/// while listed are left out.
llvm::Expected<std::vector<Listed>> list(const Dir &dir);

/// "symbolic link", "FIFO", "socket", "device", "directory", "regular file".
const char *typeName(mode_t mode);

} // namespace moejit::safefs
