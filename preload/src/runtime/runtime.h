// Runtime: the shim's per-process state — configuration, the real driver, the vGPU memory
// manager, the submission gate and the debug control server — created on the first hooked call
// (cuGetProcAddress and dlsym may come before cuInit) and re-created in a forked child.
//
// Lifetime: process-lifetime, never destroyed (hooks can run while the process exits). After
// fork() the child drops the parent's Runtime (leaked: its driver objects belong to the parent)
// and builds a fresh one on its next hooked call.
//
// Thread-safety: Get() is lock-free once initialised (one atomic acquire load). Everything else
// is thread-safe as documented per method.
//
// Lock order: the shim's mutexes, outermost first. A thread holding one may take only those
// below it (an arrow: "held while taking"); the leaves take nothing. Members name the mutex
// that guards them (GUARDED_BY), functions the ones they need or take (REQUIRES / EXCLUDES);
// clang checks them in scripts/thread_safety.sh. It checks an order edge (ACQUIRED_BEFORE) only
// where one function holds both mutexes (2 → 4 here); the edges between classes are checked by
// review and the tests (TSan, scripts/sanitize.sh), not by the compiler.
//   1. Runtime::init_mutex_ (static): the first initialisation (InitSlow → Setup) and fork
//      (PrepareFork takes it, the after-fork handlers release it). Nothing else is taken under
//      it (Setup loads the driver, whose dlsym calls pass through the hook unlocked).
//   2. Runtime::init_call_mutex_ (Init): held over the real cuInit, the memory manager's
//      creation and the arbiter client's start (registration) → 3 and everything below
//      (2 → 4 is declared ACQUIRED_BEFORE).
//   3. ArbiterClient::mu_: held while the client asks the host about residency, opens the gate
//      or follows a move (ShimHost::Resident / OpenGate / GrantedOn / TakeActivity /
//      Capturing) → 4, 5, 6, 7. Never taken under 4-7: the swap progress sink, called under 5,
//      uses atomics only.
//   4. Runtime::swap_mutex_: swaps, the automatic swap-in, residency-checked gate opening,
//      re-homing → 5, 6, 7 (and 7 through the swap-out's drain).
//   5. VgpuMemory's FairMutex (Impl::mu_): every memory-manager call → 7 (the drain callback,
//      called inside SwapOut). Its inner Mutex is a leaf held only in lock()/unlock().
//   6. SubmissionGate::mutex_: a leaf (orders closed_'s store with WaitOpen's check).
//   7. InflightTracker::mu_: a leaf, held across the real driver's stream/context calls.
//   Leaves taken on their own: ExternalTracker::mutex_ (hooks), backtrace's RateLimit::mu_.
// The submission fast path takes none of them (SubmissionGate::TryEnter is atomics only; the
// in-flight tracker's Note takes 7 only for a stream new to the thread).
#pragma once

#include <cuda.h>

#include <atomic>
#include <optional>
#include <string>

#include "gshare/common/thread_annotations.h"
#include "gshare/memory/vgpu_memory.h"
#include "runtime/config.h"
#include "runtime/gpu_device_map.h"
#include "runtime/inflight_tracker.h"
#include "runtime/mps_share.h"
#include "runtime/real_driver.h"
#include "runtime/submission_gate.h"

namespace gshare::preload {

class ArbiterClient;
class ArbiterHost;
class ControlServer;

class Runtime {
 public:
  // The process's Runtime, initialising it on first use. Never null.
  static Runtime& Get() {
    Runtime* rt = instance_.load(std::memory_order_acquire);
    return rt != nullptr ? *rt : InitSlow();
  }
  // The process's Runtime if it exists already, else null (never initialises: the gated calls'
  // fast path, whose slow path calls Get()).
  static Runtime* Loaded() { return instance_.load(std::memory_order_acquire); }

  // True while this thread is inside the first initialisation (opening the real driver may run
  // its constructors, which may call dlsym): the dlsym hook then passes straight through
  // instead of waiting for the initialisation it is part of.
  static bool InitialisingOnThisThread();

  [[nodiscard]] const Config& config() const { return config_; }
  [[nodiscard]] const RealDriver& real() const { return real_; }
  // CUDA_SUCCESS, or what hooks return instead of calling the driver: CUDA_ERROR_INVALID_VALUE
  // for a malformed configuration, CUDA_ERROR_NOT_INITIALIZED when the driver is missing.
  [[nodiscard]] CUresult status() const { return status_; }
  [[nodiscard]] bool driver_loaded() const { return real_.handle != nullptr; }
  SubmissionGate& gate() { return gate_; }
  // The streams and contexts the application submits to (in-flight queries and the drain).
  InflightTracker& inflight() { return inflight_; }

