// The devices gshare-device-plugin advertises, derived from the arbiter's status: each GPU the
// arbiter manages offers floor(usable bytes x overcommit / unit) devices named gpu<ordinal>-<k>,
// healthy unless the GPU is drained, gone from the arbiter's list (lost), or the arbiter cannot
// be reached. Pure logic: fed status replies (or the failure to get one), it says whether the
// list kubelet has seen must be sent again.
// Thread-safety: none; ArbiterMonitor owns one and publishes copies of its snapshot.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gshare/shm/status.h"

namespace gshare::deviceplugin {

inline constexpr const char* kHealthy = "Healthy";
inline constexpr const char* kUnhealthy = "Unhealthy";

struct GpuSlot {
  uint32_t ordinal = 0;
  uint64_t usable_bytes = 0;
  uint32_t units = 0;
  bool drained = false;
  bool present = true;  // false: the arbiter no longer lists it (lost)
  bool healthy() const { return present && !drained; }
};

struct Device {
  std::string id;
  bool healthy = false;
  bool operator==(const Device&) const = default;
};

// One consistent view: the GPUs, whether the arbiter answered, and why devices are unhealthy.
struct Snapshot {
  bool arbiter_reachable = false;
  std::string problem;  // why the arbiter's state is unknown ("" while it answers)
  std::map<uint32_t, GpuSlot> gpus;
  uint64_t unit_bytes = 0;

  std::vector<Device> Devices() const;
  // The usable memory of the largest healthy GPU (a vGPU lives on one GPU); 0 if none.
  uint64_t LargestHealthyGpuBytes() const;
  const GpuSlot* Find(uint32_t ordinal) const;
};

// "gpu3-17" for GPU 3's unit 17.
std::string DeviceId(uint32_t ordinal, uint32_t unit);
struct DeviceRef {
  uint32_t ordinal = 0;
  uint32_t unit = 0;
};
// The inverse of DeviceId; nullopt for anything else.
std::optional<DeviceRef> ParseDeviceId(const std::string& id);

class Inventory {
 public:
  Inventory(uint64_t unit_bytes, double overcommit);

  // A status reply of the arbiter's control socket ({"cmd":"status"}). Returns true when the
  // device list (ids or health) changed. A reply that is an error or lacks the GPU fields
  // counts as unreachable, with a problem naming what is wrong.
  bool Update(const shm::Result<nlohmann::json>& status);

  const Snapshot& snapshot() const { return snapshot_; }

 private:
  bool MarkUnreachable(std::string problem);

  uint64_t unit_bytes_;
  double overcommit_;
  Snapshot snapshot_;
};

}  // namespace gshare::deviceplugin
