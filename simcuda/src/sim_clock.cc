// Simulated clock (see sim_clock.h).
#include "sim_clock.h"

#include <time.h>

#include <atomic>
#include <cerrno>

namespace simcuda {
namespace {
std::atomic<double> g_scale{1.0};

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}
}  // namespace

void SetTimeScale(double scale) { g_scale.store(scale, std::memory_order_relaxed); }
double TimeScale() { return g_scale.load(std::memory_order_relaxed); }

uint64_t SimNowNs() {
  return static_cast<uint64_t>(static_cast<double>(MonotonicNs()) / TimeScale());
}

void SleepUntilSim(uint64_t sim_ns) {
  uint64_t real = static_cast<uint64_t>(static_cast<double>(sim_ns) * TimeScale());
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(real / 1000000000ull);
  ts.tv_nsec = static_cast<long>(real % 1000000000ull);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

uint64_t TransferNs(double bytes, double bytes_per_s) {
  if (bytes_per_s <= 0 || bytes <= 0) return 0;
  return static_cast<uint64_t>(bytes / bytes_per_s * 1e9);
}

}  // namespace simcuda
