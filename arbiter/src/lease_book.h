// LeaseBook: where the sole tenant's lease offers stand (docs/arbiter.md, "The lease"). An
// offer is written into a client's channel (ArbiterChannel::OfferLease) and withdrawn by a
// compare-and-swap (RevokeLease); whatever competes for a GPU must first withdraw every offer on
// it. The book keeps, per GPU, the clients with an offer the arbiter has not yet seen end
// (revoked, taken and adopted, or the client gone), so that withdrawing them visits only those
// clients instead of every client of the node, and it gives a taken offer's GPU to its adoption.
// It is a superset of the offers outstanding in the channels: an entry whose offer already
// ended is found so when visited and dropped (CheckInvariants in the arbiter ties the two).
//
// Thread-safety: plain values, the arbiter's loop thread only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpu_ids.h"

namespace gshare::arbiter {

class LeaseBook {
 public:
  // An offer was written into client `client_id`'s channel for GPU index g (one per client: a
  // later offer replaces the entry).
  void Offered(uint32_t client_id, GpuIndex g);
  // The arbiter saw client `client_id`'s offer end (revoked, adopted, gone); no-op without one.
  void Ended(uint32_t client_id);
  // The GPU of client `client_id`'s offer, if the book has one.
  std::optional<GpuIndex> OfferGpu(uint32_t client_id) const;
  // The clients with an offer on g, in id order.
  std::vector<uint32_t> OffersOn(GpuIndex g) const;
  size_t offers() const { return by_client_.size(); }
  // "" when the two indices agree, else what is wrong.
  std::string CheckInvariants() const;

 private:
  std::map<uint32_t, GpuIndex> by_client_;
  std::map<uint32_t, std::set<uint32_t>> by_gpu_;  // GpuIndex value -> client ids
};

}  // namespace gshare::arbiter
