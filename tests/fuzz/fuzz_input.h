// Helpers shared by the fuzz targets: a reader that turns the fuzzer's bytes into typed values
// (never reading past the end: missing bytes read as zero) and FUZZ_CHECK, which aborts on a
// violated property so libFuzzer and the corpus replay report it as a crash.
// Header-only; a FuzzInput is used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: property violated: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace gshare::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  size_t remaining() const { return size_ - pos_; }

  // The next sizeof(T) bytes as a T (zero-filled past the end).
  template <typename T>
  T Take() {
    T value{};
    const size_t n = remaining() < sizeof(T) ? remaining() : sizeof(T);
    if (n > 0) std::memcpy(&value, data_ + pos_, n);
    pos_ += n;
    return value;
  }

  // A value in [0, bound) (0 when bound is 0).
  uint64_t Below(uint64_t bound) { return bound == 0 ? 0 : Take<uint64_t>() % bound; }

  // Up to `max_len` bytes ending at the next '\n' (not included) or at the end.
  std::string Line(size_t max_len) {
    std::string out;
    while (pos_ < size_ && out.size() < max_len) {
      const char ch = static_cast<char>(data_[pos_++]);
      if (ch == '\n') break;
      out.push_back(ch);
    }
    return out;
  }

  // Everything not consumed yet.
  std::string_view Rest() {
    std::string_view rest(reinterpret_cast<const char*>(data_) + pos_, remaining());
    pos_ = size_;
    return rest;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace gshare::fuzz
