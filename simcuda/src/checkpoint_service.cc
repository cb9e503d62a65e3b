// The process checkpoint control channel (placeholder until the checkpoint API lands).
#include "driver.h"

namespace simcuda {
void StartCheckpointService() {}
void WaitIfLocked() {}
}  // namespace simcuda
