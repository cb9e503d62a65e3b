// GatedSubmission's slow path (see submission.h).
#include "hooks/submission.h"

namespace gshare::preload {

uint64_t AdmitSlowPacked(Runtime& rt) {
  unsigned slot = 0;
  const CUresult r = rt.AdmitSlow(&slot);
  return r == CUDA_SUCCESS ? slot : static_cast<uint64_t>(r) << 32;
}

}  // namespace gshare::preload
