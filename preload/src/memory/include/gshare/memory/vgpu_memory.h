// VgpuMemory: one process's vGPU device memory. Every allocation the application makes is
// served from virtual addresses this object owns (cuMemAddressReserve + cuMemCreate + cuMemMap
// + cuMemSetAccess), counted against a quota, and can be swapped to pinned host memory and
// back at the same addresses. See docs/vgpu-memory.md for the design and its numbers.
//
// Layout (details in docs/vgpu-memory.md):
//   - allocations >= options.large_threshold get a dedicated chunk: their own VA reservation
//     backed by one physical handle, rounded up to the granularity;
//   - smaller ones are sub-allocated best-fit (with coalescing) inside shared arenas: VA ranges
//     of options.arena_bytes whose granules (the driver's allocation granularity, 2 MiB) are
//     backed with their own handle exactly while some live allocation overlaps them.
//
// Kept memory (options.keep_freed_bytes): freed pieces and chunks may stay mapped for reuse;
// they are not "used" (GetInfo reports them free) and are released before they could make
// used + kept exceed the quota, and at every swap-out.
//
// Accounting: "used" is the physical memory the vGPU holds (backed granules + dedicated chunks
// + tracked external memory) plus, while swapped out, what it will hold again at swap-in. An
// allocation whose extra physical memory would make used exceed the quota fails with
// CUDA_ERROR_OUT_OF_MEMORY and changes nothing.
//
// Thread-safety: every public method is thread-safe (one internal FIFO mutex). SwapOut/SwapIn
// hold it for their whole duration, so allocations, frees and queries wait while a swap runs;
// the two directions never overlap. Waiters are served in arrival order: a call that arrives
// during a swap runs before any swap requested after it (back-to-back swaps cannot starve it).
// Methods never throw and never exit; errors are CUresult values.
//
// Contexts: Allocate/Free/AllocatePitch/LookupRange/GetInfo/TrackExternal use only VMM calls
// that need no current context (NCCL allocates with none). AllocateAsync/FreeAsync record
// events on the caller's stream, so they need the stream's context current. SwapOut/SwapIn
// use the current context when it belongs to the target device, otherwise they retain and push
// that device's primary context for the duration of the call.
#pragma once

#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "gshare/memory/device_api.h"

namespace spdlog {
class logger;
}

namespace gshare::memory {

// The logger the memory manager writes to (the shim's, set when its log is configured); null,
// the default, keeps it silent. REQUIRES: `logger` is never destroyed (the swap and control
// threads may log while the process exits, after static destructors ran). Thread-safe.
void SetLogger(spdlog::logger* logger);

inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;

// Alignment of every pointer Allocate/AllocateAsync returns (cudaMalloc guarantees 256).
inline constexpr uint64_t kAllocationAlignment = 256;
// Alignment and row-pitch multiple of AllocatePitch.
inline constexpr uint64_t kPitchAlignment = 512;

// Memory the application obtains outside Allocate*, counted against the quota. None of it is
// swappable: while the vGPU is swapped out it stays resident (and counted).
enum class ExternalKind : uint8_t {
  kAppVmm = 0,     // the application's own cuMemCreate handles (PyTorch expandable segments, NCCL)
  kIpcImport = 1,  // cuIpcOpenMemHandle / imported shareable handles mapped by the application
  kManaged = 2,    // cuMemAllocManaged
  kArray = 3,      // CUDA arrays, mipmapped arrays
  kGraph = 4,      // graph-owned memory (cuGraphInstantiate with memory nodes)
  kOther = 5,
  kLegacy = 6,     // the v1 cuMemAlloc / cuMemAllocPitch (32-bit addresses the shim cannot own)
};
inline constexpr int kExternalKindCount = 7;

struct VgpuMemoryOptions {
  uint64_t quota_bytes = 0;        // vGPU memory; GetInfo reports it as total
  CUdevice device = 0;             // device ordinal the physical memory lives on
  // Allocations of at least this many bytes get a dedicated chunk.
  uint64_t large_threshold = 32 * kMiB;
  // VA reserved per shared arena (a new arena is reserved when the existing ones are full).
  uint64_t arena_bytes = 1 * kGiB;
  // Swap copies are split into pieces of this size. Swap-out spreads them round-robin over
  // swap_streams streams; swap-in runs swap_streams workers (the caller and helper threads, each
  // with its own stream) that each map every n-th piece and enqueue its copies at once.
  uint64_t swap_piece_bytes = 8 * kMiB;
  unsigned swap_streams = 4;
  // Freed physical memory kept mapped for the next allocation that lands there, at most this
  // many bytes (and never beyond quota minus used): alloc/free pairs then cost no driver call.
  // 0 (the default here) releases at once; the shim sets GSHARE_KEEP_FREED (default 256 MiB).
  uint64_t keep_freed_bytes = 0;
};

// What one SwapOut or SwapIn did.
struct SwapStats {
  uint64_t bytes = 0;            // bytes copied
  uint64_t physical_pieces = 0;  // handles released (out) or created and mapped (in)
  std::chrono::nanoseconds elapsed{0};  // whole call, drain included
  std::chrono::nanoseconds copy_time{0};  // from first copy enqueued to last copy complete
  // Swap-out phases (zero for swap-in): waiting for the application's work (the drain
  // callback and pending stream-ordered frees), pinning host staging (only when the staging had
  // to grow: PrepareStaging does it ahead of time), and unmapping + releasing physical memory
  // (part of copy_time: it overlaps the copies still running).
  std::chrono::nanoseconds drain_time{0};
  std::chrono::nanoseconds pin_time{0};
  std::chrono::nanoseconds unmap_time{0};
};

// A snapshot of the manager's state, for tests and metrics.
struct VgpuMemoryCounters {
  uint64_t quota_bytes = 0;
  uint64_t used_bytes = 0;            // what GetInfo subtracts from the quota
  uint64_t backed_bytes = 0;          // physical bytes of chunks and granules (resident or owed)
  uint64_t requested_bytes = 0;       // sum of live allocation sizes as requested
  uint64_t external_bytes = 0;        // sum over ExternalKind
  uint64_t live_allocations = 0;
  uint64_t pending_async_frees = 0;   // freed on a stream that has not yet passed the free
  uint64_t physical_handles = 0;      // handles currently created
  uint64_t arenas = 0;
  uint64_t allocations = 0;           // cumulative successful allocations
  uint64_t frees = 0;                 // cumulative completed frees
  uint64_t out_of_memory = 0;         // cumulative quota refusals
  uint64_t swap_outs = 0;
  uint64_t swap_ins = 0;
  uint64_t kept_bytes = 0;            // freed memory kept mapped for reuse (not in used_bytes)
  uint64_t kept_reuses = 0;           // cumulative allocations served from kept memory
  bool resident = true;
  CUdevice device = 0;
};

class VgpuMemory {
 public:
  // Waits until the process's in-flight GPU work that may touch vGPU memory has finished (the
  // shim's gate drains its streams). Called by SwapOut with the manager's lock held and a
  // context of the vGPU's device current on the calling thread (the caller's own context when it
  // is on that device, else the device's primary context): it must not call back into this
  // VgpuMemory. A non-success result aborts the swap-out unchanged.
  using DrainCallback = std::function<CUresult()>;
  // Told, during a SwapOut or SwapIn, how many bytes that swap has moved so far: on the way out
  // after each batch of copies has completed (from the swapping thread), on the way in after
  // each piece is mapped and its copy enqueued (from the swap's worker threads, concurrently).
  // A liveness hint for the arbiter (a long swap that keeps progressing is not a dead client).
  // Called with the manager's lock held: it must be cheap, thread-safe, and must not call back
  // into this VgpuMemory.
  using SwapProgressCallback = std::function<void(uint64_t bytes_so_far)>;