  // The cuInit hook: real cuInit, then the vGPU memory manager (quota from GSHARE_VGPU_MEMORY or
  // the device's size) and the control server. Idempotent; thread-safe.
  CUresult Init(unsigned int flags) EXCLUDES(init_call_mutex_, swap_mutex_);

  // The memory manager; null before a successful Init. Lock-free.
  [[nodiscard]] memory::VgpuMemory* memory() const {
    return memory_.load(std::memory_order_acquire);
  }

  // Slow path of a submission whose TryEnter failed. Stand-alone: waits for a running swap to
  // finish and swaps the vGPU back in (on the device it left) when it is out. With an arbiter
  // (GSHARE_ARBITER_SOCKET): the arbiter client's Acquire (requested swap-in, then the token).
  // Returns CUDA_SUCCESS once the caller is inside the gate (it must then Exit(*slot)), or the
  // swap-in's error.
  CUresult AdmitSlow(unsigned* slot) EXCLUDES(swap_mutex_);

  // Swap control (the debug control socket, tests and the arbiter client). Serialised by one
  // mutex. SwapOut closes the gate, drains, and leaves the gate closed on success (on failure it
  // reopens it only if `reopen_on_failure`). SwapIn opens the gate on success if `open_gate`
  // (in arbiter mode only a grant opens it).
  CUresult SwapOut(memory::SwapStats* stats, bool reopen_on_failure = true) EXCLUDES(swap_mutex_);
  CUresult SwapIn(CUdevice device, memory::SwapStats* stats, bool open_gate = true)
      EXCLUDES(swap_mutex_);
  // The device the vGPU is on, or the one it left when swapped out.
  CUdevice LastDevice() const EXCLUDES(swap_mutex_);
  // The one device the application sees (cuDeviceGet ordinal 0, docs/multi-gpu.md): the
  // physical CUdevice of the GPU the vGPU lives on — GSHARE_DEVICE stand-alone, the GPU the
  // arbiter assigned at registration (inside cuInit), then wherever a swap-in put the vGPU
  // (a move to another GPU moves the process's contexts first: the arbiter's checkpoint
  // restore). Meaningful after a successful Init. Lock-free.
  [[nodiscard]] CUdevice AppDevice() const { return app_device_.load(std::memory_order_acquire); }
  // The arbiter's GPU ordinals as this process's devices (gpu_device_map.h): the identity,
  // unless its driver shows it only some GPUs or in another order (CUDA_VISIBLE_DEVICES, its
  // container's devices, an MPS daemon's one GPU as device 0). Set inside cuInit (a co-run
  // answer) and by each registration's reply (the arbiter client's thread); lock-free to read.
  [[nodiscard]] const GpuDeviceMap& gpu_map() const { return gpu_map_; }
  // The driver's UUID of each of the process's devices (gpu_device_map.h, DeviceUuids), read
  // once inside cuInit; empty before, or when the driver cannot say.
  [[nodiscard]] const std::vector<std::array<uint8_t, 16>>& device_uuids() const { return device_uuids_; }
  // A registration's reply: the process's device d is the arbiter's GPU gpus[d].
  void SetDeviceGpus(std::span<const uint32_t> gpus);
  // Registration assigned `device` to this vGPU: if it holds no memory at all (nothing
  // allocated, nothing kept), it is re-homed there without a driver call (no context is made on
  // the GPU it leaves) and true is returned; otherwise false (the caller swaps it).
  bool MoveEmptyVgpu(CUdevice device) EXCLUDES(swap_mutex_);
  // The arbiter granted GPU `device` while the vGPU was on another one: the driver's checkpoint
  // restore moved the whole process there (contexts and memory). The memory manager and the
  // application's device follow (logged). Thread-safe (swap mutex).
  void Rehome(CUdevice device) EXCLUDES(swap_mutex_);
  // Opens the submission gate if (and only if) the vGPU is resident, checked under the swap
  // mutex so no swap can be between its check and the opening: a submission is never admitted
  // while the vGPU's memory is unmapped. Returns whether the gate is open.
  bool OpenGateIfResident() EXCLUDES(swap_mutex_);
  // cuMemFree's implicit synchronisation: waits for the calling thread's current context (no-op
  // without one). The driver's cuMemFree does this before releasing memory; VgpuMemory::Free
  // unmaps at once, so the hook calls this first.
  void SynchronizeBeforeFree() const;
  // Waits for the application's in-flight work: every stream it submitted to, in every context
  // it used (InflightTracker::Drain; from any thread). For the arbiter client's token release
  // and the swap-out. CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: a stream is being captured (its
  // work is not drained).
  CUresult DrainForArbiter();
  // The cuDevicePrimaryCtxRelease/Reset hooks: runs `release_fn(dev)` and forgets the primary
  // context's tracked streams if it is gone afterwards.
  CUresult EndPrimaryContext(CUdevice dev, CUresult (*release_fn)(CUdevice));
  // The arbiter client; null when stand-alone (no socket, or no arbiter at cuInit).
  [[nodiscard]] ArbiterClient* arbiter() const {
    return arbiter_.load(std::memory_order_acquire);
  }
  // One line of "key=value" counters for the control socket's "stats" command.
  std::string StatsLine() const;

