// ArbiterHost: the runtime's side of the ShimHost interface (arbiter_client.h) — what the
// arbiter client needs from libgshare.so: the submission gate, the drain of in-flight work, the
// activity marks and the vGPU memory manager's swaps.
//
// Ownership: created by Runtime::Init when GSHARE_ARBITER_SOCKET is set; process-lifetime
// (never destroyed, like the Runtime and the client). Thread-safety: every method is called
// from the client's threads; swaps are serialised by the runtime's swap mutex.
// In arbiter mode only a grant opens the gate: SwapOut/SwapIn here never open it.
#pragma once

#include "arbiter_client.h"

namespace gshare::preload {

class Runtime;

class ArbiterHost final : public ShimHost {
 public:
  // REQUIRES: runtime.memory() is non-null (Init has created the memory manager).
  explicit ArbiterHost(Runtime* runtime) : runtime_(runtime) {}
  void CloseGate() override;
  void OpenGate() override;
  bool Drain() override;
  bool TakeActivity() override;
  bool LastActivityWasInFlightOnly() const override;
  bool Capturing() override;
  SwapOutcome SwapOut() override;
  SwapOutcome SwapIn(uint32_t gpu) override;
  void SetSwapProgressSink(SwapProgressSink sink) override;
  void PrepareSwapOut() override;
  bool Resident() const override;
  uint64_t ResidentBytes() const override;
  uint32_t CurrentGpu() const override;
  void GrantedOn(uint32_t gpu) override;
  void MoveEmptyTo(uint32_t gpu) override;
  std::vector<std::array<uint8_t, 16>> DeviceUuids() const override;
  uint32_t CurrentDevice() const override;
  void SetDeviceGpus(std::span<const uint32_t> gpus) override;

 private:
  Runtime* runtime_;
  bool in_flight_only_ = false;  // the service thread's (TakeActivity's caller's) only
};

}  // namespace gshare::preload