  // Does not call the driver (the first allocation queries the granularity).
  // `api` must be complete() and must outlive nothing: it is copied.
  VgpuMemory(const DeviceApi& api, const VgpuMemoryOptions& options);
  // Releases every chunk, handle, VA range, event and the pinned staging this object owns.
  // REQUIRES: no other thread is using the object; the device work touching it has finished.
  ~VgpuMemory();
  VgpuMemory(const VgpuMemory&) = delete;
  VgpuMemory& operator=(const VgpuMemory&) = delete;

  // cuMemAlloc semantics: *dptr receives a kAllocationAlignment-aligned pointer to `bytes`
  // bytes (contents undefined). bytes == 0 or dptr == null: CUDA_ERROR_INVALID_VALUE. Over the
  // quota: CUDA_ERROR_OUT_OF_MEMORY, nothing changed. While swapped out the allocation succeeds
  // (within the quota) and is backed at SwapIn.
  [[nodiscard]] CUresult Allocate(size_t bytes, CUdeviceptr* dptr);

  // cuMemAllocPitch semantics: the pitch is width_bytes rounded up to kPitchAlignment; the
  // pointer is kPitchAlignment-aligned. element_size must be 4, 8 or 16.
  [[nodiscard]] CUresult AllocatePitch(size_t width_bytes, size_t height, unsigned element_size,
                                       CUdeviceptr* dptr, size_t* pitch);

  // cuMemFree semantics: `dptr` must be a base returned by Allocate*/AllocatePitch and not yet
  // freed; otherwise CUDA_ERROR_INVALID_VALUE. Physical memory no live allocation uses is
  // released at once. dptr == 0 is a no-op returning CUDA_SUCCESS.
  // REQUIRES: no device work still uses the allocation (as for cuMemFree).
  [[nodiscard]] CUresult Free(CUdeviceptr dptr);

  // cuMemAllocAsync / cuMemAllocFromPoolAsync: the memory is valid immediately, hence also at
  // `stream`'s current point. Every pool maps onto this one vGPU (see docs/vgpu-memory.md).
  [[nodiscard]] CUresult AllocateAsync(size_t bytes, CUstream stream, CUdeviceptr* dptr);

