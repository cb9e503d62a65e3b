// The shim's per-process state (see runtime.h).
#include "runtime/runtime.h"

#include <pthread.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <sstream>
#include <thread>

#include "arbiter_client.h"
#include "gshare/common/units.h"
#include "runtime/arbiter_host.h"
#include "runtime/control_server.h"
#include "runtime/log.h"
#include "runtime/mps_share.h"

namespace gshare::preload {

std::atomic<Runtime*> Runtime::instance_{nullptr};
Mutex Runtime::init_mutex_;

namespace {
thread_local bool t_initialising = false;
}  // namespace

bool Runtime::InitialisingOnThisThread() { return t_initialising; }

const char* ResultName(CUresult result) {
  switch (result) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
    case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
    case CUDA_ERROR_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
    case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    default: return "CUDA_ERROR_(other)";
  }
}

Runtime& Runtime::InitSlow() {
  MutexLock lock(init_mutex_);
  Runtime* rt = instance_.load(std::memory_order_acquire);
  if (rt != nullptr) return *rt;
  static bool atfork_registered = false;  // inherited by a forked child: registered once
  if (!atfork_registered) {
    pthread_atfork(&Runtime::PrepareFork, &Runtime::ParentAfterFork, &Runtime::ChildAfterFork);
    atfork_registered = true;
  }
  rt = new Runtime();  // never destroyed (see runtime.h)
  t_initialising = true;
  rt->Setup();
  t_initialising = false;
  instance_.store(rt, std::memory_order_release);
  return *rt;
}

void Runtime::Setup() {
  config_ = ConfigFromEnvironment();
  // Once per process image: a forked child keeps the parent's logger (same environment, same
  // sinks) rather than re-registering it while another parent thread may have held spdlog's
  // registry lock at fork time.
  static bool log_initialised = false;
  if (!log_initialised) {
    log_initialised = true;
    const std::string log_error = InitLog(config_.log_level, config_.log_file);
    if (!log_error.empty()) Log().error("{}", log_error);
  }
  if (!config_.warnings.empty()) Log().warn("{}", config_.warnings);
  if (!config_.error.ok()) {
    Log().error("invalid configuration: {}; every CUDA call will fail with "
                "CUDA_ERROR_INVALID_VALUE",
                config_.error.message());
    status_ = CUDA_ERROR_INVALID_VALUE;
  }
  const std::string driver_error = LoadRealDriver(config_.real_libcuda, &real_);
  if (!driver_error.empty()) {
    Log().error("{}", driver_error);
    real_ = RealDriver{};
    if (status_ == CUDA_SUCCESS) status_ = CUDA_ERROR_NOT_INITIALIZED;
    return;
  }
  ctx_synchronize_ = reinterpret_cast<PFN_cuCtxSynchronize_v2000>(real_.Resolve("cuCtxSynchronize"));
  SetUpInflightTracker();
  Log().info("libgshare loaded: driver {}, function '{}', vGPU memory {}", real_.path,
             config_.function_name,
             config_.vgpu_memory_bytes ? gshare::FormatByteSize(*config_.vgpu_memory_bytes)
                                       : std::string("whole device"));
}

void Runtime::SetUpInflightTracker() {
  InflightApi api;
  auto resolve = [this](auto* fn, const char* name) {
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(real_.Resolve(name));
  };
  resolve(&api.ctx_get_current, "cuCtxGetCurrent");
  resolve(&api.ctx_push_current, "cuCtxPushCurrent_v2");
  resolve(&api.ctx_pop_current, "cuCtxPopCurrent_v2");
  resolve(&api.ctx_synchronize, "cuCtxSynchronize");
  resolve(&api.stream_get_ctx, "cuStreamGetCtx");
  resolve(&api.stream_query, "cuStreamQuery");
  resolve(&api.stream_synchronize, "cuStreamSynchronize");
  resolve(&api.stream_is_capturing, "cuStreamIsCapturing");
  resolve(&api.exchange_capture_mode, "cuThreadExchangeStreamCaptureMode");
  if (!api.complete()) Log().warn("the real driver lacks stream queries: in-flight work is not tracked");
  inflight_.SetApi(api);
}

