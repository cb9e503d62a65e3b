// libpreload_probe_driver_scope.so: a library whose own dependency is the driver (libcuda.so.1)
// and not libgshare.so. dlsym on its handle searches only its own dependency scope, so
// preload_probe finds the driver's functions themselves there, past the shim's one-device view:
// how swap.cc's `where` reports which physical GPUs hold this process's primary contexts.
#include <cuda.h>

#include <cstdint>

// Referenced so that the link keeps libcuda.so.1 as a NEEDED entry of this library.
extern "C" __attribute__((visibility("default"))) uintptr_t gshare_probe_driver_scope() {
  return reinterpret_cast<uintptr_t>(&cuDriverGetVersion);
}
