// Which of the arbiter's GPUs a registering process can see, and as which of its own devices
// (docs/protocol.md, "Which GPU is which"). A process's driver numbers the GPUs it shows it from
// 0: with CUDA_VISIBLE_DEVICES=1, in a container given one GPU, or as a client of an MPS daemon
// started for one GPU, its device 0 is the arbiter's GPU 1. The registration names the process's
// devices by UUID; this matches them with the arbiter's GPUs. A process that does not see every
// managed GPU at its own ordinal is confined: the arbiter places it on a GPU it sees and never
// moves it (a move or a restore elsewhere would put its memory where its contexts cannot be).
// Pure functions; thread-compatible.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpu_ids.h"

namespace gshare::arbiter {

using Uuid = std::array<uint8_t, 16>;

struct DeviceView {
  // Whether the process named its devices and the arbiter knows its GPUs' UUIDs; when not, its
  // device d is taken to be GPU d, as before wire version 6.
  bool reported = false;
  std::vector<uint32_t> device_gpus;  // per device of the process: the GPU's ordinal, or kNoGpu
  std::vector<GpuIndex> visible;      // the managed GPUs it sees
  bool confined = false;              // some managed GPU is not its device of the same number
  // Whether it may be placed on (or is on) g.
  bool Sees(GpuIndex g) const;
};

struct ManagedGpu {
  DeviceOrdinal ordinal;
  Uuid uuid{};  // all 0: not known
};

// The view of a process whose devices have `uuids` (its order; empty: not reported) on an
// arbiter managing `gpus`. Sets `why` (and returns a view with nothing visible) when the process
// sees none of the managed GPUs.
DeviceView ResolveDeviceView(std::span<const Uuid> uuids, std::span<const ManagedGpu> gpus,
                             std::string* why);

// "0 → GPU 1, 1 → not managed": the view for logs and status.
std::string DescribeView(const DeviceView& view);

}  // namespace gshare::arbiter
