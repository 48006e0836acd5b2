// The CPU count that sizes the compile pool: cgroup quotas read from file
// trees laid out like /proc and /sys/fs/cgroup.
#include "common/cpus.h"

#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Threading.h>

#include <fstream>
#include <string>

using namespace moejit;

namespace {

/// A fresh directory standing for "/", removed with the fixture.
class FakeRoot : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("moejit-cpus", dir));
    root_ = std::string(dir);
  }
  void TearDown() override { llvm::sys::fs::remove_directories(root_); }

  /// Writes `text` to root/`path`, making its folders.
  void put(const std::string &path, const std::string &text) {
    const std::string full = root_ + path;
    ASSERT_FALSE(llvm::sys::fs::create_directories(llvm::sys::path::parent_path(full)));
    std::ofstream(full) << text;
  }
  /// A cgroup v2 machine: the process in `cgroup`, the hierarchy mounted at
  /// /sys/fs/cgroup showing `mount_root`.
  void v2(const std::string &cgroup, const std::string &mount_root = "/") {
    put("/proc/self/cgroup", "0::" + cgroup + "\n");
    put("/proc/self/mountinfo",
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
        "35 22 0:30 " +
            mount_root +
            " /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
            "rw,nsdelegate\n");
  }

  std::string root_;
};

TEST_F(FakeRoot, V2QuotaRoundsUpToWholeCpus) {
  v2("/kubepods/pod1/c1");
  put("/sys/fs/cgroup/kubepods/pod1/c1/cpu.max", "150000 100000\n");
  EXPECT_EQ(cgroupCpuLimit(root_), 2u);
  put("/sys/fs/cgroup/kubepods/pod1/c1/cpu.max", "50000 100000\n");
  EXPECT_EQ(cgroupCpuLimit(root_), 1u);
}

TEST_F(FakeRoot, V2TakesTheLowestOverTheAncestors) {
  v2("/kubepods/pod1/c1");
  put("/sys/fs/cgroup/kubepods/pod1/c1/cpu.max", "max 100000\n");
  put("/sys/fs/cgroup/kubepods/pod1/cpu.max", "300000 100000\n");
  put("/sys/fs/cgroup/kubepods/cpu.max", "800000 100000\n");
  EXPECT_EQ(cgroupCpuLimit(root_), 3u);
}

TEST_F(FakeRoot, V2WithoutAQuotaHasNoLimit) {
  v2("/user.slice");
  put("/sys/fs/cgroup/user.slice/cpu.max", "max 100000\n");
  EXPECT_EQ(cgroupCpuLimit(root_), std::nullopt);
}

TEST_F(FakeRoot, V2InsideAContainerReadsTheMountPoint) {
  // A cgroup namespace: the process sees itself at the root.
  v2("/");
  put("/sys/fs/cgroup/cpu.max", "400000 100000\n");
  EXPECT_EQ(cgroupCpuLimit(root_), 4u);
  // No namespace: the mount shows the container's cgroup as its root.
  v2("/docker/abc", "/docker/abc");
  EXPECT_EQ(cgroupCpuLimit(root_), 4u);
  // A path outside what the mount shows falls back to the mount point.
  v2("/elsewhere/x", "/docker/abc");
  EXPECT_EQ(cgroupCpuLimit(root_), 4u);
}

TEST_F(FakeRoot, V1ReadsTheCpuControllersQuota) {
  put("/proc/self/cgroup", "12:memory:/docker/abc\n"
                           "4:cpu,cpuacct:/docker/abc\n"
                           "1:name=systemd:/docker/abc\n");
  put("/proc/self/mountinfo",
      "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
      "30 25 0:26 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n"
      "31 25 0:27 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct\n");
  put("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "250000\n");
  put("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(cgroupCpuLimit(root_), 3u);
  put("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  EXPECT_EQ(cgroupCpuLimit(root_), std::nullopt);
}

TEST_F(FakeRoot, EscapedMountPointsAreUnescaped) {
  put("/proc/self/cgroup", "0::/\n");
  put("/proc/self/mountinfo", "35 22 0:30 / /sys/fs/cg\\040root rw - cgroup2 cgroup2 rw\n");
  put("/sys/fs/cg root/cpu.max", "200000 100000\n");
  EXPECT_EQ(cgroupCpuLimit(root_), 2u);
}

TEST_F(FakeRoot, UnreadableOrMalformedFilesGiveNoLimit) {
  EXPECT_EQ(cgroupCpuLimit(root_), std::nullopt); // no /proc at all
  v2("/a");
  EXPECT_EQ(cgroupCpuLimit(root_), std::nullopt); // no cpu.max
  for (const char *bad : {"", "200000", "abc 100000", "200000 0", "-5 100000", "1 2 3"}) {
    put("/sys/fs/cgroup/a/cpu.max", bad);
    EXPECT_EQ(cgroupCpuLimit(root_), std::nullopt) << "cpu.max: '" << bad << "'";
  }
  put("/proc/self/cgroup", "garbage\n::\n0:\n");
  EXPECT_EQ(cgroupCpuLimit(root_), std::nullopt);
  put("/proc/self/cgroup", "0::/a\n");
  put("/proc/self/mountinfo", "35 22 0:30 / /sys/fs/cgroup\n - \n- cgroup2\n");
  EXPECT_EQ(cgroupCpuLimit(root_), std::nullopt);
}

TEST(Cpus, UsableCpusIsAtLeastOneAndAtMostTheAffinityMask) {
  const unsigned cpus = usableCpus();
  EXPECT_GE(cpus, 1u);
  EXPECT_LE(cpus, std::max(1u, llvm::hardware_concurrency().compute_thread_count()));
  if (std::optional<unsigned> limit = cgroupCpuLimit())
    EXPECT_LE(cpus, std::max(1u, *limit));
}

} // namespace
