// Co-running (docs/arbiter.md, "Co-running"): on the GPUs an operator marks for it, the arbiter
// grants the GPU to a set of functions at once instead of one holder at a time. This file holds
// who holds a GPU (`GpuHolders`: one client, or a co-run set), and the rules of who may join a
// set (`CorunBook`): members of one fault domain only, MPS clients only (a process that came up
// without MPS runs alone), at most `max_members`, none while the GPU or the pair backs off after
// a revocation. The arbiter revokes a set when a member's observed latency threatens its SLO:
// the others are asked to yield, the GPU serves exclusive slices for the back-off, and the pair
// stays apart for it. MPS serves one uid per server at a time: `ServerRefusal` keeps the share
// query from offering a GPU's server to a second uid; the memory promised with shares answered
// (`PromisedBytes`, `LargestPromisedSwappable`) keeps it from offering more pinned memory than
// the GPU has beside the vGPUs that must still be swapped in there.
//
// Thread-safety: plain values, used on the arbiter's loop only.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpu_ids.h"
#include "gshare/arbiter/config.h"

namespace gshare::arbiter {

// The clients holding one GPU's token: none, one (exclusive, as without co-running) or a co-run
// set. Small (at most the MPS client limit): a vector.
class GpuHolders {
 public:
  bool empty() const { return ids_.empty(); }
  size_t size() const { return ids_.size(); }
  bool Holds(uint32_t id) const { return std::find(ids_.begin(), ids_.end(), id) != ids_.end(); }
  // Some holder other than `id` (0: none): the one a grant to `id` would collide with.
  uint32_t Other(uint32_t id) const {
    for (uint32_t h : ids_)
      if (h != id) return h;
    return 0;
  }
  void Add(uint32_t id) {
    if (!Holds(id)) ids_.push_back(id);
  }
  void Remove(uint32_t id) { ids_.erase(std::remove(ids_.begin(), ids_.end(), id), ids_.end()); }
  void Clear() { ids_.clear(); }
  const std::vector<uint32_t>& ids() const { return ids_; }

 private:
  std::vector<uint32_t> ids_;
};

// What the co-run rules need to know of a client.
struct CorunMember {
  uint32_t id = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;      // the function's name (back-offs are per pair of functions)
  uint32_t mps_share = 0;  // its process's MPS compute share in percent; 0: not an MPS client
  // It must run its next burst alone, to give its co-run bursts a reference (corun_judge.h).
  bool needs_solo = false;
  // Its GPU's MPS daemon (the arbiter's) has not confirmed that it serves the process
  // (Client::mps_check): its reported share is not believed yet.
  bool unconfirmed = false;
};

// The fault domain key of a member under `domain` (members of one set share it).
uint64_t FaultDomainKey(const CorunMember& m, CorunFaultDomain domain);

// Device memory the context of an MPS client at `share_pct` percent holds on its GPU outside its
// vGPU (CorunConfig::mps_context_bytes; shares above 100 count as 100), rounded up to a MiB; 0
// for a process that is not an MPS client (share 0).
uint64_t MpsContextBytes(const CorunConfig& config, uint32_t share_pct);

class CorunBook {
 public:
  CorunBook() = default;
  // `ordinals`: the managed GPUs' ordinals, by index. Marks the ones config.gpus names.
  CorunBook(const CorunConfig& config, const std::vector<DeviceOrdinal>& ordinals);

  bool Enabled(GpuIndex g) const { return enabled_.contains(g) && enabled_[g]; }
  bool AnyEnabled() const { return std::find(enabled_.begin(), enabled_.end(), true) != enabled_.end(); }
  const CorunConfig& config() const { return config_; }

  // "" when `joiner` may run on GPU index g beside every one of `holders` now, else why not.
  std::string JoinRefusal(GpuIndex g, const CorunMember& joiner,
                          const std::vector<CorunMember>& holders, uint64_t now_ns) const;

  // Revokes co-running on g: the GPU serves exclusive slices until now + back-off, and each
  // pair of `victim` with the others stays apart that long.
  void Revoke(GpuIndex g, const CorunMember& victim, const std::vector<CorunMember>& others,
              uint64_t now_ns);
  // When g may form sets again (0: now).
  uint64_t BackoffUntil(GpuIndex g) const { return gpu_backoff_.contains(g) ? gpu_backoff_[g] : 0; }
  uint64_t revocations() const { return revocations_; }
  // Pair back-offs remembered. Bounded whatever names tenants choose: a revocation backs its GPU
  // off for as long as its pairs, so each GPU revokes at most once per back-off, adding fewer
  // than max_members pairs, and pairs whose back-off is over are forgotten at the next
  // revocation or join: at most 2 x GPUs x (max_members - 1).
  size_t tracked_pairs() const { return pair_backoff_.size(); }
  uint64_t joins() const { return joins_; }
  void CountJoin() { ++joins_; }

