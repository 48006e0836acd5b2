#include "common/cpus.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Threading.h>

#include <algorithm>
#include <fstream>
#include <iterator>

namespace moejit {
namespace {

/// The text of a small kernel-made file (/proc and /sys report no size, so
/// it is read to its end), at most `cap` bytes; nullopt if it cannot be read.
std::optional<std::string> readSmallFile(const std::string &path, size_t cap) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::string text(cap, '\0');
  in.read(text.data(), static_cast<std::streamsize>(cap));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

/// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescapeMountField(llvm::StringRef field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      unsigned value = 0;
      if (!field.substr(i + 1, 3).getAsInteger(8, value) && value < 256) {
        out.push_back(static_cast<char>(value));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

struct Mount {
  std::string root;  ///< the cgroup this mount shows at its mount point
  std::string point; ///< where it is mounted
};

/// The mount of the cgroup hierarchy: fstype "cgroup2" for v2, or "cgroup"
/// with `controller` among its super options for v1.
std::optional<Mount> findMount(llvm::StringRef mountinfo, llvm::StringRef fstype,
                               llvm::StringRef controller) {
  llvm::SmallVector<llvm::StringRef, 16> lines;
  mountinfo.split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    // ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
    auto [before, after] = line.split(" - ");
    llvm::SmallVector<llvm::StringRef, 12> head, tail;
    before.split(head, ' ', -1, false);
    after.split(tail, ' ', -1, false);
    if (head.size() < 5 || tail.size() < 3 || tail[0] != fstype)
      continue;
    if (!controller.empty()) {
      llvm::SmallVector<llvm::StringRef, 8> options;
      tail[2].split(options, ',');
      if (std::find(options.begin(), options.end(), controller) == options.end())
        continue;
    }
    return Mount{unescapeMountField(head[3]), unescapeMountField(head[4])};
  }
  return std::nullopt;
}

/// The directory of `cgroup` under `mount`: its path below the mount's
/// root. A cgroup outside what the mount shows (a container without its own
/// cgroup namespace) reads as the mount point itself.
std::string cgroupDir(const std::string &fs_root, const Mount &mount, llvm::StringRef cgroup) {
  llvm::StringRef rel = cgroup;
  llvm::StringRef root = mount.root == "/" ? "" : llvm::StringRef(mount.root);
  if (!root.empty()) {
    if (rel == root || rel.startswith(root.str() + "/"))
      rel = rel.drop_front(root.size());
    else
      rel = "";
  }
  return fs_root + mount.point + (rel == "/" ? "" : rel.str());
}

/// Whole CPUs of `quota` microseconds per `period`, rounded up.
std::optional<unsigned> wholeCpus(long long quota, long long period) {
  if (quota <= 0 || period <= 0)
    return std::nullopt;
  const long long cpus = (quota + period - 1) / period;
  return static_cast<unsigned>(std::min<long long>(cpus, 1 << 20));
}

/// One number of a cgroup file; nullopt when absent or not a number.
std::optional<long long> readNumber(const std::string &path) {
  std::optional<std::string> text = readSmallFile(path, 256);
  long long value = 0;
  if (!text || llvm::StringRef(*text).trim().getAsInteger(10, value))
    return std::nullopt;
  return value;
}

/// The limit of one cgroup directory: v2 `cpu.max` ("QUOTA PERIOD" or
/// "max PERIOD"), v1 the quota and period files (quota -1: none).
std::optional<unsigned> dirLimit(const std::string &dir, bool v2) {
  if (v2) {
    std::optional<std::string> text = readSmallFile(dir + "/cpu.max", 256);
    if (!text)
      return std::nullopt;
    auto [quota, period] = llvm::StringRef(*text).trim().split(' ');
    long long q = 0, p = 0;
    if (quota.getAsInteger(10, q) || period.trim().getAsInteger(10, p))
      return std::nullopt; // "max", or not numbers
    return wholeCpus(q, p);
  }
  std::optional<long long> quota = readNumber(dir + "/cpu.cfs_quota_us");
  std::optional<long long> period = readNumber(dir + "/cpu.cfs_period_us");
  if (!quota || !period)
    return std::nullopt;
  return wholeCpus(*quota, *period);
}

/// The lowest limit from `dir` up to the mount point `top`.
std::optional<unsigned> lowestLimit(std::string dir, const std::string &top, bool v2) {
  std::optional<unsigned> lowest;
  while (true) {
    if (std::optional<unsigned> l = dirLimit(dir, v2))
      lowest = lowest ? std::min(*lowest, *l) : *l;
    if (dir.size() <= top.size())
      return lowest;
    const size_t slash = dir.rfind('/');
    if (slash == std::string::npos || slash < top.size())
      dir = top;
    else
      dir.resize(slash);
  }
}

} // namespace

std::optional<unsigned> cgroupCpuLimit(const std::string &fs_root) {
  std::optional<std::string> cgroups = readSmallFile(fs_root + "/proc/self/cgroup", 64 << 10);
  std::optional<std::string> mountinfo = readSmallFile(fs_root + "/proc/self/mountinfo", 4 << 20);
  if (!cgroups || !mountinfo)
    return std::nullopt;
  std::optional<unsigned> lowest;
  llvm::SmallVector<llvm::StringRef, 16> lines;
  llvm::StringRef(*cgroups).split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    // ID:CONTROLLERS:PATH; v2's is "0::PATH".
    auto [id, rest] = line.split(':');
    auto [controllers, path] = rest.split(':');
    if (!path.startswith("/"))
      continue;
    const bool v2 = id == "0" && controllers.empty();
    if (!v2) {
      llvm::SmallVector<llvm::StringRef, 8> names;
      controllers.split(names, ',');
      if (std::find(names.begin(), names.end(), "cpu") == names.end())
        continue;
    }
    std::optional<Mount> mount = findMount(*mountinfo, v2 ? "cgroup2" : "cgroup", v2 ? "" : "cpu");
    if (!mount)
      continue;
    const std::string top = fs_root + mount->point;
    if (std::optional<unsigned> l = lowestLimit(cgroupDir(fs_root, *mount, path), top, v2))
      lowest = lowest ? std::min(*lowest, *l) : *l;
  }
  return lowest;
}

unsigned usableCpus() {
  // compute_thread_count() of the default strategy: the affinity mask.
  unsigned cpus = std::max(1u, llvm::hardware_concurrency().compute_thread_count());
  if (std::optional<unsigned> limit = cgroupCpuLimit())
    cpus = std::min(cpus, std::max(1u, *limit));
  return cpus;
}

} // namespace moejit
