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
#include <utility>
#include <vector>

#include "gpu_ids.h"

namespace gshare::arbiter {

// One client's side of the lease beyond its offer: a take the policy has not granted yet, such
// a burst that ended before the grant (answered with its BurstEnd when the grant comes), and a
// lease word found holding a value nobody may write (the client is disconnected at its next
// poll).
class ClientLease {
 public:
  // Its take was adopted: it holds by lease until the policy grants the burst.
  void Taken() { unconfirmed_ = true; }
  bool unconfirmed() const { return unconfirmed_; }
  // The policy granted (or otherwise answered) the burst it holds by lease: true when one was
  // unconfirmed.
  bool Confirm() { return std::exchange(unconfirmed_, false); }
  // It released the GPU before the policy's grant while still in the taken burst (the pending
  // grant serves it).
  void ReleasedInBurst() { unconfirmed_ = false; }
  // It released the GPU before the policy's grant with the taken burst over, after `gpu_ns`.
  void EndedBeforeGrant(uint64_t gpu_ns) {
    unconfirmed_ = false;
    ended_gpu_ns_ = gpu_ns;
  }
  bool ended_before_grant() const { return ended_gpu_ns_.has_value(); }
  // The ended burst's GPU time, once (then it is answered).
  std::optional<uint64_t> TakeEnded() { return std::exchange(ended_gpu_ns_, std::nullopt); }
  void Scribbled() { malformed_ = true; }
  bool malformed() const { return malformed_; }

 private:
  bool unconfirmed_ = false;
  std::optional<uint64_t> ended_gpu_ns_;
  bool malformed_ = false;
};

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
