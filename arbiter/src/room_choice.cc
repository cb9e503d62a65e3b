// Which idle vGPUs to swap out to make room for a swap-in (see room_choice.h).
#include "room_choice.h"

#include <algorithm>

namespace gshare::arbiter {

std::vector<uint32_t> ChooseRoom(std::vector<RoomCandidate> candidates, uint64_t available,
                                 uint64_t need, uint64_t now_ns) {
  std::vector<uint32_t> chosen;
  if (available >= need) return chosen;  // room is on its way
  uint64_t all = available;
  for (const RoomCandidate& c : candidates) all += c.bytes;
  if (all < need) return chosen;  // futile: nothing is evicted
  auto cost = [now_ns](const RoomCandidate& c) {
    const double idle_s = static_cast<double>(now_ns - std::min(now_ns, c.last_use_ns)) / 1e9;
    return static_cast<double>(c.bytes) / (idle_s + 0.1);
  };
  std::stable_sort(
      candidates.begin(), candidates.end(),
      [&](const RoomCandidate& a, const RoomCandidate& b) { return cost(a) < cost(b); });
  for (const RoomCandidate& c : candidates) {
    if (available >= need) break;
    chosen.push_back(c.client_id);
    available += c.bytes;
  }
  return chosen;
}

}  // namespace gshare::arbiter
