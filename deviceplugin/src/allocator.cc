// PreferredAllocation, GrantFor and EditsFor (allocator.h).
#include "allocator.h"

#include <algorithm>
#include <set>

#include "gshare/common/units.h"

namespace gshare::deviceplugin {
namespace {

shm::Status Invalid(std::string message) {
  return shm::Status(shm::StatusCode::kInvalidArgument, std::move(message));
}

}  // namespace

shm::Result<std::vector<std::string>> PreferredAllocation(const Snapshot& snapshot,
                                                          const std::vector<std::string>& available,
                                                          const std::vector<std::string>& must_include,
                                                          int size) {
  if (size < 0) return Invalid("allocation_size " + std::to_string(size) + " is negative");
  if (static_cast<size_t>(size) < must_include.size())
    return Invalid("allocation_size " + std::to_string(size) + " is smaller than the " +
                   std::to_string(must_include.size()) + " devices that must be included");
  std::vector<std::string> chosen;
  std::set<std::string> taken;
  std::map<uint32_t, uint32_t> must_per_gpu;
  for (const auto& id : must_include) {
    if (!taken.insert(id).second) continue;
    chosen.push_back(id);
    if (auto ref = ParseDeviceId(id)) ++must_per_gpu[ref->ordinal];
  }
  // The remaining offered units of known devices, by GPU, in unit order.
  std::map<uint32_t, std::vector<std::pair<uint32_t, std::string>>> by_gpu;
  for (const auto& id : available) {
    if (taken.contains(id)) continue;
    const auto ref = ParseDeviceId(id);
    const GpuSlot* gpu = ref ? snapshot.Find(ref->ordinal) : nullptr;
    if (gpu == nullptr || ref->unit >= gpu->units) continue;
    by_gpu[ref->ordinal].emplace_back(ref->unit, id);
  }
  for (auto& [g, units] : by_gpu) {
    std::sort(units.begin(), units.end());
    units.erase(std::unique(units.begin(), units.end()), units.end());
  }
  size_t need = static_cast<size_t>(size) - chosen.size();
  size_t offered = 0;
  for (const auto& [g, units] : by_gpu) offered += units.size();
  if (offered < need)
    return Invalid("allocation_size " + std::to_string(size) + " but only " +
                   std::to_string(offered + chosen.size()) + " of this plugin's devices offered");
  // GPUs in the order they are used: the one that already holds required units, then the
  // smallest block that fits the rest, then the largest blocks first.
  std::vector<uint32_t> order;
  for (const auto& [g, units] : by_gpu) order.push_back(g);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const size_t na = by_gpu[a].size(), nb = by_gpu[b].size();
    const bool fa = na >= need, fb = nb >= need;
    const uint32_t ma = must_per_gpu.contains(a) ? must_per_gpu[a] : 0;
    const uint32_t mb = must_per_gpu.contains(b) ? must_per_gpu[b] : 0;
    if (ma != mb) return ma > mb;
    if (fa != fb) return fa;
    if (fa) return na != nb ? na < nb : a < b;
    return na != nb ? na > nb : a < b;
  });
  for (uint32_t g : order) {
    for (const auto& [unit, id] : by_gpu[g]) {
      if (need == 0) break;
      chosen.push_back(id);
      --need;
    }
  }
  return chosen;
}

shm::Result<Grant> GrantFor(const Snapshot& snapshot, const std::vector<std::string>& ids) {
  if (ids.empty()) return Invalid("no device ids in the container's request");
  std::set<std::string> seen;
  Grant grant;
  for (const auto& id : ids) {
    if (!seen.insert(id).second) return Invalid("device id '" + id + "' is requested twice");
    const auto ref = ParseDeviceId(id);
    if (!ref)
      return Invalid("'" + id + "' is not a gshare device id (gpu<ordinal>-<unit>)");
    const GpuSlot* gpu = snapshot.Find(ref->ordinal);
    if (gpu == nullptr || ref->unit >= gpu->units)
      return Invalid("device '" + id + "' is not one of this plugin's devices");
    ++grant.units_per_gpu[ref->ordinal];
  }
  if (!snapshot.arbiter_reachable)
    return shm::Status(shm::StatusCode::kUnavailable,
                       "gshare-arbiter's state is unknown, no vGPU can be promised: " +
                           snapshot.problem);
  grant.units = static_cast<uint32_t>(ids.size());
  grant.quota_bytes = static_cast<uint64_t>(grant.units) * snapshot.unit_bytes;
  const uint64_t largest = snapshot.LargestHealthyGpuBytes();
  if (grant.quota_bytes > largest)
    return Invalid(std::to_string(grant.units) + " units of " + FormatByteSize(snapshot.unit_bytes) +
                   " = " + FormatByteSize(grant.quota_bytes) +
                   " is more than any GPU gshare manages on this node can hold (largest healthy: " +
                   FormatByteSize(largest) +
                   " usable); a vGPU lives on one GPU: ask for fewer units");
  return grant;
}

std::string QuotaText(uint64_t bytes) { return std::to_string(bytes >> 20) + "MiB"; }

ContainerEdits EditsFor(const PluginConfig& config, const Grant& grant, const CdiEdits* edits) {
  ContainerEdits out;
  if (config.strategy != DeviceListStrategy::kCdi && edits != nullptr) {
    out.envs = edits->env;
    out.mounts = edits->mounts;
  }
  if (config.strategy != DeviceListStrategy::kEnv) out.cdi_devices.push_back(config.cdi_device);
  // Set after the spec's env: the quota is the container's own, never the spec's.
  out.envs["GSHARE_VGPU_MEMORY"] = QuotaText(grant.quota_bytes);
  out.annotations["gshare.io/vgpu-memory"] = QuotaText(grant.quota_bytes);
  return out;
}

}  // namespace gshare::deviceplugin
