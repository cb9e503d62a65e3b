// What gshare-device-plugin answers kubelet's GetPreferredAllocation and Allocate with, as pure
// functions of the current Snapshot (inventory.h), so both are tested without sockets.
//
// Units are admission tokens, not places: the arbiter decides which GPU a vGPU lives on (and
// moves it), so units of several GPUs may serve one container. What cannot be served is a
// quota larger than the largest healthy GPU, since a vGPU is resident on one GPU at a time.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cdi_edits.h"
#include "config.h"
#include "inventory.h"

namespace gshare::deviceplugin {

// Chooses `size` ids out of `available`, including every id of `must_include`: units of one
// GPU when one GPU has enough (the GPU with the fewest such units, so large blocks stay free
// for large requests), otherwise the GPUs with the most units first. Ids kubelet offers that
// the plugin does not know are never chosen. Deterministic. Errors: size < must_include's
// count, or more units asked than offered.
shm::Result<std::vector<std::string>> PreferredAllocation(const Snapshot& snapshot,
                                                          const std::vector<std::string>& available,
                                                          const std::vector<std::string>& must_include,
                                                          int size);

// One container's grant: its quota and where its units are.
struct Grant {
  uint64_t quota_bytes = 0;
  uint32_t units = 0;
  std::map<uint32_t, uint32_t> units_per_gpu;
};

// Checks the ids kubelet allocated to one container and turns them into a quota. Errors, each
// naming the id or the sizes: no ids, an id twice, an id that is not one of this plugin's
// devices, the arbiter unreachable (its problem), a quota no healthy GPU can hold.
shm::Result<Grant> GrantFor(const Snapshot& snapshot, const std::vector<std::string>& ids);

// The container's environment and mounts for `grant`: GSHARE_VGPU_MEMORY always; with the env
// strategy (or both) also the CDI device's env and mounts from `edits`.
struct ContainerEdits {
  std::map<std::string, std::string> envs;
  std::vector<CdiMount> mounts;
  std::vector<std::string> cdi_devices;
  std::map<std::string, std::string> annotations;
};
ContainerEdits EditsFor(const PluginConfig& config, const Grant& grant, const CdiEdits* edits);

// "1536MiB": the quota as GSHARE_VGPU_MEMORY takes it (the unit is a whole number of MiB).
std::string QuotaText(uint64_t bytes);

}  // namespace gshare::deviceplugin
