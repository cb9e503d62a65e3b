// The driver's process-wide state: configuration, devices, the shared registry and the primary
// contexts. Created by cuInit and never destroyed (entry points may run while the process exits).
// Thread-safety: Driver() may be called from any thread; the state it returns is immutable after
// cuInit except where a member says otherwise.
#ifndef SIMCUDA_SRC_DRIVER_H_
#define SIMCUDA_SRC_DRIVER_H_

#include <memory>
#include <mutex>
#include <vector>

#include "api.h"
#include "config.h"
#include "registry.h"

namespace simcuda {

struct PrimaryContext {
  CUctx_st* ctx = nullptr;  // created on first retain; the handle stays the same afterwards
  int refs = 0;             // guarded by DriverState::primary_mu
  unsigned flags = 0;
};

struct DeviceInfo {
  DeviceSpec spec;
  CUuuid uuid;
  int pci_bus;
};

struct DriverState {
  Config config;
  std::unique_ptr<Registry> registry;
  std::vector<DeviceInfo> devices;
  std::mutex primary_mu;
  std::vector<PrimaryContext> primary;  // one per device
};

// The state after a successful cuInit, else nullptr.
DriverState* Driver();
// cuInit's work: idempotent and thread-safe; a failure is sticky (as in the real driver).
CUresult InitDriver();
// CUDA_ERROR_NOT_INITIALIZED before cuInit, CUDA_ERROR_INVALID_DEVICE for a bad ordinal.
CUresult CheckDevice(CUdevice dev);
// At cuInit, for a process that is no MPS client: CUDA_VISIBLE_DEVICES (ordinals of the
// registry's devices) chooses the devices it sees, numbered from 0 in the list's order.
// CUDA_ERROR_NO_DEVICE when it leaves none.
CUresult ApplyVisibleDevices(DriverState* d);
inline CUresult CheckInit() { return Driver() != nullptr ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED; }
// Called at the start of every driver call that submits work or allocates: blocks while a
// process checkpoint holds this process locked.
void WaitIfLocked();

}  // namespace simcuda

#endif  // SIMCUDA_SRC_DRIVER_H_
