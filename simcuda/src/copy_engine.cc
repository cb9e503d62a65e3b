// Copy and memset operations with the simulated-time model (see copy_engine.h).
#include "copy_engine.h"

#include <cstring>

#include "allocations.h"
#include "context.h"
#include "driver.h"
#include "log.h"
#include "sim_clock.h"

namespace simcuda {
namespace {

bool IsDeviceKind(MemKind k) { return k == MemKind::kDevice || k == MemKind::kManaged || k == MemKind::kVmm; }

// Reserves the op's simulated interval, waits for its start, does `work`, waits for its end.
template <typename Work>
uint64_t Timed(int dev, Timeline timeline, uint64_t start, uint64_t duration_ns, Work work) {
  SimInterval iv = Driver()->registry->ReserveInterval(dev, timeline, start, duration_ns);
  if (iv.start_ns > SimNowNs()) SleepUntilSim(iv.start_ns);
  work();
  SleepUntilSim(iv.end_ns);
  return iv.end_ns;
}

void DoCopy(const CopyShape& s) {
  size_t dst_slice = s.dst_pitch * (s.dst_height == 0 ? s.height : s.dst_height);
  size_t src_slice = s.src_pitch * (s.src_height == 0 ? s.height : s.src_height);
  if (s.height == 1 && s.depth == 1) {
    std::memmove(reinterpret_cast<void*>(s.dst), reinterpret_cast<const void*>(s.src), s.width);
    return;
  }
  for (size_t z = 0; z < s.depth; ++z) {
    for (size_t y = 0; y < s.height; ++y) {
      std::memmove(reinterpret_cast<void*>(s.dst + z * dst_slice + y * s.dst_pitch),
                   reinterpret_cast<const void*>(s.src + z * src_slice + y * s.src_pitch), s.width);
    }
  }
}

// Bytes from the first to the last byte one side of a strided copy touches.
size_t SideExtent(size_t pitch, size_t rows_per_slice, const CopyShape& s) {
  if (s.height == 1 && s.depth == 1) return s.width;
  size_t slice = pitch * (rows_per_slice == 0 ? s.height : rows_per_slice);
  return (s.depth - 1) * slice + (s.height - 1) * pitch + s.width;
}

// Checks every row of one side of a strided copy.
bool SideValid(uintptr_t base, size_t pitch, size_t rows_per_slice, const CopyShape& s, bool device) {
  if (!device) return base != 0 || s.bytes() == 0;
  return IsDeviceRange(base, SideExtent(pitch, rows_per_slice, s));
}

}  // namespace

int DeviceOf(uintptr_t ptr) {
  std::optional<Allocation> a = AllocationTable::Instance().Find(ptr);
  if (!a || !IsDeviceKind(a->kind)) return -1;
  return a->device;
}

bool IsDeviceRange(uintptr_t ptr, size_t bytes) {
  AllocationTable& table = AllocationTable::Instance();
  uintptr_t end = ptr + bytes;
  uintptr_t at = ptr;
  do {
    std::optional<Allocation> a = table.Find(at);
    if (!a || !IsDeviceKind(a->kind)) return false;
    if (a->kind == MemKind::kVmm && (a->flags & CU_MEM_ACCESS_FLAGS_PROT_READ) == 0) return false;
    at = a->base + (a->size == 0 ? 1 : a->size);
  } while (at < end);
  return true;
}

bool VmmReachableFrom(int device, uintptr_t ptr, size_t bytes) {
  AllocationTable& table = AllocationTable::Instance();
  const uintptr_t end = ptr + bytes;
  for (uintptr_t at = ptr; at < end;) {
    std::optional<Allocation> a = table.Find(at);
    if (!a) return true;  // host or unknown memory: not this check's business
    if (a->kind == MemKind::kVmm && (a->access_devices & (uint32_t{1} << device)) == 0) return false;
    at = a->base + (a->size == 0 ? 1 : a->size);
  }
  return true;
}

bool KernelMayAccess(int device, uintptr_t ptr) {
  std::optional<Allocation> a = AllocationTable::Instance().Find(ptr);
  if (!a) return true;
  if (a->kind == MemKind::kDevice) return a->device == device;
  if (a->kind == MemKind::kVmm) return (a->access_devices & (uint32_t{1} << device)) != 0;
  return true;  // host, registered and managed memory are reachable from every device
}

CUresult MakeCopyOp(const CopyShape& shape, int dst_kind, int src_kind, OpFn* op) {
  if (shape.bytes() == 0) {
    *op = [](uint64_t start) { return start; };
    return CUDA_SUCCESS;
  }
  if (shape.dst == 0 || shape.src == 0) return CUDA_ERROR_INVALID_VALUE;
  int dst_dev = DeviceOf(shape.dst);
  int src_dev = DeviceOf(shape.src);
  bool dst_device = dst_kind == kUnifiedSide ? dst_dev >= 0 : dst_kind == kDeviceSide;
  bool src_device = src_kind == kUnifiedSide ? src_dev >= 0 : src_kind == kDeviceSide;
  if (!SideValid(shape.dst, shape.dst_pitch, shape.dst_height, shape, dst_device) ||
      !SideValid(shape.src, shape.src_pitch, shape.src_height, shape, src_device)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const DriverState* d = Driver();
  double bytes = static_cast<double>(shape.bytes());
  CopyShape s = shape;
  if (dst_device && src_device) {
    const DeviceSpec& spec = d->devices[static_cast<size_t>(dst_dev)].spec;
    if (dst_dev != src_dev) {  // peer copy: over the link
      uint64_t ns = TransferNs(bytes, spec.link_bytes_per_s);
      *op = [s, dst_dev, ns](uint64_t start) { return Timed(dst_dev, kHostToDeviceTimeline, start, ns, [&] { DoCopy(s); }); };
    } else {  // read + write in device memory
      uint64_t ns = TransferNs(2 * bytes, spec.memory_bytes_per_s);
      *op = [s, dst_dev, ns](uint64_t start) { return Timed(dst_dev, kComputeTimeline, start, ns, [&] { DoCopy(s); }); };
    }
  } else if (dst_device || src_device) {
    int dev = dst_device ? dst_dev : src_dev;
    Timeline tl = dst_device ? kHostToDeviceTimeline : kDeviceToHostTimeline;
    uint64_t ns = TransferNs(bytes, d->devices[static_cast<size_t>(dev)].spec.link_bytes_per_s);
    *op = [s, dev, tl, ns](uint64_t start) { return Timed(dev, tl, start, ns, [&] { DoCopy(s); }); };
  } else {
    *op = [s](uint64_t start) {
      DoCopy(s);
      return start;
    };
  }
  return CUDA_SUCCESS;
}

CUresult MakeMemsetOp(uintptr_t dst, size_t pitch, uint32_t value, size_t elem_size, size_t width,
                      size_t height, OpFn* op) {
  size_t row_bytes = width * elem_size;
  if (row_bytes == 0 || height == 0) {
    *op = [](uint64_t start) { return start; };
    return CUDA_SUCCESS;
  }
  if (height > 1 && pitch < row_bytes) return CUDA_ERROR_INVALID_VALUE;
  if (dst % elem_size != 0) return CUDA_ERROR_INVALID_VALUE;
  size_t extent = (height - 1) * pitch + row_bytes;
  if (!IsDeviceRange(dst, extent)) return CUDA_ERROR_INVALID_VALUE;
  int dev = DeviceOf(dst);
  uint64_t ns = TransferNs(static_cast<double>(row_bytes * height),
                           Driver()->devices[static_cast<size_t>(dev)].spec.memory_bytes_per_s);
  *op = [=](uint64_t start) {
    return Timed(dev, kComputeTimeline, start, ns, [&] {
      for (size_t y = 0; y < height; ++y) {
        auto* row = reinterpret_cast<unsigned char*>(dst + y * pitch);
        if (elem_size == 1) {
          std::memset(row, static_cast<int>(value & 0xff), width);
        } else if (elem_size == 2) {
          auto* p = reinterpret_cast<uint16_t*>(row);
          for (size_t i = 0; i < width; ++i) p[i] = static_cast<uint16_t>(value);
        } else {
          auto* p = reinterpret_cast<uint32_t*>(row);
          for (size_t i = 0; i < width; ++i) p[i] = value;
        }
      }
    });
  };
  return CUDA_SUCCESS;
}

CUresult RunOp(CUstream stream, bool per_thread_entry, bool sync, OpFn op, const CopyShape* reach) {
  CUstream_st* s = nullptr;
  if (CUresult r = ResolveStream(stream, per_thread_entry, &s); r != CUDA_SUCCESS) return r;
  if (reach != nullptr && reach->bytes() != 0) {
    // Before reading the context's device: a restore may be moving the contexts to other
    // devices while the process is locked (a TSan report: CheckpointTest.StateMachine...).
    WaitIfLocked();
    const int dev = s->ctx->device;
    const bool dst_ok = VmmReachableFrom(dev, reach->dst, SideExtent(reach->dst_pitch, reach->dst_height, *reach));
    const bool src_ok = reach->src == 0 ||
                        VmmReachableFrom(dev, reach->src, SideExtent(reach->src_pitch, reach->src_height, *reach));
    if (!dst_ok || !src_ok) {
      Log(LogLevel::kWarn, "copy in a context of device %d touches VMM memory mapped without access "
                  "for device %d (dst %#lx, src %#lx): CUDA_ERROR_INVALID_VALUE", dev, dev,
                  static_cast<unsigned long>(reach->dst), static_cast<unsigned long>(reach->src));
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return sync ? SubmitAndWait(s, std::move(op)) : Submit(s, std::move(op));
}

namespace {
int SideKind(CUmemorytype t) {
  switch (t) {
    case CU_MEMORYTYPE_HOST: return kHostSide;
    case CU_MEMORYTYPE_DEVICE: return kDeviceSide;
    case CU_MEMORYTYPE_UNIFIED: return kUnifiedSide;
    default: return -1;  // arrays are not supported
  }
}
}  // namespace

namespace {
// The address and kind of one side of a 2D/3D copy.
template <typename Desc>
CUresult Sides(const Desc* p, uintptr_t* dst, uintptr_t* src, int* dst_kind, int* src_kind) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *dst_kind = SideKind(p->dstMemoryType);
  *src_kind = SideKind(p->srcMemoryType);
  if (*dst_kind < 0 || *src_kind < 0) return CUDA_ERROR_NOT_SUPPORTED;
  *src = *src_kind == kHostSide ? reinterpret_cast<uintptr_t>(p->srcHost) : p->srcDevice;
  *dst = *dst_kind == kHostSide ? reinterpret_cast<uintptr_t>(p->dstHost) : p->dstDevice;
  return CUDA_SUCCESS;
}
}  // namespace

CUresult ShapeFrom2D(const CUDA_MEMCPY2D* p, CopyShape* s, int* dst_kind, int* src_kind) {
  uintptr_t dst = 0, src = 0;
  if (CUresult r = Sides(p, &dst, &src, dst_kind, src_kind); r != CUDA_SUCCESS) return r;
  s->width = p->WidthInBytes;
  s->height = p->Height;
  s->depth = 1;
  s->src_pitch = p->srcPitch == 0 ? p->WidthInBytes : p->srcPitch;
  s->dst_pitch = p->dstPitch == 0 ? p->WidthInBytes : p->dstPitch;
  if (s->height > 1 && (s->src_pitch < s->width || s->dst_pitch < s->width)) return CUDA_ERROR_INVALID_VALUE;
  s->src = src + p->srcY * s->src_pitch + p->srcXInBytes;
  s->dst = dst + p->dstY * s->dst_pitch + p->dstXInBytes;
  return CUDA_SUCCESS;
}

namespace {
template <typename Desc>
CUresult Shape3D(const Desc* p, CopyShape* s, int* dst_kind, int* src_kind) {
  uintptr_t dst = 0, src = 0;
  if (CUresult r = Sides(p, &dst, &src, dst_kind, src_kind); r != CUDA_SUCCESS) return r;
  s->width = p->WidthInBytes;
  s->height = p->Height == 0 ? 1 : p->Height;
  s->depth = p->Depth == 0 ? 1 : p->Depth;
  s->src_pitch = p->srcPitch == 0 ? p->WidthInBytes : p->srcPitch;
  s->dst_pitch = p->dstPitch == 0 ? p->WidthInBytes : p->dstPitch;
  s->src_height = p->srcHeight == 0 ? s->height : p->srcHeight;
  s->dst_height = p->dstHeight == 0 ? s->height : p->dstHeight;
  s->src = src + (p->srcZ * s->src_height + p->srcY) * s->src_pitch + p->srcXInBytes;
  s->dst = dst + (p->dstZ * s->dst_height + p->dstY) * s->dst_pitch + p->dstXInBytes;
  return CUDA_SUCCESS;
}
}  // namespace

CUresult ShapeFrom3D(const CUDA_MEMCPY3D* p, CopyShape* s, int* dst_kind, int* src_kind) {
  return Shape3D(p, s, dst_kind, src_kind);
}

CUresult ShapeFrom3DPeer(const CUDA_MEMCPY3D_PEER* p, CopyShape* s, int* dst_kind, int* src_kind) {
  return Shape3D(p, s, dst_kind, src_kind);
}

}  // namespace simcuda
