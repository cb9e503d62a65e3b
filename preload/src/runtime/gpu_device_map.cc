// Finds the process's device of the GPU a co-run share answer named (see gpu_device_map.h).
#include "runtime/gpu_device_map.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "runtime/log.h"

namespace gshare::preload {
namespace {

std::string Hex(const uint8_t* bytes, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 15];
  }
  return out;
}

}  // namespace

std::optional<CUdevice> FindCorunDevice(const RealDriver& real, const CorunPlacement& placement) {
  using GetCount = CUresult (*)(int*);
  using GetDevice = CUresult (*)(CUdevice*, int);
  using GetUuid = CUresult (*)(CUuuid*, CUdevice);
  using GetAttribute = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  const auto get_count = reinterpret_cast<GetCount>(real.Resolve("cuDeviceGetCount"));
  const auto get_device = reinterpret_cast<GetDevice>(real.Resolve("cuDeviceGet"));
  auto get_uuid = reinterpret_cast<GetUuid>(real.Resolve("cuDeviceGetUuid_v2"));
  if (get_uuid == nullptr) get_uuid = reinterpret_cast<GetUuid>(real.Resolve("cuDeviceGetUuid"));
  const auto get_attr = reinterpret_cast<GetAttribute>(real.Resolve("cuDeviceGetAttribute"));
  int count = 0;
  if (get_count == nullptr || get_device == nullptr || get_count(&count) != CUDA_SUCCESS) return std::nullopt;
  const bool uuid_known = std::any_of(placement.uuid.begin(), placement.uuid.end(),
                                      [](uint8_t b) { return b != 0; });
  std::optional<CUdevice> found;
  if (uuid_known && get_uuid != nullptr) {
    for (int i = 0; i < count && !found; ++i) {
      CUdevice dev = 0;
      CUuuid u{};
      if (get_device(&dev, i) == CUDA_SUCCESS && get_uuid(&u, dev) == CUDA_SUCCESS &&
          std::memcmp(u.bytes, placement.uuid.data(), sizeof u.bytes) == 0)
        found = static_cast<CUdevice>(i);
    }
    if (!found) {
      Log().warn("the arbiter co-runs this function on GPU {} (UUID {}), which is not among the "
                 "process's {} device(s): its devices are taken as the arbiter numbers them",
                 placement.gpu, Hex(placement.uuid.data(), placement.uuid.size()), count);
      return std::nullopt;
    }
  } else if (placement.pipe_from_answer && count == 1) {
    // The answer's daemon serves that GPU alone; an MPS client of it sees it as device 0.
    CUdevice dev = 0;
    int enabled = 0;
    if (get_attr != nullptr && get_device(&dev, 0) == CUDA_SUCCESS &&
        get_attr(&enabled, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, dev) == CUDA_SUCCESS && enabled == 1)
      found = 0;
  }
  if (!found || *found == static_cast<CUdevice>(placement.gpu)) return std::nullopt;
  Log().info("the arbiter's GPU {} is this process's device {} (an MPS client sees only the GPU "
             "its daemon serves, numbered from 0)",
             placement.gpu, *found);
  return found;
}

}  // namespace gshare::preload
