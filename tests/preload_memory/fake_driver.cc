// The fake driver behind fake_driver.h: host memory, memfds and bookkeeping.
#include "fake_driver.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace gshare::memory::testing {
namespace {

constexpr uint64_t kGranularity = 2ull << 20;
constexpr int kDevices = 2;

struct Handle {
  int fd = -1;
  uint64_t size = 0;
  CUdevice device = 0;
};

struct Event {
  bool complete = true;
  CUstream stream = nullptr;
};

struct State {
  std::mutex mu;
  uint64_t capacity = 0;
  uint64_t used[kDevices] = {};
  std::map<CUmemGenericAllocationHandle, Handle> handles;
  CUmemGenericAllocationHandle next_handle = 1;
  std::map<CUdeviceptr, uint64_t> reservations;  // base -> size
  std::map<CUdeviceptr, uint64_t> mappings;      // address -> size
  uint64_t create_calls = 0;
  uint64_t map_calls = 0;
  uint64_t fail_skip = 0;
  uint64_t fail_count = 0;
  std::set<CUstream> held;
  std::vector<Event*> events;
  std::set<CUstream> dtoh_streams;
  std::set<CUstream> htod_streams;
  bool has_context = true;
  uint64_t host_allocs = 0;
  int64_t event_syncs_until_failure = -1;  // -1: never fail
  uintptr_t next_stream = 0x1000;
};

// Contexts pushed on top of the (fake) current one; per thread, as in the driver.
thread_local std::vector<CUcontext> t_pushed;

State& S() {
  static State* state = new State();  // never destroyed: late calls stay safe
  return *state;
}

CUcontext FakeContext() { return reinterpret_cast<CUcontext>(uintptr_t{0xC0}); }

CUresult MemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                   const CUmemAllocationProp* prop, unsigned long long /*flags*/) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.create_calls;
  if (handle == nullptr || prop == nullptr || size == 0 || size % kGranularity != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const CUdevice dev = prop->location.id;
  if (dev < 0 || dev >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
  if (s.fail_skip > 0) {
    --s.fail_skip;
  } else if (s.fail_count > 0) {
    --s.fail_count;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (s.used[dev] + size > s.capacity) return CUDA_ERROR_OUT_OF_MEMORY;
  const int fd = memfd_create("fake-cuda", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) {
    if (fd >= 0) close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  s.used[dev] += size;
  *handle = s.next_handle++;
  s.handles[*handle] = Handle{fd, size, dev};
  return CUDA_SUCCESS;
}

CUresult MemRelease(CUmemGenericAllocationHandle handle) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.handles.find(handle);
  if (it == s.handles.end()) return CUDA_ERROR_INVALID_VALUE;
  close(it->second.fd);
  s.used[it->second.device] -= it->second.size;
  s.handles.erase(it);
  return CUDA_SUCCESS;
}

CUresult AddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr /*addr*/,
                        unsigned long long /*flags*/) {
  if (ptr == nullptr || size == 0 || size % kGranularity != 0) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t align = alignment == 0 ? kGranularity : alignment;
  void* p = mmap(nullptr, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  const auto raw = reinterpret_cast<uintptr_t>(p);
  const uintptr_t base = (raw + align - 1) / align * align;
  if (base > raw) munmap(p, base - raw);
  const uintptr_t end = base + size;
  if (raw + size + align > end) munmap(reinterpret_cast<void*>(end), raw + size + align - end);
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  s.reservations[base] = size;
  *ptr = base;
  return CUDA_SUCCESS;
}

CUresult AddressFree(CUdeviceptr ptr, size_t size) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.reservations.find(ptr);
  if (it == s.reservations.end() || it->second != size) return CUDA_ERROR_INVALID_VALUE;
  munmap(reinterpret_cast<void*>(ptr), size);
  s.reservations.erase(it);
  return CUDA_SUCCESS;
}

CUresult MemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                unsigned long long /*flags*/) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.map_calls;
  auto it = s.handles.find(handle);
  if (it == s.handles.end() || offset + size > it->second.size) return CUDA_ERROR_INVALID_VALUE;
  if (s.mappings.count(ptr) != 0) return CUDA_ERROR_INVALID_VALUE;
  void* p = mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE, MAP_SHARED | MAP_FIXED,
                 it->second.fd, static_cast<off_t>(offset));
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  s.mappings[ptr] = size;
  return CUDA_SUCCESS;
}

