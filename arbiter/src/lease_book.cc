// Where the sole tenant's lease offers stand (see lease_book.h).
#include "lease_book.h"

namespace gshare::arbiter {

void LeaseBook::Offered(uint32_t client_id, GpuIndex g) {
  Ended(client_id);
  by_client_[client_id] = g;
  by_gpu_[g.value()].insert(client_id);
}

void LeaseBook::Ended(uint32_t client_id) {
  const auto it = by_client_.find(client_id);
  if (it == by_client_.end()) return;
  const auto on = by_gpu_.find(it->second.value());
  if (on != by_gpu_.end()) {
    on->second.erase(client_id);
    if (on->second.empty()) by_gpu_.erase(on);
  }
  by_client_.erase(it);
}

std::optional<GpuIndex> LeaseBook::OfferGpu(uint32_t client_id) const {
  const auto it = by_client_.find(client_id);
  if (it == by_client_.end()) return std::nullopt;
  return it->second;
}

std::vector<uint32_t> LeaseBook::OffersOn(GpuIndex g) const {
  const auto it = by_gpu_.find(g.value());
  if (it == by_gpu_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

std::string LeaseBook::CheckInvariants() const {
  size_t listed = 0;
  for (const auto& [gpu, ids] : by_gpu_) {
    if (ids.empty()) return "GPU index " + std::to_string(gpu) + " lists no offer but is kept";
    for (const uint32_t id : ids) {
      const auto it = by_client_.find(id);
      if (it == by_client_.end() || it->second.value() != gpu)
        return "client " + std::to_string(id) + " is listed on GPU index " + std::to_string(gpu) +
               " without its offer there";
      ++listed;
    }
  }
  if (listed != by_client_.size())
    return std::to_string(by_client_.size()) + " offers, " + std::to_string(listed) +
           " listed by GPU";
  return {};
}

}  // namespace gshare::arbiter