  // One user per MPS server (docs/arbiter.md, "One user per MPS server"): MPS serves the clients
  // of one uid at a time on a server, whatever corun_fault_domain says; a process of another uid
  // that reaches the server fails at cuInit (simcuda: CUDA_ERROR_MPS_SERVER_NOT_READY) or waits
  // until the server is idle (a real GPU). Why a process of `uid` must not be given an MPS share
  // on GPU index g now ("" when it may): `served` holds the uids of g's MPS clients the arbiter
  // knows (its registered clients on g reporting an MPS share); a co-run share answered to
  // another uid for g within kShareAnswerHoldNs counts as served too (its process joins the
  // server at its cuInit, before it registers).
  std::string ServerRefusal(GpuIndex g, uid_t uid, const std::vector<uid_t>& served,
                            uint64_t now_ns) const;
  // A co-run share for GPU index g was answered to a process of `uid` at now_ns.
  void NoteShareAnswered(GpuIndex g, uid_t uid, uint64_t now_ns);
  // How long an answered share stands for its process's MPS client before it registers.
  static constexpr uint64_t kShareAnswerHoldNs = 10'000'000'000;

  // Memory promised with share answers for GPU index g, until the process registers
  // (ForgetPromise) or kShareAnswerHoldNs passes: `pinned` bytes that will not leave g (an MPS
  // client's context, and its quota unless mps_swaps_verified) and a `swappable` vGPU that must
  // still find room beside what is pinned (a process answered "not co-run", or an MPS client's
  // quota that can be parked). Further shares are answered only beside both. One promise per
  // process: a second query of the same pid replaces the first. Bounded by the processes that
  // may query within the hold (registration_rate_per_uid).
  // `corun`: the answer was a co-run share for g (its process becomes an MPS client of g's
  // server at its cuInit, and registers on g: CorunGpuOf).
  void NotePromise(GpuIndex g, pid_t pid, uint64_t pinned, uint64_t swappable, uint64_t now_ns,
                   bool corun = false);
  void ForgetPromise(pid_t pid) { promises_.erase(pid); }
  // The GPU a co-run share was last answered for to process `pid`, if within kAnsweredGpuKeepNs
  // and it has not registered since: an MPS client's registration goes there, whichever GPU
  // would be chosen for it now (its process is that GPU's server's client from its cuInit on).
  std::optional<GpuIndex> CorunGpuOf(pid_t pid, uint64_t now_ns) const;
  // How long the GPU of a co-run answer is kept for its process's registration: longer than the
  // memory hold, for a process whose cuInit is slow (a real driver's, with many modules).
  static constexpr uint64_t kAnsweredGpuKeepNs = 300'000'000'000;
  // The pinned bytes promised on g within the hold, leaving out `except`'s own promise.
  uint64_t PromisedBytes(GpuIndex g, pid_t except, uint64_t now_ns) const;
  // The largest swappable vGPU promised on g within the hold, leaving out `except`'s.
  uint64_t LargestPromisedSwappable(GpuIndex g, pid_t except, uint64_t now_ns) const;

 private:
  using Pair = std::pair<std::string, std::string>;  // function names, ordered
  static Pair PairOf(const std::string& a, const std::string& b) {
    return a < b ? Pair{a, b} : Pair{b, a};
  }
  // Forgets pair back-offs that are over (bounded by the pairs revoked within one back-off).
  void Prune(uint64_t now_ns) const;

  CorunConfig config_;
  ByGpu<bool> enabled_;
  ByGpu<uint64_t> gpu_backoff_;  // exclusive until (ns)
  mutable std::map<Pair, uint64_t> pair_backoff_;
  // The last co-run share answered per GPU: to whom, and when (0: none).
  struct Answered {
    uid_t uid = 0;
    uint64_t at_ns = 0;
  };
  ByGpu<Answered> answered_;
  struct Promise {
    GpuIndex gpu;
    uint64_t pinned = 0;
    uint64_t swappable = 0;
    uint64_t at_ns = 0;
    bool corun = false;
  };
  std::map<pid_t, Promise> promises_;
  uint64_t revocations_ = 0;
  uint64_t joins_ = 0;
};

}  // namespace gshare::arbiter
