// Segment: reserve a VA range once; back, map and release its pieces on demand.
#include "segment.h"

namespace gshare::memory {

CUmemAllocationProp DevicePinnedProp(CUdevice device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

CUresult Segment::Reserve(const DeviceApi& api, uint64_t size, uint64_t piece_size,
                          uint64_t alignment, std::unique_ptr<Segment>* out) {
  if (size == 0 || piece_size == 0 || size % piece_size != 0) return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr base = 0;
  CUresult rc = api.mem_address_reserve(&base, size, alignment, 0, 0);
  if (rc != CUDA_SUCCESS) return rc;
  out->reset(new Segment(api, base, size, piece_size));
  return CUDA_SUCCESS;
}

Segment::Segment(const DeviceApi& api, CUdeviceptr base, uint64_t size, uint64_t piece_size)
    : api_(api), base_(base), size_(size), piece_size_(piece_size), pieces_(size / piece_size) {}

Segment::~Segment() {
  for (size_t i = 0; i < pieces_.size(); ++i) {
    if (pieces_[i].handle != 0) (void)Unback(i);
  }
  (void)api_.mem_address_free(base_, size_);
}

CUresult Segment::Back(size_t i, CUdevice device) {
  CUmemGenericAllocationHandle handle = 0;
  const CUresult rc = CreateAndMap(i, device, &handle);
  if (rc == CUDA_SUCCESS) Adopt(i, handle);
  return rc;
}

void Segment::Adopt(size_t i, CUmemGenericAllocationHandle handle) {
  pieces_[i].handle = handle;
  ++present_;
}

CUresult Segment::CreateAndMap(size_t i, CUdevice device,
                               CUmemGenericAllocationHandle* out) const {
  const CUmemAllocationProp prop = DevicePinnedProp(device);
  CUmemGenericAllocationHandle handle = 0;
  CUresult rc = api_.mem_create(&handle, piece_size_, &prop, 0);
  if (rc != CUDA_SUCCESS) return rc;
  const CUdeviceptr address = piece_address(i);
  rc = api_.mem_map(address, piece_size_, 0, handle, 0);
  if (rc != CUDA_SUCCESS) {
    (void)api_.mem_release(handle);
    return rc;
  }
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  rc = api_.mem_set_access(address, piece_size_, &access, 1);
  if (rc != CUDA_SUCCESS) {
    (void)api_.mem_unmap(address, piece_size_);
    (void)api_.mem_release(handle);
    return rc;
  }
  *out = handle;
  return CUDA_SUCCESS;
}

CUresult Segment::Unback(size_t i) {
  CUresult rc = api_.mem_unmap(piece_address(i), piece_size_);
  const CUresult release_rc = api_.mem_release(pieces_[i].handle);
  pieces_[i].handle = 0;
  --present_;
  return rc != CUDA_SUCCESS ? rc : release_rc;
}

}  // namespace gshare::memory
