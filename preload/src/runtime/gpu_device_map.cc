// The arbiter's GPUs as the process's devices, and how they are found (see gpu_device_map.h).
#include "runtime/gpu_device_map.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "gshare/shm/wire.h"
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

using GetCount = CUresult (*)(int*);
using GetDevice = CUresult (*)(CUdevice*, int);
using GetUuid = CUresult (*)(CUuuid*, CUdevice);

GetUuid ResolveGetUuid(const RealDriver& real) {
  auto get_uuid = reinterpret_cast<GetUuid>(real.Resolve("cuDeviceGetUuid_v2"));
  return get_uuid != nullptr ? get_uuid : reinterpret_cast<GetUuid>(real.Resolve("cuDeviceGetUuid"));
}

}  // namespace

void GpuDeviceMap::Map(uint32_t gpu, CUdevice device) {
  std::vector<uint32_t> table(static_cast<size_t>(device) + 1, shm::kNoGpu);
  table[static_cast<size_t>(device)] = gpu;
  Publish(std::move(table));
}

void GpuDeviceMap::SetTable(std::span<const uint32_t> gpus) {
  Publish(std::vector<uint32_t>(gpus.begin(), gpus.end()));
}

void GpuDeviceMap::Publish(std::vector<uint32_t> gpu_of_device) {
  auto table = std::make_unique<const Table>(Table{std::move(gpu_of_device)});
  MutexLock lock(mu_);
  table_.store(table.get(), std::memory_order_release);
  kept_.push_back(std::move(table));
}

CUdevice GpuDeviceMap::mapped_device() const {
  const Table* t = table_.load(std::memory_order_acquire);
  if (t == nullptr) return 0;
  for (size_t d = 0; d < t->gpu_of_device.size(); ++d)
    if (t->gpu_of_device[d] != shm::kNoGpu) return static_cast<CUdevice>(d);
  return 0;
}

CUdevice GpuDeviceMap::DeviceOf(uint32_t gpu) const {
  const Table* t = table_.load(std::memory_order_acquire);
  if (t == nullptr) return static_cast<CUdevice>(gpu);
  for (size_t d = 0; d < t->gpu_of_device.size(); ++d)
    if (t->gpu_of_device[d] == gpu) return static_cast<CUdevice>(d);
  return kNotVisible;
}

uint32_t GpuDeviceMap::GpuOf(CUdevice device) const {
  const Table* t = table_.load(std::memory_order_acquire);
  if (t == nullptr || device < 0 || static_cast<size_t>(device) >= t->gpu_of_device.size() ||
      t->gpu_of_device[static_cast<size_t>(device)] == shm::kNoGpu)
    return static_cast<uint32_t>(device);
  return t->gpu_of_device[static_cast<size_t>(device)];
}

std::vector<std::array<uint8_t, 16>> DeviceUuids(const RealDriver& real) {
  const auto get_count = reinterpret_cast<GetCount>(real.Resolve("cuDeviceGetCount"));
  const auto get_device = reinterpret_cast<GetDevice>(real.Resolve("cuDeviceGet"));
  const GetUuid get_uuid = ResolveGetUuid(real);
  int count = 0;
  if (get_count == nullptr || get_device == nullptr || get_uuid == nullptr ||
      get_count(&count) != CUDA_SUCCESS || count <= 0)
    return {};
  std::vector<std::array<uint8_t, 16>> uuids(
      std::min(static_cast<size_t>(count), shm::kMaxReportedDevices));
  for (size_t i = 0; i < uuids.size(); ++i) {
    CUdevice dev = 0;
    CUuuid u{};
    if (get_device(&dev, static_cast<int>(i)) == CUDA_SUCCESS && get_uuid(&u, dev) == CUDA_SUCCESS)
      std::memcpy(uuids[i].data(), u.bytes, uuids[i].size());
  }
  return uuids;
}

std::optional<CUdevice> FindCorunDevice(const RealDriver& real, const CorunPlacement& placement) {
  using GetAttribute = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  const auto get_count = reinterpret_cast<GetCount>(real.Resolve("cuDeviceGetCount"));
  const auto get_device = reinterpret_cast<GetDevice>(real.Resolve("cuDeviceGet"));
  const GetUuid get_uuid = ResolveGetUuid(real);
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
