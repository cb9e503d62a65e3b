// The arbiter's two names for a GPU, as types that cannot be mixed up:
//  - GpuIndex: a position in the arbiter's own table of the GPUs it manages (gpus_, the
//    reservation book, co-running, MPS daemons, telemetry), 0..n-1. The policy's GpuId is this
//    index (policy::PolicyConfig::gpus is built in the same order).
//  - DeviceOrdinal: the CUDA device ordinal, what the driver, clients (registration, grants,
//    swap orders, leases), the event ring, the control socket and /metrics name.
// They coincide only when the arbiter manages every GPU: one configured with `gpus = [1, 3]`
// has indices 0 and 1 for ordinals 1 and 3. Each is built explicitly from a number and gives
// it back with value(), at the boundaries (wire, JSON, policy, driver); nothing converts one
// into the other but the arbiter's table (ArbiterImpl::IndexOf, GpuState::ordinal).
// ByGpu<T> is a vector indexed by GpuIndex only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace gshare::arbiter {

template <typename Tag>
class GpuNumber {
 public:
  constexpr GpuNumber() = default;
  constexpr explicit GpuNumber(uint32_t v) : v_(v) {}
  constexpr uint32_t value() const { return v_; }
  friend constexpr auto operator<=>(GpuNumber, GpuNumber) = default;
  friend constexpr bool operator==(GpuNumber, GpuNumber) = default;

 private:
  uint32_t v_ = 0;
};

using GpuIndex = GpuNumber<struct GpuIndexTag>;
using DeviceOrdinal = GpuNumber<struct DeviceOrdinalTag>;

// The indices 0..n-1, for range-for.
class GpuIndices {
 public:
  class Iterator {
   public:
    explicit constexpr Iterator(uint32_t i) : i_(i) {}
    constexpr GpuIndex operator*() const { return GpuIndex{i_}; }
    constexpr Iterator& operator++() {
      ++i_;
      return *this;
    }
    constexpr bool operator==(const Iterator&) const = default;

   private:
    uint32_t i_;
  };
  explicit constexpr GpuIndices(size_t n) : n_(static_cast<uint32_t>(n)) {}
  constexpr Iterator begin() const { return Iterator(0); }
  constexpr Iterator end() const { return Iterator(n_); }

 private:
  uint32_t n_;
};

template <typename T>
class ByGpu {
 public:
  ByGpu() = default;
  explicit ByGpu(std::vector<T> v) : v_(std::move(v)) {}
  decltype(auto) operator[](GpuIndex g) { return v_[g.value()]; }
  decltype(auto) operator[](GpuIndex g) const { return v_[g.value()]; }
  bool contains(GpuIndex g) const { return g.value() < v_.size(); }
  size_t size() const { return v_.size(); }
  bool empty() const { return v_.empty(); }
  GpuIndices indices() const { return GpuIndices(v_.size()); }
  void push_back(T t) { v_.push_back(std::move(t)); }
  void resize(size_t n) { v_.resize(n); }
  auto begin() { return v_.begin(); }
  auto end() { return v_.end(); }
  auto begin() const { return v_.begin(); }
  auto end() const { return v_.end(); }

 private:
  std::vector<T> v_;
};

}  // namespace gshare::arbiter

template <typename Tag>
struct std::hash<gshare::arbiter::GpuNumber<Tag>> {
  size_t operator()(gshare::arbiter::GpuNumber<Tag> g) const noexcept {
    return std::hash<uint32_t>{}(g.value());
  }
};

// Formatted as the bare number ("GPU {}").
template <typename Tag>
struct fmt::formatter<gshare::arbiter::GpuNumber<Tag>> : fmt::formatter<uint32_t> {
  template <typename FormatContext>
  auto format(gshare::arbiter::GpuNumber<Tag> g, FormatContext& ctx) const {
    return fmt::formatter<uint32_t>::format(g.value(), ctx);
  }
};
