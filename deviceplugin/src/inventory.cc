// Inventory: the arbiter's status reply turned into the devices kubelet sees (inventory.h).
#include "inventory.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace gshare::deviceplugin {

std::string DeviceId(uint32_t ordinal, uint32_t unit) {
  return "gpu" + std::to_string(ordinal) + "-" + std::to_string(unit);
}

std::optional<DeviceRef> ParseDeviceId(const std::string& id) {
  if (!id.starts_with("gpu")) return std::nullopt;
  const auto dash = id.find('-', 3);
  if (dash == std::string::npos || dash == 3 || dash + 1 == id.size()) return std::nullopt;
  DeviceRef ref;
  const char* first = id.data() + 3;
  auto r = std::from_chars(first, id.data() + dash, ref.ordinal);
  if (r.ec != std::errc() || r.ptr != id.data() + dash) return std::nullopt;
  r = std::from_chars(id.data() + dash + 1, id.data() + id.size(), ref.unit);
  if (r.ec != std::errc() || r.ptr != id.data() + id.size()) return std::nullopt;
  // Only the canonical spelling (no leading zeros) names a device.
  if (DeviceId(ref.ordinal, ref.unit) != id) return std::nullopt;
  return ref;
}

std::vector<Device> Snapshot::Devices() const {
  std::vector<Device> out;
  for (const auto& [ordinal, gpu] : gpus) {
    const bool healthy = arbiter_reachable && gpu.healthy();
    for (uint32_t u = 0; u < gpu.units; ++u) out.push_back({DeviceId(ordinal, u), healthy});
  }
  return out;
}

uint64_t Snapshot::LargestHealthyGpuBytes() const {
  uint64_t best = 0;
  if (!arbiter_reachable) return 0;
  for (const auto& [ordinal, gpu] : gpus)
    if (gpu.healthy()) best = std::max(best, gpu.usable_bytes);
  return best;
}

const GpuSlot* Snapshot::Find(uint32_t ordinal) const {
  const auto it = gpus.find(ordinal);
  return it == gpus.end() ? nullptr : &it->second;
}

Inventory::Inventory(uint64_t unit_bytes, double overcommit)
    : unit_bytes_(unit_bytes), overcommit_(overcommit) {
  snapshot_.unit_bytes = unit_bytes;
  snapshot_.problem = "the arbiter has not been asked yet";
}

bool Inventory::MarkUnreachable(std::string problem) {
  const auto before = snapshot_.Devices();
  snapshot_.arbiter_reachable = false;
  snapshot_.problem = std::move(problem);
  return snapshot_.Devices() != before;
}

bool Inventory::Update(const shm::Result<nlohmann::json>& status) {
  if (!status.ok()) return MarkUnreachable(status.status().message());
  const nlohmann::json& j = *status;
  if (j.value("ok", false) != true)
    return MarkUnreachable("the arbiter refused the status request: " +
                           (j.contains("error") && j["error"].is_string()
                                ? j["error"].get<std::string>()
                                : std::string("no reason given")));
  if (!j.contains("gpus") || !j["gpus"].is_array())
    return MarkUnreachable("the arbiter's status reply has no \"gpus\" list");
  std::map<uint32_t, GpuSlot> seen;
  for (const auto& g : j["gpus"]) {
    if (!g.is_object() || !g.contains("gpu") || !g["gpu"].is_number_unsigned() ||
        !g.contains("usable_bytes") || !g["usable_bytes"].is_number_unsigned() ||
        !g.contains("drained") || !g["drained"].is_boolean())
      return MarkUnreachable(
          "the arbiter's status reply has a GPU entry without gpu, usable_bytes or drained: " +
          g.dump());
    GpuSlot slot;
    slot.ordinal = g["gpu"].get<uint32_t>();
    slot.usable_bytes = g["usable_bytes"].get<uint64_t>();
    slot.drained = g["drained"].get<bool>();
    const long double units = std::floor(static_cast<long double>(slot.usable_bytes) * overcommit_ /
                                         static_cast<long double>(unit_bytes_));
    slot.units = static_cast<uint32_t>(std::min<long double>(units, 1'000'000));
    seen[slot.ordinal] = slot;
  }
  const auto before = snapshot_.Devices();
  // A GPU the arbiter listed before and no longer lists stays, unhealthy, so kubelet sees its
  // devices go unhealthy rather than vanish while pods may still hold them.
  for (auto& [ordinal, old] : snapshot_.gpus)
    if (!seen.contains(ordinal)) {
      old.present = false;
      seen[ordinal] = old;
    }
  snapshot_.gpus = std::move(seen);
  snapshot_.arbiter_reachable = true;
  snapshot_.problem.clear();
  return snapshot_.Devices() != before;
}

}  // namespace gshare::deviceplugin
