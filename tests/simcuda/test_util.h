// Shared helpers for simcuda's tests: CUresult assertions, a fixture with a current primary
// context, and running the helper program (simcuda_test_helper) as a child process.
#ifndef TESTS_SIMCUDA_TEST_UTIL_H_
#define TESTS_SIMCUDA_TEST_UTIL_H_

#include <cuda.h>
#include <gtest/gtest.h>
#include <sys/types.h>

#include <future>
#include <string>
#include <vector>

namespace simcuda_test {

inline std::string CuName(CUresult r) {
  const char* name = nullptr;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == nullptr) return std::to_string(static_cast<int>(r));
  return name;
}

#define ASSERT_CU(expr) ASSERT_EQ(simcuda_test::CuName(expr), "CUDA_SUCCESS") << #expr
#define EXPECT_CU(expr) EXPECT_EQ(simcuda_test::CuName(expr), "CUDA_SUCCESS") << #expr
#define EXPECT_CU_ERR(expr, code) EXPECT_EQ(simcuda_test::CuName(expr), simcuda_test::CuName(code)) << #expr

// cuInit + primary context of device 0 made current; released in TearDown.
class DriverTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  CUcontext ctx_ = nullptr;
  CUdevice dev_ = 0;
};

// A host function that holds a stream until Open(): work queued behind it waits.
// Open() must be called before the gate is destroyed (the stream's worker waits on it).
class StreamGate {
 public:
  // Queues the gate on `stream`.
  CUresult Close(CUstream stream) { return cuLaunchHostFunc(stream, &StreamGate::Wait, this); }
  void Open() { promise_.set_value(); }

 private:
  static void CUDA_CB Wait(void* self) { static_cast<StreamGate*>(self)->opened_.wait(); }
  std::promise<void> promise_;
  std::shared_future<void> opened_ = promise_.get_future().share();
};

// VMM: the properties of pinned physical memory on `device`, and read-write access for it.
inline CUmemAllocationProp PinnedOn(int device) {
  CUmemAllocationProp p{};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = device;
  return p;
}
inline CUmemAccessDesc ReadWriteOn(int device) {
  CUmemAccessDesc d{};
  d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  d.location.id = device;
  d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return d;
}

// Free memory of `device` as cuMemGetInfo reports it (through its primary context).
size_t FreeOn(int device);

// A running helper process whose stdout is readable line by line.
struct Child {
  pid_t pid = -1;
  int out_fd = -1;
  // Reads one line (without '\n'); empty on EOF.
  std::string ReadLine();
  // Waits for exit; returns the raw wait status.
  int Wait();
  void Kill(int sig);
};

// Starts the program `path` with `args` (environment inherited, plus `extra_env` "K=V" pairs).
Child SpawnProgram(const std::string& path, const std::vector<std::string>& args,
                   const std::vector<std::string>& extra_env = {});
// Starts simcuda_test_helper with `args` (environment inherited, plus `extra_env` "K=V" pairs).
Child SpawnHelper(const std::vector<std::string>& args, const std::vector<std::string>& extra_env = {});
// Runs the helper to completion; returns its exit code (or 128 + signal).
int RunHelper(const std::vector<std::string>& args, const std::vector<std::string>& extra_env = {});

}  // namespace simcuda_test

#endif  // TESTS_SIMCUDA_TEST_UTIL_H_
