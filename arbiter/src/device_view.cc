// Matching a process's devices with the arbiter's GPUs by UUID (see device_view.h).
#include "device_view.h"

#include <algorithm>

#include "gshare/shm/wire.h"

namespace gshare::arbiter {

bool DeviceView::Sees(GpuIndex g) const {
  return !reported || std::find(visible.begin(), visible.end(), g) != visible.end();
}

DeviceView ResolveDeviceView(std::span<const Uuid> uuids, std::span<const ManagedGpu> gpus,
                             std::string* why) {
  DeviceView view;
  constexpr Uuid kUnknown{};
  const bool arbiter_knows =
      !gpus.empty() && std::none_of(gpus.begin(), gpus.end(),
                                    [&](const ManagedGpu& g) { return g.uuid == kUnknown; });
  if (uuids.empty() || !arbiter_knows) return view;
  view.reported = true;
  for (const Uuid& u : uuids) {
    uint32_t ordinal = shm::kNoGpu;
    if (u != kUnknown) {
      for (uint32_t i = 0; i < gpus.size(); ++i) {
        if (gpus[i].uuid != u) continue;
        ordinal = gpus[i].ordinal.value();
        if (std::find(view.visible.begin(), view.visible.end(), GpuIndex{i}) == view.visible.end())
          view.visible.push_back(GpuIndex{i});
        break;
      }
    }
    view.device_gpus.push_back(ordinal);
  }
  for (const ManagedGpu& g : gpus) {
    const uint32_t o = g.ordinal.value();
    if (o >= view.device_gpus.size() || view.device_gpus[o] != o) view.confined = true;
  }
  if (view.visible.empty() && why != nullptr) {
    *why = "none of the " + std::to_string(uuids.size()) +
           " GPU(s) this process's driver shows it is one this arbiter manages (its "
           "CUDA_VISIBLE_DEVICES, or the devices its container was given)";
  }
  return view;
}

std::string DescribeView(const DeviceView& view) {
  if (!view.reported) return "device d is GPU d";
  std::string out;
  for (size_t d = 0; d < view.device_gpus.size(); ++d) {
    if (d != 0) out += ", ";
    out += "device " + std::to_string(d) + " is " +
           (view.device_gpus[d] == shm::kNoGpu ? std::string("not managed")
                                               : "GPU " + std::to_string(view.device_gpus[d]));
  }
  return out;
}

}  // namespace gshare::arbiter
