// hooks/device_view.h: which CUdevice values name the application's one device — ordinal 0, the
// GPU the vGPU lives on, or a GPU it lived on before a move (a handle the application still
// holds) — and which are refused.
#include "hooks/device_view.h"

#include <gtest/gtest.h>

namespace gshare::preload {
namespace {

// One test: the devices seen are process-wide state (one atomic word).
TEST(DeviceView, OrdinalZeroTheCurrentGpuAndGpusItWasOnBeforeAMove) {
  // The vGPU lives on GPU 1: 0 and 1 name it, 2 and 3 do not, nor negative or huge values.
  EXPECT_TRUE(NamesAppDevice(0, 1));
  EXPECT_TRUE(NamesAppDevice(1, 1));
  EXPECT_FALSE(NamesAppDevice(2, 1));
  EXPECT_FALSE(NamesAppDevice(3, 1));
  EXPECT_FALSE(NamesAppDevice(-1, 1));
  EXPECT_FALSE(NamesAppDevice(64, 1));
  // Moved to GPU 3: the handle of GPU 1 the application kept still names its device; GPU 2,
  // where it never was, does not.
  EXPECT_TRUE(NamesAppDevice(1, 3));
  EXPECT_TRUE(NamesAppDevice(3, 3));
  EXPECT_TRUE(NamesAppDevice(0, 3));
  EXPECT_FALSE(NamesAppDevice(2, 3));
  // A GPU above 63 is never remembered (one bit per ordinal), but is accepted while current.
  EXPECT_TRUE(NamesAppDevice(70, 70));
  EXPECT_FALSE(NamesAppDevice(70, 3));
}

}  // namespace
}  // namespace gshare::preload
