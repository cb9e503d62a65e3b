// Unit tests of ResolveDeviceView (arbiter/src/device_view.h): a registering process's devices
// matched with the arbiter's GPUs by UUID.
#include "device_view.h"

#include <gtest/gtest.h>

#include "gshare/shm/wire.h"

namespace gshare::arbiter {
namespace {

const Uuid kA{0xa}, kB{0xb}, kC{0xc};

std::vector<ManagedGpu> TwoGpus() { return {{DeviceOrdinal{0}, kA}, {DeviceOrdinal{1}, kB}}; }

TEST(DeviceView, EveryGpuAtItsOwnNumberIsNotConfined) {
  std::string why;
  const std::vector<Uuid> devices{kA, kB};
  const DeviceView v = ResolveDeviceView(devices, TwoGpus(), &why);
  EXPECT_TRUE(v.reported);
  EXPECT_FALSE(v.confined);
  EXPECT_EQ(v.device_gpus, (std::vector<uint32_t>{0, 1}));
  EXPECT_TRUE(v.Sees(GpuIndex{0}) && v.Sees(GpuIndex{1}));
  EXPECT_TRUE(why.empty());
}

TEST(DeviceView, OneGpuOrAnotherOrderIsConfinedToWhatItSees) {
  std::string why;
  const std::vector<Uuid> one{kB};
  const DeviceView v = ResolveDeviceView(one, TwoGpus(), &why);
  EXPECT_TRUE(v.confined);
  EXPECT_EQ(v.device_gpus, (std::vector<uint32_t>{1}));
  EXPECT_FALSE(v.Sees(GpuIndex{0}));
  EXPECT_TRUE(v.Sees(GpuIndex{1}));
  EXPECT_EQ(DescribeView(v), "device 0 is GPU 1");
  const std::vector<Uuid> reversed{kB, kA};
  const DeviceView r = ResolveDeviceView(reversed, TwoGpus(), &why);
  EXPECT_TRUE(r.confined);
  EXPECT_EQ(r.device_gpus, (std::vector<uint32_t>{1, 0}));
  EXPECT_TRUE(why.empty());
}

// An arbiter managing ordinals 1 and 3 of four GPUs: a process seeing all four in order is not
// confined; its unmanaged devices are kNoGpu.
TEST(DeviceView, UnmanagedDevicesAreNotGpus) {
  std::string why;
  const std::vector<ManagedGpu> managed{{DeviceOrdinal{1}, kB}, {DeviceOrdinal{3}, kC}};
  const std::vector<Uuid> devices{kA, kB, Uuid{0xd}, kC};
  const DeviceView v = ResolveDeviceView(devices, managed, &why);
  EXPECT_FALSE(v.confined);
  EXPECT_EQ(v.device_gpus, (std::vector<uint32_t>{shm::kNoGpu, 1, shm::kNoGpu, 3}));
  EXPECT_EQ(DescribeView(v), "device 0 is not managed, device 1 is GPU 1, device 2 is not managed, device 3 is GPU 3");
}

TEST(DeviceView, NoManagedGpuSeenIsWhy) {
  std::string why;
  const std::vector<Uuid> devices{kC, Uuid{}};
  const DeviceView v = ResolveDeviceView(devices, TwoGpus(), &why);
  EXPECT_TRUE(v.visible.empty());
  EXPECT_NE(why.find("none of the 2 GPU(s) this process's driver shows it is one this arbiter manages"),
            std::string::npos)
      << why;
}

// Not reported (an older shim, a tool) or an arbiter that does not know its GPUs' UUIDs (told
// gpu_memory, it never asks the driver): device d is GPU d, as before.
TEST(DeviceView, UnknownOnEitherSideIsTheIdentity) {
  std::string why;
  const DeviceView none = ResolveDeviceView({}, TwoGpus(), &why);
  EXPECT_FALSE(none.reported);
  EXPECT_TRUE(none.Sees(GpuIndex{1}));
  const std::vector<ManagedGpu> unknown{{DeviceOrdinal{0}, Uuid{}}, {DeviceOrdinal{1}, Uuid{}}};
  const std::vector<Uuid> devices{kB};
  const DeviceView v = ResolveDeviceView(devices, unknown, &why);
  EXPECT_FALSE(v.reported);
  EXPECT_FALSE(v.confined);
  EXPECT_TRUE(v.device_gpus.empty());
  EXPECT_TRUE(why.empty());
}

}  // namespace
}  // namespace gshare::arbiter
