// Modules and functions (placeholder until the module API lands).
#include "api.h"

namespace simcuda {
void ReleaseContextModules(CUctx_st* ctx) { (void)ctx; }
}  // namespace simcuda
