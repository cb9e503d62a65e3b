// SwapOrders (swap_orders.h): a client's queue of swap orders, its deadline and back-off.
#include "swap_orders.h"

#include <algorithm>

namespace gshare::arbiter {
namespace {

// How long moving `bytes` takes at `bytes_per_s`, in ns (no overflow for any quota).
uint64_t TransferNs(uint64_t bytes, uint64_t bytes_per_s) {
  constexpr uint64_t kNsPerS = 1'000'000'000ULL;
  return bytes / bytes_per_s * kNsPerS + bytes % bytes_per_s * kNsPerS / bytes_per_s;
}

}  // namespace

const Transfer* SwapOrders::InFlight() const {
  return !q_.empty() && q_.front().issued ? &q_.front() : nullptr;
}

bool SwapOrders::HasSwapInTo(GpuIndex g) const {
  return std::any_of(q_.begin(), q_.end(), [g](const Transfer& t) {
    return t.op == shm::SwapOp::kSwapIn && t.gpu == g;
  });
}

bool SwapOrders::Queue(const Transfer& t) {
  q_.push_back(t);
  return q_.size() == 1;
}

void SwapOrders::QueueFirst(const Transfer& t) {
  q_.insert(InFlight() != nullptr ? q_.begin() + 1 : q_.begin(), t);
}

Transfer SwapOrders::Pop() {
  Transfer t = q_.front();
  q_.pop_front();
  return t;
}

bool SwapOrders::DropWaitingSwapInsTo(GpuIndex g) {
  bool for_policy = false;
  for (auto it = q_.begin(); it != q_.end();) {
    if (it->op == shm::SwapOp::kSwapIn && it->gpu == g && !it->issued) {
      for_policy |= it->for_policy;
      it = q_.erase(it);
    } else {
      ++it;
    }
  }
  return for_policy;
}

uint64_t SwapOrders::DeadlineNs(uint64_t quota, uint64_t window_ns) const {
  const Transfer* t = InFlight();
  if (t == nullptr) return UINT64_MAX;
  const uint64_t first = t->issued_ns + window_ns + TransferNs(quota, kMinBytesPerS);
  if (t->progress_ns == 0) return first;
  const uint64_t cap = t->issued_ns + window_ns + TransferNs(quota, kProgressMinBytesPerS);
  return std::min(cap, std::max(first, t->progress_ns + window_ns));
}

bool SwapOrders::NoteProgress(uint32_t seq, uint64_t bytes, uint64_t now_ns) {
  if (InFlight() == nullptr) return false;
  Transfer& t = q_.front();
  if (seq != t.order_seq || bytes == t.progress_bytes) return false;
  t.progress_bytes = bytes;
  t.progress_ns = now_ns;
  return true;
}

uint64_t SwapOrders::RetryAtNs() const {
  if (!FrontWaiting() || q_.front().not_before_ns == 0) return UINT64_MAX;
  return q_.front().not_before_ns;
}

uint64_t SwapOrders::Failed() {
  ++failures_;
  return std::min(kRetryMaxNs, kRetryBaseNs << std::min<uint32_t>(failures_ - 1, 6));
}

std::string SwapOrders::Check() const {
  for (size_t i = 1; i < q_.size(); ++i)
    if (q_[i].issued) return "has an order in flight behind order " + std::to_string(i);
  return "";
}

}  // namespace gshare::arbiter
