// How many CPUs this process may keep busy: what sizes the NVRTC compile
// pool. The affinity mask alone overstates it in a container whose CPU time
// is capped by a cgroup quota (Kubernetes CPU limits, `docker --cpus`): a
// 2-CPU pod on a 128-core node sees 128 CPUs, and 128 compiles at once would
// take 128 x ~65 MB for no gain in time.
#pragma once

#include <optional>
#include <string>

namespace moejit {

/// The CPU quota of this process's cgroups, rounded up to whole CPUs: the
/// lowest over its cgroup and the cgroup's ancestors (v2 `cpu.max`, or v1
/// `cpu.cfs_quota_us` / `cpu.cfs_period_us` of the hierarchy holding the
/// cpu controller). nullopt where none is set or none can be read.
/// `fs_root`: "" for this machine; tests give a directory laid out like it
/// (`proc/self/cgroup`, `proc/self/mountinfo`, the mount points under it).
std::optional<unsigned> cgroupCpuLimit(const std::string &fs_root = "");

/// The CPUs of the affinity mask, lowered to cgroupCpuLimit(); at least 1.
unsigned usableCpus();

} // namespace moejit
