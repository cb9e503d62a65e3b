// ReservationBook: the arbiter's account of device memory promised on each GPU (invariants 1, 2
// and 6 of arbiter_impl.h). A GPU's reserved bytes are exactly the sum of its holders' bytes: the
// quotas of clients whose memory is (or is about to be) on it, the contexts of MPS clients on it
// (held while their processes live, resident or not), and orphans — live processes the arbiter
// disconnected that still hold their memory. Nothing else writes these numbers, so the
// sums cannot drift from the holders; CheckInvariants() says so in tests and debug builds.
// Knows nothing of sockets, clients' channels or the policy: unit-tested on its own
// (tests/arbiter/reservation_book_test.cc).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpu_ids.h"

namespace gshare::arbiter {

class ReservationBook {
 public:
  // `usable`: by GPU index, the bytes the arbiter may promise (its memory less the reserve).
  explicit ReservationBook(std::vector<uint64_t> usable = {});

  GpuIndices gpus() const { return gpus_.indices(); }
  size_t gpu_count() const { return gpus_.size(); }
  uint64_t usable(GpuIndex g) const { return gpus_[g].usable; }
  uint64_t reserved(GpuIndex g) const { return gpus_[g].reserved; }
  uint64_t orphaned(GpuIndex g) const { return gpus_[g].orphaned; }
  uint64_t peak_reserved(GpuIndex g) const { return gpus_[g].peak; }
  // Times a reservation took GPU g past its usable bytes (only an orphan's new bytes can: a
  // process thawed while leaving holds its memory again, whether or not it fits).
  uint64_t overshoot_events(GpuIndex g) const { return gpus_[g].overshoot_events; }
  // What is left to promise on g (0 while overshot).
  uint64_t unreserved(GpuIndex g) const;
  bool Fits(GpuIndex g, uint64_t bytes) const;

  // A client's reservation: `bytes` on GPU g, unless it has one already (false then: a client
  // holds at most one). Never refused for want of room: callers check Fits() first, so a client
  // reservation never overshoots (invariant 1).
  bool ReserveClient(uint32_t client_id, GpuIndex g, uint64_t bytes);
  // Releases a client's reservation; false when it had none.
  bool ReleaseClient(uint32_t client_id);
  std::optional<GpuIndex> ClientGpu(uint32_t client_id) const;
  uint64_t ClientBytes(uint32_t client_id) const;  // 0 when none
  // Clients reserved on GPU g, in id order.
  std::vector<uint32_t> ClientsOn(GpuIndex g) const;
  size_t clients() const { return clients_.size(); }

  // A client's context memory (an MPS client's: docs/arbiter.md, "MPS context memory"): `bytes`
  // on GPU g from its registration until it leaves, whether or not its vGPU is resident. Like an
  // orphan's bytes it is never refused, since the process holds that memory already: reserving
  // it past usable counts an overshoot. false when the client has one already.
  bool ReserveContext(uint32_t client_id, GpuIndex g, uint64_t bytes);
  bool ReleaseContext(uint32_t client_id);          // false when it had none
  uint64_t ContextBytes(uint32_t client_id) const;  // 0 when none
  // Registered clients' context bytes on g (an orphan's are in its own bytes).
  uint64_t contexts(GpuIndex g) const { return gpus_[g].contexts; }

  // Orphans (invariant 6). HandToOrphan moves a client's reservation and its context, whichever
  // it has, to orphan `orphan_id` (the GPU's reserved bytes do not change); false when it had
  // neither (or, which never happens, the two on different GPUs). AddOrphan reserves
  // bytes nothing reserved (a thawed process holding its memory again), counting an overshoot
  // when they do not fit. An orphan id is used once.
  bool HandToOrphan(uint32_t client_id, uint32_t orphan_id);
  void AddOrphan(uint32_t orphan_id, GpuIndex g, uint64_t bytes);
  bool ReleaseOrphan(uint32_t orphan_id);
  std::optional<GpuIndex> OrphanGpu(uint32_t orphan_id) const;
  uint64_t OrphanBytes(uint32_t orphan_id) const;  // 0 when none
  size_t orphans() const { return orphans_.size(); }

  // "" when every GPU's reserved and orphaned bytes are the sums of its holders', and reserved
  // exceeds usable only with an overshoot counted; else the first violation, in words.
  std::string CheckInvariants() const;

 private:
  struct Gpu {
    uint64_t usable = 0;
    uint64_t reserved = 0;
    uint64_t orphaned = 0;
    uint64_t contexts = 0;
    uint64_t peak = 0;
    uint64_t overshoot_events = 0;
  };
  struct Entry {
    GpuIndex gpu;
    uint64_t bytes = 0;
  };
  void Add(GpuIndex g, uint64_t bytes);
  void Remove(GpuIndex g, uint64_t bytes);

  ByGpu<Gpu> gpus_;
  std::map<uint32_t, Entry> clients_;  // by client id
  std::map<uint32_t, Entry> contexts_;  // by client id
  std::map<uint32_t, Entry> orphans_;  // by orphan id
};

}  // namespace gshare::arbiter
