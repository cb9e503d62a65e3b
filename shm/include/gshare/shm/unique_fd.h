// UniqueFd: sole owner of one file descriptor (socket, memfd, eventfd); closes it on
// destruction. Move-only. Thread-safety: like a plain int; one owner at a time.
#pragma once

#include <unistd.h>

#include <utility>

namespace gshare::shm {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(other.Release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }
  // Gives up ownership; the caller must close the returned fd.
  [[nodiscard]] int Release() { return std::exchange(fd_, -1); }
  // Closes the owned fd (if any) and takes ownership of `fd`.
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace gshare::shm
