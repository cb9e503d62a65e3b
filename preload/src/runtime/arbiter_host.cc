// The runtime's ShimHost for the arbiter client (see arbiter_host.h).
#include "runtime/arbiter_host.h"

#include <utility>

#include "runtime/runtime.h"

namespace gshare::preload {
namespace {

SwapOutcome Outcome(CUresult r, const memory::SwapStats& stats) {
  SwapOutcome out;
  out.ok = r == CUDA_SUCCESS;
  out.bytes = stats.bytes;
  out.duration_ns = static_cast<uint64_t>(stats.elapsed.count());
  return out;
}

}  // namespace

void ArbiterHost::CloseGate() { runtime_->gate().Close(); }

// Only while resident: a grant (or the arbiter's loss) that arrives while the vGPU is swapped out
// leaves the gate closed, and the next submission asks for a swap-in first.
void ArbiterHost::OpenGate() { (void)runtime_->OpenGateIfResident(); }

bool ArbiterHost::Drain() { return runtime_->DrainForArbiter() == CUDA_SUCCESS; }

// Submissions since the last call, or work still in flight on a tracked stream (queried only
// when nothing was submitted: one cuStreamQuery per tracked stream).
bool ArbiterHost::TakeActivity() {
  in_flight_only_ = false;
  if (runtime_->gate().TakeActivity()) return true;
  in_flight_only_ = runtime_->inflight().Busy();
  return in_flight_only_;
}

bool ArbiterHost::LastActivityWasInFlightOnly() const { return in_flight_only_; }

bool ArbiterHost::Capturing() { return runtime_->inflight().Capturing(); }

SwapOutcome ArbiterHost::SwapOut() {
  memory::SwapStats stats;
  const CUresult r = runtime_->SwapOut(&stats, /*reopen_on_failure=*/false);
  return Outcome(r, stats);
}

SwapOutcome ArbiterHost::SwapIn(uint32_t gpu) {
  memory::SwapStats stats;
  const CUdevice device = runtime_->gpu_map().DeviceOf(gpu);
  if (device == GpuDeviceMap::kNotVisible) return Outcome(CUDA_ERROR_INVALID_DEVICE, stats);
  const CUresult r = runtime_->SwapIn(device, &stats, /*open_gate=*/false);
  return Outcome(r, stats);
}

void ArbiterHost::SetSwapProgressSink(SwapProgressSink sink) {
  runtime_->memory()->SetSwapProgressCallback(std::move(sink));
}

void ArbiterHost::PrepareSwapOut() { (void)runtime_->memory()->PrepareStaging(); }

bool ArbiterHost::Resident() const { return runtime_->memory()->resident(); }

uint64_t ArbiterHost::ResidentBytes() const {
  const memory::VgpuMemoryCounters c = runtime_->memory()->counters();
  return c.resident ? c.backed_bytes : 0;
}

uint32_t ArbiterHost::CurrentGpu() const { return runtime_->gpu_map().GpuOf(runtime_->LastDevice()); }

void ArbiterHost::MoveEmptyTo(uint32_t gpu) {
  const CUdevice device = runtime_->gpu_map().DeviceOf(gpu);
  if (device == GpuDeviceMap::kNotVisible || !runtime_->MoveEmptyVgpu(device)) ShimHost::MoveEmptyTo(gpu);
}

std::vector<std::array<uint8_t, 16>> ArbiterHost::DeviceUuids() const { return runtime_->device_uuids(); }

uint32_t ArbiterHost::CurrentDevice() const { return static_cast<uint32_t>(runtime_->LastDevice()); }

void ArbiterHost::SetDeviceGpus(std::span<const uint32_t> gpus) { runtime_->SetDeviceGpus(gpus); }

// One atomic load and a scan of at most 16 entries (GpuDeviceMap) when nothing moved.
void ArbiterHost::GrantedOn(uint32_t gpu) {
  const CUdevice device = runtime_->gpu_map().DeviceOf(gpu);
  if (device != GpuDeviceMap::kNotVisible && runtime_->AppDevice() != device) runtime_->Rehome(device);
}

}  // namespace gshare::preload
