// SwapOrders: one client's queue of swap orders (docs/arbiter.md, "Driving the policy"): the
// order in flight at the front (at most one: invariant 4), the ones waiting behind it, the
// deadline of the order in flight (which follows the progress the client reports), and the
// back-off of a swap-in or restore that failed. The loop (arbiter_schedule.cc) decides what to
// queue and issues orders through the channel; this class keeps the queue's rules and its
// arithmetic, so they are tested without sockets (tests/arbiter/swap_orders_test.cc).
// Pure logic on the caller's clock; one thread per object (the arbiter's loop).
#pragma once

#include <cstdint>
#include <deque>
#include <string>

#include "gpu_ids.h"
#include "gshare/policy/policy.h"
#include "gshare/shm/channel.h"

namespace gshare::arbiter {

struct Transfer {
  shm::SwapOp op = shm::SwapOp::kNone;
  GpuIndex gpu;              // target for swap-in, source for swap-out
  bool for_policy = false;   // answer the policy with SwapDone when acknowledged
  policy::SwapKind kind = policy::SwapKind::kIn;
  bool issued = false;       // the order is in the channel (else: waiting for room)
  uint32_t order_seq = 0;
  uint64_t issued_ns = 0;
  uint64_t not_before_ns = 0;  // a retried swap-in waits until then (back-off)
  // The client's last progress report for this order (bytes), and when the arbiter saw it
  // change (0: never): the order's deadline follows progress (SwapOrders::DeadlineNs).
  uint64_t progress_bytes = 0;
  uint64_t progress_ns = 0;
  // A swap-in onto another GPU than the process's: its contexts were moved (or had nothing to
  // move) by the driver worker; the order can go out (arbiter_driver.cc, StartMove).
  bool contexts_moved = false;
};

class SwapOrders {
 public:
  // A swap order not acknowledged within the window (swap_order_timeout) + quota /
  // kMinBytesPerS is taken as a client that stopped reading its channel. Generous: a loaded
  // node moves >1 GB/s. A node can be far slower (a sanitizer build, host memory pressure, many
  // GPUs swapping at once), so a client that reports progress is given a window more from each
  // change the arbiter sees, up to quota / kProgressMinBytesPerS in all: a stalled swap is still
  // caught, and a client that fakes progress is caught at that cap.
  static constexpr uint64_t kMinBytesPerS = 128ULL << 20;
  static constexpr uint64_t kProgressMinBytesPerS = 8ULL << 20;
  // A failed swap-in (device out of memory: a process outside gshare holds memory) or restore
  // is retried after 50 ms, doubling with each failure in a row up to 2 s.
  static constexpr uint64_t kRetryBaseNs = 50'000'000;
  static constexpr uint64_t kRetryMaxNs = 2'000'000'000;

  bool empty() const { return q_.empty(); }
  size_t size() const { return q_.size(); }
  const Transfer& front() const { return q_.front(); }
  Transfer& front() { return q_.front(); }
  std::deque<Transfer>::const_iterator begin() const { return q_.begin(); }
  std::deque<Transfer>::const_iterator end() const { return q_.end(); }

  // The order in flight (issued, at the front), or nullptr.
  const Transfer* InFlight() const;
  // The front order waits to go out (not issued yet).
  bool FrontWaiting() const { return !q_.empty() && !q_.front().issued; }
  // Whether some order, in flight or waiting, is a swap-in onto g.
  bool HasSwapInTo(GpuIndex g) const;

  // Appends t. True when it is the only order: the caller tries to issue it at once.
  bool Queue(const Transfer& t);
  // Puts t before the waiting orders (a swap-out that must come first: off another GPU before a
  // swap-in, a drain's evacuation). Precondition: no order in flight (else it goes behind it).
  void QueueFirst(const Transfer& t);
  // Removes and returns the front order (acknowledged, refused or done without an order).
  Transfer Pop();
  // Drops the waiting swap-ins onto g (g was drained: they never go out). True if one of them
  // was the policy's (it is answered as done).
  bool DropWaitingSwapInsTo(GpuIndex g);

  // When the order in flight is late, for a client of `quota` bytes with `window_ns` of
  // swap_order_timeout (UINT64_MAX: none in flight).
  uint64_t DeadlineNs(uint64_t quota, uint64_t window_ns) const;
  // The client's progress report (shm::SwapProgress: the order's seq and bytes moved) seen at
  // `now_ns`: true when it is about the order in flight and moved since last seen (its deadline
  // is then later, DeadlineNs).
  bool NoteProgress(uint32_t seq, uint64_t bytes, uint64_t now_ns);
  // When the waiting front order may go out after a failure (UINT64_MAX: it is not waiting for a
  // back-off).
  uint64_t RetryAtNs() const;

  // Failures in a row of swap-ins and restores (the back-off's exponent).
  uint32_t failures() const { return failures_; }
  // A swap-in or restore failed at `now_ns`: counted, and the time before the next try returned.
  uint64_t Failed();
  void Succeeded() { failures_ = 0; }

  // Invariant 4: at most one order in flight, and only the front one ("" when it holds).
  std::string Check() const;

 private:
  std::deque<Transfer> q_;
  uint32_t failures_ = 0;
};

}  // namespace gshare::arbiter