CUresult MemUnmap(CUdeviceptr ptr, size_t size) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.mappings.find(ptr);
  if (it == s.mappings.end() || it->second != size) return CUDA_ERROR_INVALID_VALUE;
  mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  s.mappings.erase(it);
  return CUDA_SUCCESS;
}

CUresult SetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.mappings.find(ptr);
  if (it == s.mappings.end() || it->second != size) return CUDA_ERROR_INVALID_VALUE;
  return mprotect(reinterpret_cast<void*>(ptr), size, PROT_READ | PROT_WRITE) == 0
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_VALUE;
}

CUresult Granularity(size_t* granularity, const CUmemAllocationProp* /*prop*/,
                     CUmemAllocationGranularity_flags /*option*/) {
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

CUresult HostAlloc(void** pp, size_t bytes, unsigned int /*flags*/) {
  ++S().host_allocs;
  *pp = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  return *pp == nullptr ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

CUresult FreeHost(void* p) {
  std::free(p);
  return CUDA_SUCCESS;
}

CUresult CopyDtoH(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  {
    std::lock_guard<std::mutex> lock(S().mu);
    S().dtoh_streams.insert(stream);
  }
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}

CUresult CopyHtoD(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream) {
  {
    std::lock_guard<std::mutex> lock(S().mu);
    S().htod_streams.insert(stream);
  }
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return CUDA_SUCCESS;
}

CUresult StreamCreate(CUstream* stream, unsigned int /*flags*/) {
  std::lock_guard<std::mutex> lock(S().mu);
  *stream = reinterpret_cast<CUstream>(S().next_stream++);
  return CUDA_SUCCESS;
}
CUresult StreamDestroy(CUstream /*stream*/) { return CUDA_SUCCESS; }
CUresult StreamSynchronize(CUstream /*stream*/) { return CUDA_SUCCESS; }

// Events are created, recorded and waited for from several threads at once (the swap-in's
// workers each mark their own copier), as the driver allows: under the state's lock.
CUresult EventCreate(CUevent* event, unsigned int /*flags*/) {
  auto* e = new Event();
  std::lock_guard<std::mutex> lock(S().mu);
  S().events.push_back(e);
  *event = reinterpret_cast<CUevent>(e);
  return CUDA_SUCCESS;
}
CUresult EventDestroy(CUevent event) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto* e = reinterpret_cast<Event*>(event);
  std::erase(s.events, e);
  delete e;
  return CUDA_SUCCESS;
}
CUresult EventRecord(CUevent event, CUstream stream) {
  std::lock_guard<std::mutex> lock(S().mu);
  auto* e = reinterpret_cast<Event*>(event);
  e->stream = stream;
  e->complete = S().held.count(stream) == 0;
  return CUDA_SUCCESS;
}
CUresult EventQuery(CUevent event) {
  std::lock_guard<std::mutex> lock(S().mu);
  return reinterpret_cast<Event*>(event)->complete ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
CUresult EventSynchronize(CUevent event) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.event_syncs_until_failure == 0) {
    s.event_syncs_until_failure = -1;
    return CUDA_ERROR_LAUNCH_FAILED;
  }
  if (s.event_syncs_until_failure > 0) --s.event_syncs_until_failure;
  reinterpret_cast<Event*>(event)->complete = true;  // "waits" until the stream gets there
  return CUDA_SUCCESS;
}