CUresult Runtime::Init(unsigned int flags) {
  if (status_ != CUDA_SUCCESS) return status_;
  MutexLock lock(init_call_mutex_);
  if (initialised_) return init_result_;
  // The MPS share is read by the driver at its cuInit: the arbiter's choice must be in the
  // environment before it (mps_share.h). Asked once per process image (a failed cuInit that
  // the application retries does not ask again).
  if (!share_chosen_) {
    share_chosen_ = true;
    placement_ = ChooseMpsShare(config_).placement;
  }
  const CUresult result = real_.cuInit(flags);
  if (result != CUDA_SUCCESS) return result;  // not memoised: the caller may retry
  if (placement_ && !gpu_map_.mapped()) {
    if (const std::optional<CUdevice> device = FindCorunDevice(real_, *placement_))
      gpu_map_.Map(placement_->gpu, *device);
  }
  if (device_uuids_.empty()) device_uuids_ = DeviceUuids(real_);
  // After the driver's own exit handlers (registered inside its cuInit), so ours runs first:
  // at exit the control socket stops swapping and the arbiter client says goodbye. Once per
  // process image: a forked child inherits it and it acts on the child's own Runtime.
  static bool atexit_registered = false;
  if (!atexit_registered) {
    atexit_registered = true;
    std::atexit(&Runtime::AtExit);
  }
  init_result_ = CreateMemory();
  initialised_ = true;
  if (init_result_ == CUDA_SUCCESS && !config_.arbiter_socket.empty()) StartArbiterClient();
  if (init_result_ == CUDA_SUCCESS && !config_.control_socket.empty()) {
    control_ = new ControlServer();
    const std::string error = control_->Start(config_.control_socket, [this](const std::string& r) {
      std::istringstream in(r);
      std::string verb;
      in >> verb;
      memory::SwapStats stats;
      CUresult res = CUDA_SUCCESS;
      // The process is exiting (the driver may already be torn down): no more swaps.
      if ((verb == "swap-out" || verb == "swap-in" || verb == "prepare") &&
          exiting_.load(std::memory_order_acquire)) {
        return std::string("error process exiting");
      }
      if (verb == "swap-out") {
        res = SwapOut(&stats);
      } else if (verb == "swap-in") {
        int device = 0;
        if (!(in >> device)) return std::string("error usage: swap-in <device>");
        // The application's contexts are on its device: memory elsewhere would be out of their
        // reach (a move to another GPU is the arbiter's checkpoint path, docs/multi-gpu.md).
        if (device != AppDevice()) return std::string("error CUDA_ERROR_INVALID_DEVICE");
        res = SwapIn(device, &stats);
      } else if (verb == "stats") {
        return "ok " + StatsLine();
      } else if (verb == "prepare") {
        uint64_t pinned = 0;
        const auto start = std::chrono::steady_clock::now();
        res = memory()->PrepareStaging(&pinned);
        if (res != CUDA_SUCCESS) return std::string("error ") + ResultName(res);
        return "ok pinned=" + std::to_string(pinned) + " pin_ns=" +
               std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::steady_clock::now() - start)
                                  .count());
      } else {
        return std::string("error unknown command (swap-out | swap-in <device> | stats | prepare)");
      }
      if (res != CUDA_SUCCESS) return std::string("error ") + ResultName(res);
      std::ostringstream out;
      out << "ok bytes=" << stats.bytes << " pieces=" << stats.physical_pieces
          << " elapsed_ns=" << stats.elapsed.count() << " copy_ns=" << stats.copy_time.count()
          << " drain_ns=" << stats.drain_time.count() << " pin_ns=" << stats.pin_time.count()
          << " unmap_ns=" << stats.unmap_time.count();
      return out.str();
    });
    if (!error.empty()) Log().error("{}", error);
  }
  return init_result_;
}