  // cuMemFreeAsync: records an event on `stream` and returns without blocking; the range is
  // reused (and its physical memory released) only after the event has completed, as seen by a
  // later call of any method (completed events are polled, never waited for).
  // REQUIRES: the stream's context is current.
  [[nodiscard]] CUresult FreeAsync(CUdeviceptr dptr, CUstream stream);

  // Completes the stream-ordered frees whose streams have passed them. Non-blocking.
  void ReclaimCompletedFrees();

  // The vGPU's own view: *total = quota, *free = quota - used (0 if used > quota). Never
  // fails. Null outputs are skipped.
  void GetInfo(size_t* free_bytes, size_t* total_bytes);

  // The view for cuMemGetInfo, bounded by the GPU the vGPU lives on (the driver's cuMemGetInfo
  // answer there): *total = min(quota, device_total) — a vGPU is never larger than its GPU;
  // *free = min(quota - used, device_free + kept bytes, *total) while resident (kept memory is
  // this vGPU's own, released for the next allocation), quota - used bounded by *total while
  // swapped out. So free never promises memory that neither the quota nor the GPU can give.
  // Completed stream-ordered frees are reclaimed first. Null outputs are skipped.
  void GetInfoOnDevice(uint64_t device_free, uint64_t device_total, size_t* free_bytes,
                       size_t* total_bytes);

  // For pointer queries: when `ptr` lies inside a live allocation, stores the allocation's base
  // and requested size and returns CUDA_SUCCESS; otherwise CUDA_ERROR_NOT_FOUND. Null outputs
  // are skipped.
  [[nodiscard]] CUresult LookupRange(CUdeviceptr ptr, CUdeviceptr* base, size_t* size) const;

  // Counts memory the application obtained outside Allocate* against the quota (after
  // reclaiming completed stream-ordered frees, as every quota check does). Returns
  // CUDA_ERROR_OUT_OF_MEMORY (nothing counted) when it does not fit. Such memory is never
  // swapped and stays resident. The hook calls TrackExternal before the real allocation and
  // UntrackExternal if the real call fails.
  [[nodiscard]] CUresult TrackExternal(ExternalKind kind, uint64_t bytes);
  // Undoes TrackExternal; never underflows (clamps at zero).
  void UntrackExternal(ExternalKind kind, uint64_t bytes);

  // Changes the quota for future allocations (the arbiter may resize a vGPU). Memory already
  // held is kept even if it now exceeds the quota; GetInfo then reports free = 0.
  void SetQuota(uint64_t quota_bytes);

  // Swaps every resident byte out to pinned host staging (allocated on first use, grown when
  // needed, reused afterwards), then unmaps and releases the physical memory; the VA ranges stay
  // reserved so pointers stay valid for SwapIn. Order: take the lock (stops allocations and
  // frees), reclaim completed stream-ordered frees, make a context of the vGPU's device current
  // (see DrainCallback), call `drain` (may be empty), synchronise the events of pending
  // stream-ordered frees, copy device->host pipelined over several streams,
  // release. On any error before release, nothing is released and the vGPU stays resident.
  // Already swapped out: CUDA_SUCCESS with zero stats. `stats` may be null.
  [[nodiscard]] CUresult SwapOut(const DrainCallback& drain, SwapStats* stats);

  // Creates physical memory on `device` (which may differ from the one swapped out from), maps
  // it at the same addresses, grants `device` read/write access, copies the bytes back
  // (pipelined), and makes `device` the vGPU's device. On error the vGPU stays swapped out and
  // no new physical memory remains held. Already resident on `device`: CUDA_SUCCESS, zero stats.
  // Resident on another device: CUDA_ERROR_INVALID_VALUE (swap out first).
  [[nodiscard]] CUresult SwapIn(CUdevice device, SwapStats* stats);

  // Pins host staging for the current footprint (with the same headroom as SwapOut) ahead of
  // time, so the next swap-out copies at once instead of pinning first (pinning fresh pages
  // costs ~0.5 s/GiB on a real driver). The pinning runs without the manager's lock
  // (allocations and frees go on meanwhile); the buffer is installed only while resident and
  // only if it is larger than the one in place. No-op when the staging is already big enough or
  // the vGPU is swapped out. *pinned (optional) = bytes newly pinned (0 if nothing was needed).
  [[nodiscard]] CUresult PrepareStaging(uint64_t* pinned = nullptr);

  // Frees the pinned staging (e.g. when the function is told it will not be swapped again).
  // Only while resident; otherwise CUDA_ERROR_INVALID_VALUE (the staging holds the data).
  [[nodiscard]] CUresult ReleaseStaging();

  // The driver moved this process's device state to `device` (a checkpoint restore with GPU
  // pairs: the arbiter moved the whole function, docs/multi-gpu.md): the memory stays mapped
  // where the restore put it, and later allocations, swaps and the staging's context use
  // `device`. No driver call.
  void Rehome(CUdevice device);

  // Installs (or, empty, removes) the swap progress callback. Thread-safe.
  void SetSwapProgressCallback(SwapProgressCallback callback);

  [[nodiscard]] bool resident() const;
  [[nodiscard]] VgpuMemoryCounters counters() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gshare::memory