CUresult CtxGetCurrent(CUcontext* ctx) {
  State& s = S();
  *ctx = !t_pushed.empty() ? t_pushed.back() : s.has_context ? FakeContext() : nullptr;
  return CUDA_SUCCESS;
}
CUresult CtxGetDevice(CUdevice* device) {
  if (!S().has_context && t_pushed.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult CtxPush(CUcontext ctx) {
  t_pushed.push_back(ctx);
  return CUDA_SUCCESS;
}
CUresult CtxPop(CUcontext* ctx) {
  if (t_pushed.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx != nullptr) *ctx = t_pushed.back();
  t_pushed.pop_back();
  return CUDA_SUCCESS;
}
CUresult PrimaryRetain(CUcontext* ctx, CUdevice device) {
  if (device < 0 || device >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
  *ctx = FakeContext();
  return CUDA_SUCCESS;
}
CUresult PrimaryRelease(CUdevice /*device*/) { return CUDA_SUCCESS; }

}  // namespace

void FakeDriver::Reset(uint64_t device_capacity_bytes) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  s.capacity = device_capacity_bytes;
  s.create_calls = s.map_calls = s.fail_skip = s.fail_count = s.host_allocs = 0;
  s.held.clear();
  s.dtoh_streams.clear();
  s.htod_streams.clear();
  s.has_context = true;
  t_pushed.clear();
  s.event_syncs_until_failure = -1;
}

DeviceApi FakeDriver::Api() {
  DeviceApi api;
  api.mem_create = MemCreate;
  api.mem_release = MemRelease;
  api.mem_address_reserve = AddressReserve;
  api.mem_address_free = AddressFree;
  api.mem_map = MemMap;
  api.mem_unmap = MemUnmap;
  api.mem_set_access = SetAccess;
  api.mem_get_allocation_granularity = Granularity;
  api.mem_host_alloc = HostAlloc;
  api.mem_free_host = FreeHost;
  api.memcpy_dtoh_async = CopyDtoH;
  api.memcpy_htod_async = CopyHtoD;
  api.stream_create = StreamCreate;
  api.stream_destroy = StreamDestroy;
  api.stream_synchronize = StreamSynchronize;
  api.event_create = EventCreate;
  api.event_destroy = EventDestroy;
  api.event_record = EventRecord;
  api.event_query = EventQuery;
  api.event_synchronize = EventSynchronize;
  api.ctx_get_current = CtxGetCurrent;
  api.ctx_get_device = CtxGetDevice;
  api.ctx_push_current = CtxPush;
  api.ctx_pop_current = CtxPop;
  api.device_primary_ctx_retain = PrimaryRetain;
  api.device_primary_ctx_release = PrimaryRelease;
  return api;
}

uint64_t FakeDriver::DeviceUsed(CUdevice device) {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().used[device];
}
uint64_t FakeDriver::LiveHandles() {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().handles.size();
}
uint64_t FakeDriver::LiveReservations() {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().reservations.size();
}
uint64_t FakeDriver::CreateCalls() { return S().create_calls; }
uint64_t FakeDriver::MapCalls() { return S().map_calls; }
void FakeDriver::FailCreates(uint64_t skip, uint64_t n) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().fail_skip = skip;
  S().fail_count = n;
}
void FakeDriver::FailEventSyncAfter(uint64_t n) {
  S().event_syncs_until_failure = static_cast<int64_t>(n);
}
void FakeDriver::HoldStream(CUstream stream) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().held.insert(stream);
}
void FakeDriver::ReleaseStream(CUstream stream) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  s.held.erase(stream);
  for (Event* e : s.events) {
    if (e->stream == stream) e->complete = true;
  }
}
void FakeDriver::SetHasCurrentContext(bool has) { S().has_context = has; }
bool FakeDriver::HasCurrentContext() {
  CUcontext ctx = nullptr;
  (void)CtxGetCurrent(&ctx);
  return ctx != nullptr;
}
std::set<CUstream> FakeDriver::DtoHStreams() { return S().dtoh_streams; }
std::set<CUstream> FakeDriver::HtoDStreams() { return S().htod_streams; }
uint64_t FakeDriver::HostAllocCalls() { return S().host_allocs; }
CUstream FakeDriver::AppStream(int i) {
  return reinterpret_cast<CUstream>(uintptr_t{0x100000} + static_cast<uintptr_t>(i));
}

}  // namespace gshare::memory::testing