  // Fork handling (pthread_atfork); not for other callers. PrepareFork takes init_mutex_ and
  // the after-fork handlers release it: a lock held from one function to another, which the
  // analysis cannot follow (NO_THREAD_SAFETY_ANALYSIS on the three, runtime.cc).
  static void PrepareFork();
  static void ParentAfterFork();
  static void ChildAfterFork();

 private:
  Runtime() = default;
  static Runtime& InitSlow() EXCLUDES(init_mutex_);
  void Setup();
  CUresult CreateMemory() REQUIRES(init_call_mutex_) EXCLUDES(swap_mutex_);
  // The device the vGPU starts on: GSHARE_DEVICE, or the co-run GPU's device when mapped.
  [[nodiscard]] CUdevice InitialDevice() const;
  // The compute share of this process's MPS client in percent, 0 when it is not one.
  uint32_t MpsShare() REQUIRES(init_call_mutex_);
  void StartArbiterClient() REQUIRES(init_call_mutex_) EXCLUDES(swap_mutex_);
  void SetUpInflightTracker();
  // atexit (registered by Init, in every mode): marks the process exiting (the control socket
  // then refuses swaps) and the arbiter client says goodbye (see ArbiterClient::SayGoodbye).
  static void AtExit();

  static std::atomic<Runtime*> instance_;
  // The first initialisation (InitSlow, Setup) and fork (held across it). The outermost lock.
  static Mutex init_mutex_;

  Config config_;
  RealDriver real_;
  CUresult status_ = CUDA_SUCCESS;
  PFN_cuCtxSynchronize_v2000 ctx_synchronize_ = nullptr;
  SubmissionGate gate_;
  InflightTracker inflight_;
  Mutex init_call_mutex_ ACQUIRED_BEFORE(swap_mutex_);  // serialises Init
  bool initialised_ GUARDED_BY(init_call_mutex_) = false;
  bool share_chosen_ GUARDED_BY(init_call_mutex_) = false;  // ChooseMpsShare ran
  std::optional<CorunPlacement> placement_ GUARDED_BY(init_call_mutex_);  // its co-run GPU
  GpuDeviceMap gpu_map_;  // thread-safe (its own snapshot pointer)
  std::vector<std::array<uint8_t, 16>> device_uuids_;  // written once in Init, before any reader
  CUresult init_result_ GUARDED_BY(init_call_mutex_) = CUDA_SUCCESS;
  std::atomic<memory::VgpuMemory*> memory_{nullptr};
  mutable Mutex swap_mutex_;  // serialises swaps and auto swap-in
  CUdevice swapped_from_ GUARDED_BY(swap_mutex_) = 0;
  std::atomic<CUdevice> app_device_{0};  // written under swap_mutex_ (and by Init)
  std::atomic<bool> exiting_{false};     // set by AtExit
  ControlServer* control_ = nullptr;     // owned, never destroyed
  ArbiterHost* arbiter_host_ = nullptr;  // owned, never destroyed
  std::atomic<ArbiterClient*> arbiter_{nullptr};  // owned, never destroyed
};

// CUresult -> its name ("CUDA_ERROR_OUT_OF_MEMORY"), for logs and the control socket.
const char* ResultName(CUresult result);

}  // namespace gshare::preload
