// Unit tests of the shared device registry: capacity accounting, timelines, reclamation.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "registry.h"
#include "registry_layout.h"

namespace simcuda {
namespace {

class RegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    name_ = "/simcuda-regtest-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    shm_unlink(name_.c_str());
  }
  void TearDown() override { shm_unlink(name_.c_str()); }
  std::string name_;
};

TEST_F(RegistryTest, ReservesUpToCapacity) {
  std::string error;
  auto reg = Registry::Open(name_, {1000, 500}, 1.0, &error);
  ASSERT_TRUE(reg) << error;
  EXPECT_EQ(reg->device_count(), 2);
  EXPECT_TRUE(reg->Reserve(0, 600));
  EXPECT_TRUE(reg->Reserve(0, 400));
  EXPECT_FALSE(reg->Reserve(0, 1));
  EXPECT_TRUE(reg->Reserve(1, 500));
  EXPECT_EQ(reg->Used(0), 1000u);
  reg->Release(0, 400);
  EXPECT_EQ(reg->Used(0), 600u);
  EXPECT_EQ(reg->UsedByThisProcess(0), 600u);
}

TEST_F(RegistryTest, SecondOpenSharesTheCreatorsCapacity) {
  std::string error;
  auto a = Registry::Open(name_, {1000}, 1.0, &error);
  ASSERT_TRUE(a) << error;
  auto b = Registry::Open(name_, {5}, 1.0, &error);
  ASSERT_TRUE(b) << error;
  EXPECT_EQ(b->Capacity(0), 1000u);
  EXPECT_TRUE(a->Reserve(0, 700));
  EXPECT_FALSE(b->Reserve(0, 400));
  EXPECT_TRUE(b->Reserve(0, 300));
}

TEST_F(RegistryTest, AnIdleRegistryTakesTheNewConfiguration) {
  std::string error;
  {
    auto a = Registry::Open(name_, {1000}, 1.0, &error);
    ASSERT_TRUE(a) << error;
    EXPECT_TRUE(a->Reserve(0, 600));
    a->Detach();  // as at process exit
  }
  auto b = Registry::Open(name_, {2000, 3000}, 0.5, &error);
  ASSERT_TRUE(b) << error;
  EXPECT_EQ(b->device_count(), 2);
  EXPECT_EQ(b->Capacity(1), 3000u);
  EXPECT_EQ(b->time_scale(), 0.5);
  EXPECT_EQ(b->Used(0), 0u);
  auto c = Registry::Open(name_, {5}, 2.0, &error);  // b is attached: b's values stay
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->Capacity(0), 2000u);
  EXPECT_EQ(c->time_scale(), 0.5);
}

TEST_F(RegistryTest, TimelineIntervalsDoNotOverlap) {
  std::string error;
  auto reg = Registry::Open(name_, {1000}, 1.0, &error);
  ASSERT_TRUE(reg) << error;
  SimInterval a = reg->ReserveInterval(0, kComputeTimeline, 100, 50);
  SimInterval b = reg->ReserveInterval(0, kComputeTimeline, 100, 50);
  SimInterval c = reg->ReserveInterval(0, kComputeTimeline, 1000, 10);
  EXPECT_EQ(a.start_ns, 100u);
  EXPECT_EQ(a.end_ns, 150u);
  EXPECT_EQ(b.start_ns, 150u);
  EXPECT_EQ(c.start_ns, 1000u);
  SimInterval link = reg->ReserveInterval(0, kHostToDeviceTimeline, 100, 5);
  EXPECT_EQ(link.start_ns, 100u);  // separate timeline
}

TEST_F(RegistryTest, DeadProcessIsReclaimed) {
  std::string error;
  auto reg = Registry::Open(name_, {1000}, 1.0, &error);
  ASSERT_TRUE(reg) << error;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t pid = fork();
  if (pid == 0) {
    std::string e;
    auto child = Registry::Open(name_, {1000}, 1.0, &e);
    bool ok = child && child->Reserve(0, 800);
    char c = ok ? 'y' : 'n';
    ssize_t w = write(ready[1], &c, 1);
    (void)w;
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  EXPECT_FALSE(reg->Reserve(0, 500));
  EXPECT_EQ(reg->ReclaimDead(), 0);  // still alive
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_TRUE(reg->Reserve(0, 500));  // reclaims on shortage
  EXPECT_EQ(reg->Used(0), 500u);
  close(ready[0]);
  close(ready[1]);
}

// Liveness is the kernel's lock on the owner's own open file description: a process killed while
// a child it forked lives on (the child dropped its inherited descriptor, as the driver's fork
// handler does) is dead, and its memory comes back.
TEST_F(RegistryTest, KilledParentOfALiveForkedChildIsReclaimed) {
  std::string error;
  auto reg = Registry::Open(name_, {1000}, 1.0, &error);
  ASSERT_TRUE(reg) << error;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t parent = fork();
  if (parent == 0) {
    std::string e;
    auto mine = Registry::Open(name_, {1000}, 1.0, &e);
    bool ok = mine && mine->Reserve(0, 800);
    pid_t child = fork();
    if (child == 0) {
      mine->ForgetParentAfterFork();
      const int report = ok ? static_cast<int>(getpid()) : -1;
      ssize_t w = write(ready[1], &report, sizeof report);
      (void)w;
      pause();
      _exit(0);
    }
    pause();
    _exit(0);
  }
  int child = 0;
  ASSERT_EQ(read(ready[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
  ASSERT_GT(child, 0);
  EXPECT_EQ(reg->ReclaimDead(), 0);  // alive
  kill(parent, SIGKILL);
  waitpid(parent, nullptr, 0);
  EXPECT_EQ(kill(child, 0), 0);
  EXPECT_EQ(reg->ReclaimDead(), 1);  // its child still runs, holding nothing of it
  EXPECT_EQ(reg->Used(0), 0u);
  kill(child, SIGKILL);
  close(ready[0]);
  close(ready[1]);
}

TEST(ProcessStartTimeTest, KnowsLiveAndDeadProcesses) {
  EXPECT_NE(ProcessStartTime(getpid()), 0u);
  EXPECT_EQ(ProcessStartTime(0x7ffffff0), 0u);
}

// A registry of another layout version (an older simcuda build's) is refused, naming both.
TEST_F(RegistryTest, RefusesAnotherLayoutVersion) {
  std::string error;
  {
    auto reg = Registry::Open(name_, {1000}, 1.0, &error);
    ASSERT_NE(reg, nullptr) << error;
  }
  const int fd = shm_open(name_.c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  void* mem = mmap(nullptr, sizeof(Registry::Shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  ASSERT_NE(mem, MAP_FAILED);
  auto* shared = static_cast<Registry::Shared*>(mem);
  shared->version = kRegistryVersion - 1;
  EXPECT_EQ(Registry::Open(name_, {1000}, 1.0, &error), nullptr);
  EXPECT_NE(error.find("layout version " + std::to_string(kRegistryVersion - 1)), std::string::npos)
      << error;
  shared->version = kRegistryVersion;
  munmap(mem, sizeof(Registry::Shared));
}

}  // namespace
}  // namespace simcuda
