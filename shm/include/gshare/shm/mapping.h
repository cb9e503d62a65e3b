// Mapping: sole owner of one mmap()ed region (a channel or an event ring); munmap()s it on
// destruction. Move-only. Thread-safety: the object itself is like a pointer; what is mapped
// follows the rules of the layout living there.
#pragma once

#include <cstddef>
#include <utility>

#include "gshare/shm/status.h"

namespace gshare::shm {

class Mapping {
 public:
  Mapping() = default;
  ~Mapping() { Reset(); }
  Mapping(Mapping&& other) noexcept
      : addr_(std::exchange(other.addr_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  Mapping& operator=(Mapping&& other) noexcept {
    if (this != &other) {
      Reset();
      addr_ = std::exchange(other.addr_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  // Maps `size` bytes of `fd` from offset 0, MAP_SHARED, read-write or read-only.
  // The fd may be closed afterwards; the mapping stays valid.
  static Result<Mapping> MapShared(int fd, size_t size, bool writable);

  void* data() const { return addr_; }
  size_t size() const { return size_; }
  bool valid() const { return addr_ != nullptr; }
  void Reset();

 private:
  void* addr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace gshare::shm