CUresult Runtime::CreateMemory() {
  memory::DeviceApi api;
  std::string missing;
  const CUresult resolved = memory::ResolveDeviceApi(
      [](const char* name, void* ctx) { return static_cast<RealDriver*>(ctx)->Resolve(name); },
      &real_, &api, &missing);
  if (resolved != CUDA_SUCCESS) {
    Log().error("the real driver lacks {}: the vGPU memory manager cannot work", missing);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  memory::VgpuMemoryOptions options;
  options.device = InitialDevice();
  int count = 0;
  using GetCount = CUresult (*)(int*);
  const auto get_count = reinterpret_cast<GetCount>(real_.Resolve("cuDeviceGetCount"));
  if (get_count != nullptr && get_count(&count) == CUDA_SUCCESS && options.device >= count) {
    Log().error("GSHARE_DEVICE={} but the driver has {} device(s)", options.device, count);
    return CUDA_ERROR_INVALID_DEVICE;
  }
  options.keep_freed_bytes = config_.keep_freed_bytes;
  if (config_.vgpu_memory_bytes) {
    options.quota_bytes = *config_.vgpu_memory_bytes;
  } else {
    size_t total = 0;
    const CUresult r = real_.cuDeviceTotalMem_v2 != nullptr
                           ? real_.cuDeviceTotalMem_v2(&total, options.device)
                           : CUDA_ERROR_NOT_SUPPORTED;
    if (r != CUDA_SUCCESS) {
      Log().error("cannot read device {}'s memory size: {}", options.device, ResultName(r));
      return r;
    }
    options.quota_bytes = total;
  }
  {
    MutexLock lock(swap_mutex_);
    swapped_from_ = options.device;
    app_device_.store(options.device, std::memory_order_release);
  }
  memory_.store(new memory::VgpuMemory(api, options), std::memory_order_release);
  Log().info("vGPU memory: {} on device {}", gshare::FormatByteSize(options.quota_bytes),
             options.device);
  return CUDA_SUCCESS;
}

void Runtime::SetDeviceGpus(std::span<const uint32_t> gpus) {
  const bool before = gpu_map_.mapped();
  gpu_map_.SetTable(gpus);
  std::string view;
  bool identity = true;
  for (size_t d = 0; d < gpus.size(); ++d) {
    view += (d == 0 ? "" : ", ") + std::to_string(d) + " = " +
            (gpus[d] == shm::kNoGpu ? std::string("not managed") : "GPU " + std::to_string(gpus[d]));
    identity = identity && gpus[d] == d;
  }
  if (!identity || before)
    Log().info("this process's devices as the arbiter's GPUs: {}", view);
}

CUdevice Runtime::InitialDevice() const {
  return gpu_map_.mapped() ? gpu_map_.mapped_device() : config_.device;
}

uint32_t Runtime::MpsShare() {
  // The driver says whether this process came up as an MPS client of its device (a missing or
  // unreachable daemon makes it run time-sliced, silently); its share is the one its
  // environment gave the driver before cuInit (100 when unset).
  using GetDevice = CUresult (*)(CUdevice*, int);
  using GetAttribute = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  const auto get_device = reinterpret_cast<GetDevice>(real_.Resolve("cuDeviceGet"));
  const auto get_attr = reinterpret_cast<GetAttribute>(real_.Resolve("cuDeviceGetAttribute"));
  CUdevice dev = 0;
  int enabled = 0;
  if (get_device == nullptr || get_attr == nullptr || get_device(&dev, InitialDevice()) != CUDA_SUCCESS ||
      get_attr(&enabled, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, dev) != CUDA_SUCCESS || enabled != 1)
    return 0;
  const char* pct = std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  if (pct == nullptr || *pct == '\0') return 100;
  unsigned share = 0;
  const char* end = pct + std::strlen(pct);
  const auto [p, ec] = std::from_chars(pct, end, share);
  if (ec != std::errc() || p != end || share < 1 || share > 100) {
    Log().warn("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE='{}' is not a percentage: reported as not an MPS "
               "client (it never co-runs)", pct);
    return 0;
  }
  Log().info("MPS client of device {} at a {}% compute share", InitialDevice(), share);
  return share;
}

void Runtime::StartArbiterClient() {
  ArbiterClientOptions options;
  options.socket_path = config_.arbiter_socket;
  options.quota_bytes = memory()->counters().quota_bytes;
  if (config_.slo_ms) options.slo_ms = *config_.slo_ms;
  options.function_name = config_.function_name;
  options.mps_share = MpsShare();
  options.compute_demand_pct = config_.compute_demand_pct;
  options.bandwidth_demand_pct = config_.bandwidth_demand_pct;
  options.pod_name = config_.pod_name;
  options.pod_namespace = config_.pod_namespace;
  options.register_retry_max = std::chrono::nanoseconds(config_.register_retry_max_ns);
  options.register_retry_initial =
      std::min(options.register_retry_initial, options.register_retry_max);
  options.idle_release = std::chrono::microseconds(config_.idle_release_us);
  options.fail_closed = config_.arbiter_fail_closed;
  options.prepare_swap_out = config_.prepin;
  options.use_lease = config_.lease;
  options.log = &Log();
  arbiter_host_ = new ArbiterHost(this);
  shm::Status first_error;
  auto client = ArbiterClient::Start(options, arbiter_host_, &first_error);
  if (!client.ok()) {
    Log().warn("arbiter at {} not usable ({}): running stand-alone (quota only, no time slicing)",
               config_.arbiter_socket, client.status().ToString());
    return;
  }
  if ((*client)->registered_once()) {
    Log().info("registered with the arbiter at {} as client {}", config_.arbiter_socket,
               (*client)->client_id());
  } else {
    Log().warn("arbiter at {} not reachable yet ({}): running stand-alone (quota only, no time "
               "slicing) and registering in the background (back-off up to {} ms, "
               "GSHARE_REGISTER_RETRY)",
               config_.arbiter_socket, first_error.ToString(),
               config_.register_retry_max_ns / 1'000'000);
  }
  arbiter_.store(client->release(), std::memory_order_release);  // never destroyed
  // A normal exit says goodbye (a clean unregister instead of a "client death"): Runtime::AtExit,
  // registered by Init.
}

void Runtime::AtExit() {
  Runtime* rt = instance_.load(std::memory_order_acquire);
  if (rt != nullptr) rt->exiting_.store(true, std::memory_order_release);
  ArbiterClient* client = rt != nullptr ? rt->arbiter() : nullptr;
  // Bounded: the service thread gets 200 ms to finish what it is doing (a swap in progress).
  if (client != nullptr) client->SayGoodbye("process exiting", std::chrono::milliseconds(200));
}

CUdevice Runtime::LastDevice() const {
  memory::VgpuMemory* mem = memory();
  MutexLock lock(swap_mutex_);
  if (mem == nullptr) return 0;
  const memory::VgpuMemoryCounters c = mem->counters();
  // Not `c.resident ? c.device : swapped_from_`: clang 14's analysis misses a guarded member
  // read through a conditional lvalue.
  if (c.resident) return c.device;
  return swapped_from_;
}

bool Runtime::MoveEmptyVgpu(CUdevice device) {
  memory::VgpuMemory* mem = memory();
  if (mem == nullptr) return false;
  MutexLock lock(swap_mutex_);
  const memory::VgpuMemoryCounters c = mem->counters();
  if (!c.resident || c.physical_handles != 0 || c.live_allocations != 0 || c.external_bytes != 0) {
    return false;
  }
  mem->Rehome(device);
  swapped_from_ = device;
  app_device_.store(device, std::memory_order_release);
  Log().info("the application's device is GPU {} (assigned by the arbiter)", device);
  return true;
}

void Runtime::Rehome(CUdevice device) {
  memory::VgpuMemory* mem = memory();
  if (mem == nullptr) return;
  MutexLock lock(swap_mutex_);
  const CUdevice old = app_device_.exchange(device, std::memory_order_acq_rel);
  if (old == device) return;
  mem->Rehome(device);
  swapped_from_ = device;
  Log().info("the driver moved this process from GPU {} to GPU {}: the vGPU and the "
             "application's device follow", old, device);
}

bool Runtime::OpenGateIfResident() {
  memory::VgpuMemory* mem = memory();
  MutexLock lock(swap_mutex_);
  if (mem == nullptr || !mem->resident()) return false;
  gate_.Open();
  return true;
}

CUresult Runtime::DrainForArbiter() {
  if (memory() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return inflight_.Drain();
}

CUresult Runtime::EndPrimaryContext(CUdevice dev, CUresult (*release_fn)(CUdevice)) {
  using GetState = CUresult (*)(CUdevice, unsigned int*, int*);
  using Retain = CUresult (*)(CUcontext*, CUdevice);
  static const auto get_state =
      reinterpret_cast<GetState>(real_.Resolve("cuDevicePrimaryCtxGetState"));
  static const auto retain = reinterpret_cast<Retain>(real_.Resolve("cuDevicePrimaryCtxRetain"));
  unsigned flags = 0;
  int active = 0;
  CUcontext primary = nullptr;
  // The context's handle, only while it is active (a retain would create an inactive one); our
  // extra retain is dropped at once with the real release, before the application's.
  if (get_state != nullptr && retain != nullptr && real_.cuDevicePrimaryCtxRelease_v2 != nullptr &&
      get_state(dev, &flags, &active) == CUDA_SUCCESS && active != 0 &&
      retain(&primary, dev) == CUDA_SUCCESS) {
    (void)real_.cuDevicePrimaryCtxRelease_v2(dev);
  }
  return inflight_.ReleasePrimary(
      primary, [&] { return release_fn(dev); },
      [&] { return get_state(dev, &flags, &active) == CUDA_SUCCESS && active != 0; });
}

void Runtime::SynchronizeBeforeFree() const {
  if (ctx_synchronize_ != nullptr) (void)ctx_synchronize_();  // no context: INVALID_CONTEXT
}

CUresult Runtime::AdmitSlow(unsigned* slot) {
  ArbiterClient* client = arbiter();
  for (;;) {
    // Arbiter mode: the client requests a swap-in when needed and waits for the token; the
    // gate opens on the grant (only while resident). A release may close it again before we
    // enter: retry. When the arbiter is gone (fail-open) Acquire says so and the stand-alone
    // path below admits us.
    if (client != nullptr && client->Acquire()) {
      if (gate_.TryEnter(slot)) return CUDA_SUCCESS;
      continue;
    }
    {
      MutexLock lock(swap_mutex_);  // waits out a running swap
      memory::VgpuMemory* mem = memory();
      if (gate_.closed() && mem != nullptr && !mem->resident()) {
        Log().info("submission while swapped out: swapping in on device {}", swapped_from_);
        memory::SwapStats stats;
        const CUresult r = mem->SwapIn(swapped_from_, &stats);
        if (r != CUDA_SUCCESS) {
          Log().error("automatic swap-in failed: {}", ResultName(r));
          return r;
        }
        gate_.Open();
      }
    }
    if (gate_.TryEnter(slot)) return CUDA_SUCCESS;
    if (client != nullptr) {
      // Stand-alone under a client: an arbiter may come back (the gate then stays closed until
      // a grant), so poll the client again instead of waiting for the gate.
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      continue;
    }
    gate_.WaitOpen();
    if (gate_.TryEnter(slot)) return CUDA_SUCCESS;
  }
}

CUresult Runtime::SwapOut(memory::SwapStats* stats, bool reopen_on_failure) {
  memory::VgpuMemory* mem = memory();
  if (mem == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  MutexLock lock(swap_mutex_);
  if (!mem->resident()) return mem->SwapOut(nullptr, stats);  // already out: zero stats
  const CUdevice device = mem->counters().device;
  gate_.Close();
  const CUresult r = mem->SwapOut([this] { return inflight_.Drain(); }, stats);
  if (r != CUDA_SUCCESS) {
    if (reopen_on_failure) gate_.Open();
    Log().error("swap-out failed: {}", ResultName(r));
    return r;
  }
  swapped_from_ = device;
  Log().info("swapped out {} in {} us", gshare::FormatByteSize(stats ? stats->bytes : 0),
             stats ? stats->elapsed.count() / 1000 : 0);
  return CUDA_SUCCESS;
}

CUresult Runtime::SwapIn(CUdevice device, memory::SwapStats* stats, bool open_gate) {
  memory::VgpuMemory* mem = memory();
  if (mem == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  MutexLock lock(swap_mutex_);
  const CUresult r = mem->SwapIn(device, stats);
  if (r != CUDA_SUCCESS) {
    Log().error("swap-in to device {} failed: {}", device, ResultName(r));
    return r;
  }
  if (app_device_.exchange(device, std::memory_order_acq_rel) != device) {
    Log().info("the application's device is now GPU {}", device);
  }
  if (open_gate) gate_.Open();
  return CUDA_SUCCESS;
}

std::string Runtime::StatsLine() const {
  memory::VgpuMemory* mem = memory();
  if (mem == nullptr) return "initialised=0";
  const memory::VgpuMemoryCounters c = mem->counters();
  std::ostringstream out;
  out << "quota=" << c.quota_bytes << " used=" << c.used_bytes << " requested="
      << c.requested_bytes << " external=" << c.external_bytes << " live=" << c.live_allocations
      << " resident=" << (c.resident ? 1 : 0) << " device=" << c.device
      << " swap_outs=" << c.swap_outs << " swap_ins=" << c.swap_ins
      << " out_of_memory=" << c.out_of_memory << " tracked=" << inflight_.tracked();
  return out.str();
}

// The atfork handlers hold init_mutex_ across fork(): taken in one handler, released in another
// (in the parent and in the child), which the analysis cannot follow.
void Runtime::PrepareFork() NO_THREAD_SAFETY_ANALYSIS { init_mutex_.Lock(); }

void Runtime::ParentAfterFork() NO_THREAD_SAFETY_ANALYSIS { init_mutex_.Unlock(); }

void Runtime::ChildAfterFork() NO_THREAD_SAFETY_ANALYSIS {
  // The child has only the forking thread; the parent's Runtime (driver objects, control thread,
  // swap state, arbiter client) does not apply to it. It is leaked, and the child starts afresh
  // (a child that uses CUDA registers with the arbiter as itself). What it inherited of the
  // parent's sockets and channel is dropped here — close and munmap only, no lock another
  // parent thread may have held — so it cannot keep the parent registered after the parent
  // dies, nor write the parent's channel.
  Runtime* old = instance_.exchange(nullptr, std::memory_order_acq_rel);
  if (old != nullptr) {
    if (old->control_ != nullptr) old->control_->CloseInherited();
    if (ArbiterClient* client = old->arbiter(); client != nullptr) client->DropInheritedAfterFork();
  }
  // The forking thread's cache named the parent's tracker (whose epoch the fresh one may
  // repeat) and slot: start it afresh too.
  ThisThread() = ThreadState{};
  init_mutex_.Unlock();
}

}  // namespace gshare::preload
