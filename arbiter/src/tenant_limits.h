// TenantLimits: what the arbiter allows each tenant (docs/arbiter.md, "Limits per tenant"):
// clients per uid and per process, a registration rate per uid (a token bucket), a back-off
// for a uid whose holders keep ignoring preemption without being checkpointable, and a cap on
// the MPS termination commands (terminate_client through a GPU's MPS daemon) one uid's clients
// may cause per window. It remembers a
// uid only while that matters (clients, a back-off in force, a bucket not yet full), so its
// memory follows the live tenants. Knows nothing of sockets or clients: the arbiter tells it who
// registered and who left (tests/arbiter/tenant_limits_test.cc).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <string>

namespace gshare::arbiter {

struct TenantLimitsConfig {
  uint32_t max_clients_per_uid = 0;        // 0 = unlimited
  uint32_t max_clients_per_pid = 0;        // 0 = unlimited
  uint32_t registration_rate_per_uid = 0;  // per second, bursts of twice as many; 0 = unlimited
  // MPS terminations one uid may cause within `mps_termination_window_ns` (sliding); 0 = no cap.
  uint32_t mps_terminations_per_uid = 0;
  uint64_t mps_termination_window_ns = 60'000'000'000;
};

class TenantLimits {
 public:
  // Back-off after the second unenforceable disconnection within kQuietNs: 1 s, 2 s, 4 s, ...
  // at most kBackoffMaxNs; one alone costs nothing (a tenant's one bad process does not lock out
  // its other functions); a quiet kQuietNs forgets the count.
  static constexpr uint64_t kBackoffBaseNs = 1'000'000'000;
  static constexpr uint64_t kBackoffMaxNs = 300'000'000'000;
  static constexpr uint64_t kQuietNs = 600'000'000'000;

  explicit TenantLimits(TenantLimitsConfig config = {}) : config_(config) {}

  enum class Verdict : uint8_t { kAllowed, kBackoff, kLimit };
  // Whether process `pid` of `uid` may register now; an allowed registration takes a token of
  // the uid's rate. `why`: the refusal in words, naming the setting.
  Verdict Check(uid_t uid, pid_t pid, uint64_t now_ns, std::string* why);
  // A registration of `pid` (`uid`) was accepted / its client left.
  void Added(uid_t uid, pid_t pid);
  void Removed(uid_t uid, pid_t pid, uint64_t now_ns);
  // A client of `uid` was disconnected as unenforceable; the back-off it started (0: none).
  uint64_t Unenforceable(uid_t uid, uint64_t now_ns);
  // Whether a client of `uid` may be terminated through an MPS daemon now; an allowed one is
  // counted against the uid's cap. false: the cap is reached within the window, `why` says so
  // naming the settings (the caller disconnects the client without a daemon command).
  bool AllowMpsTermination(uid_t uid, uint64_t now_ns, std::string* why);

  size_t tracked_uids() const { return uids_.size(); }
  size_t tracked_pids() const { return pids_.size(); }
  uint32_t clients_of_uid(uid_t uid) const;

 private:
  struct Uid {
    uint32_t clients = 0;
    double tokens = 0;  // the registration rate's bucket
    uint64_t refill_ns = 0;
    uint32_t unenforceable = 0;  // consecutive unenforceable disconnections
    uint64_t last_unenforceable_ns = 0;
    uint64_t backoff_until_ns = 0;
    std::deque<uint64_t> mps_terminations;  // when, within the window (at most the cap)
  };
  void MaybeForget(uid_t uid, uint64_t now_ns);

  TenantLimitsConfig config_;
  std::map<uid_t, Uid> uids_;
  std::map<pid_t, uint32_t> pids_;  // clients per registering process
};

}  // namespace gshare::arbiter
