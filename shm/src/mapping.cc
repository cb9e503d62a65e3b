// Mapping: mmap/munmap ownership.
#include "gshare/shm/mapping.h"

#include <sys/mman.h>

#include <cerrno>

namespace gshare::shm {

Result<Mapping> Mapping::MapShared(int fd, size_t size, bool writable) {
  if (fd < 0 || size == 0) return Status(StatusCode::kInvalidArgument, "mmap: bad fd or size");
  const int prot = writable ? (PROT_READ | PROT_WRITE) : PROT_READ;
  void* addr = ::mmap(nullptr, size, prot, MAP_SHARED, fd, 0);
  if (addr == MAP_FAILED) return Status::FromErrno("mmap", errno);
  Mapping m;
  m.addr_ = addr;
  m.size_ = size;
  return m;
}

void Mapping::Reset() {
  if (addr_ != nullptr) ::munmap(addr_, size_);
  addr_ = nullptr;
  size_ = 0;
}

}  // namespace gshare::shm
