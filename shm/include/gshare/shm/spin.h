// Bounded spinning for the handoff paths (the next-in-line client waiting for its grant, the
// arbiter waiting for a draining holder's release). Spins with a CPU pause for a short while,
// then keeps polling but yields the CPU between polls (sched_yield) so that on an
// oversubscribed machine the process being waited for can run. Gives up after `budget_ns`.
// Thread-safe; no allocation; at most one sched_yield per poll.
#pragma once

#include <sched.h>

#include <cstdint>

#include "gshare/shm/atomic_word.h"
#include "gshare/shm/futex.h"

namespace gshare::shm {

// Pure spinning lasts this long before polls start yielding.
inline constexpr uint64_t kPureSpinNs = 5'000;

// Polls `done()` until it returns true (-> true) or `budget_ns` elapsed (-> false).
template <typename Done>
bool SpinUntil(Done done, uint64_t budget_ns) {
  const uint64_t start = MonotonicNowNs();
  for (uint32_t i = 0;; ++i) {
    if (done()) return true;
    // Reading the clock costs ~20 ns; check it every 16 polls.
    if ((i & 15U) == 15U) {
      const uint64_t elapsed = MonotonicNowNs() - start;
      if (elapsed >= budget_ns) return false;
      if (elapsed >= kPureSpinNs) {
        ::sched_yield();
        continue;
      }
    }
    CpuRelax();
  }
}

}  // namespace gshare::shm
