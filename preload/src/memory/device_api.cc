// Fills the DeviceApi table from a resolver and reports missing symbols by name.
#include "gshare/memory/device_api.h"

namespace gshare::memory {

bool DeviceApi::complete() const {
#define GSHARE_MEMORY_CHECK_MEMBER(member, name, fn) \
  if (member == nullptr) return false;
  GSHARE_MEMORY_DEVICE_API(GSHARE_MEMORY_CHECK_MEMBER)
#undef GSHARE_MEMORY_CHECK_MEMBER
  return true;
}

CUresult ResolveDeviceApi(DriverResolver resolve, void* ctx, DeviceApi* api,
                          std::string* missing) {
  if (resolve == nullptr || api == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::string absent;
#define GSHARE_MEMORY_RESOLVE_MEMBER(member, name, fn)                       \
  api->member = reinterpret_cast<decltype(api->member)>(resolve(name, ctx)); \
  if (api->member == nullptr) {                                              \
    if (!absent.empty()) absent += ' ';                                      \
    absent += name;                                                          \
  }
  GSHARE_MEMORY_DEVICE_API(GSHARE_MEMORY_RESOLVE_MEMBER)
#undef GSHARE_MEMORY_RESOLVE_MEMBER
  if (missing != nullptr) *missing = absent;
  return absent.empty() ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

}  // namespace gshare::memory
