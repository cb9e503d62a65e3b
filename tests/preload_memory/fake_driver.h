// A fake driver for the vGPU memory manager's unit tests (leveldb's "pass the platform in"):
// the DeviceApi entry points implemented over real host memory so data can be checked, with
// controls for what the tests need to provoke: per-device capacity, failing cuMemCreate,
// streams whose recorded events stay incomplete until released, no current context.
//
//   - VA reservations are PROT_NONE anonymous mappings; physical handles are memfds; cuMemMap
//     maps the memfd at the address (inaccessible until cuMemSetAccess), so touching unmapped
//     memory faults as on a GPU; cuMemUnmap must name exactly a mapped range.
//   - Copies are synchronous memcpy; the streams they were issued on are recorded.
//
// Thread-safety: one global instance guarded by a mutex; tests use it from one thread.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <set>

#include "gshare/memory/device_api.h"

namespace gshare::memory::testing {

class FakeDriver {
 public:
  // Resets all state (every previous reservation/handle must be gone) and sets the capacity of
  // each of the two fake devices.
  static void Reset(uint64_t device_capacity_bytes);
  static DeviceApi Api();

  // Bytes of cuMemCreate handles alive on `device`.
  static uint64_t DeviceUsed(CUdevice device);
  static uint64_t LiveHandles();
  static uint64_t LiveReservations();
  static uint64_t CreateCalls();
  static uint64_t MapCalls();
  // The next `n` cuMemCreate calls (after `skip` successful ones) fail with OUT_OF_MEMORY.
  static void FailCreates(uint64_t skip, uint64_t n);
  // After `n` more successful cuEventSynchronize calls, the next one fails (LAUNCH_FAILED), as
  // a sticky error seen while waiting for copies would.
  static void FailEventSyncAfter(uint64_t n);
  // Events recorded on a held stream stay NOT_READY until ReleaseStream.
  static void HoldStream(CUstream stream);
  static void ReleaseStream(CUstream stream);
  // Whether cuCtxGetCurrent reports a context (default true).
  static void SetHasCurrentContext(bool has);
  // Whether a context is current now (the application's or one pushed by cuCtxPushCurrent).
  static bool HasCurrentContext();
  // Distinct streams used by async copies since Reset, per direction.
  static std::set<CUstream> DtoHStreams();
  static std::set<CUstream> HtoDStreams();
  static uint64_t HostAllocCalls();
  // A stream handle the tests can pass as "the application's stream".
  static CUstream AppStream(int i);
};

}  // namespace gshare::memory::testing
