// main() for simcuda's driver tests: gives this test process (and the helpers it starts) a
// private simulated-device registry, a fast simulated clock and the kernel set, and removes the registry at exit.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  std::string registry = "/simcuda-test-" + std::to_string(getpid());
  setenv("SIMCUDA_REGISTRY", registry.c_str(), 1);
  setenv("SIMCUDA_DEVICES", "2x1GiB:link_gbps=4", 0);
  setenv("SIMCUDA_TIME_SCALE", "0.01", 0);
  setenv("SIMCUDA_KERNELS", SIMCUDA_TEST_KERNELS, 0);
  int rc = RUN_ALL_TESTS();
  shm_unlink(registry.c_str());
  return rc;
}
