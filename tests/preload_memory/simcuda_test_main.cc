// main() for the vGPU memory tests on simcuda: a private simulated-device registry per test
// process (helpers it starts inherit it), two 512 MiB devices, a fast simulated clock, and the
// kernel plugin; the registry is removed at exit.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const std::string registry = "/gshare-pm-test-" + std::to_string(getpid());
  setenv("SIMCUDA_REGISTRY", registry.c_str(), 1);
  setenv("SIMCUDA_DEVICES", "2x512MiB:link_gbps=4", 1);
  setenv("SIMCUDA_TIME_SCALE", "0.001", 1);
  setenv("SIMCUDA_KERNELS", SIMCUDA_KERNELS_PLUGIN, 1);
  const int rc = RUN_ALL_TESTS();
  shm_unlink(registry.c_str());
  return rc;
}
