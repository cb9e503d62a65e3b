// TenantLimits (tenant_limits.h): clients per uid and pid, registration rate, back-off, the cap
// on MPS terminations.
#include "tenant_limits.h"

#include <algorithm>

namespace gshare::arbiter {

TenantLimits::Verdict TenantLimits::Check(uid_t uid, pid_t pid, uint64_t now_ns, std::string* why) {
  Uid& u = uids_[uid];
  const std::string who = "uid " + std::to_string(uid);
  if (now_ns < u.backoff_until_ns) {
    *why = who + " was disconnected " + std::to_string(u.unenforceable) +
           " times for ignoring preemption; registrations are refused for " +
           std::to_string((u.backoff_until_ns - now_ns) / 1'000'000 + 1) + " ms more (back-off)";
    return Verdict::kBackoff;
  }
  if (config_.max_clients_per_uid != 0 && u.clients >= config_.max_clients_per_uid) {
    *why = who + " has " + std::to_string(u.clients) + " clients, its maximum (max_clients_per_uid)";
    MaybeForget(uid, now_ns);
    return Verdict::kLimit;
  }
  if (const auto it = pids_.find(pid);
      config_.max_clients_per_pid != 0 && it != pids_.end() && it->second >= config_.max_clients_per_pid) {
    *why = "pid " + std::to_string(pid) + " has " + std::to_string(it->second) +
           " clients, its maximum (max_clients_per_pid)";
    MaybeForget(uid, now_ns);
    return Verdict::kLimit;
  }
  if (config_.registration_rate_per_uid != 0) {
    const double rate = static_cast<double>(config_.registration_rate_per_uid);
    const double burst = 2 * rate;
    if (u.refill_ns == 0) u.tokens = burst;
    u.tokens = std::min(
        burst, u.tokens + rate * static_cast<double>(now_ns - std::min(now_ns, u.refill_ns)) / 1e9);
    u.refill_ns = now_ns;
    if (u.tokens < 1) {
      *why = who + " registers more than " + std::to_string(config_.registration_rate_per_uid) +
             " times a second (registration_rate_per_uid); try again later";
      return Verdict::kLimit;
    }
    u.tokens -= 1;
  }
  return Verdict::kAllowed;
}

void TenantLimits::Added(uid_t uid, pid_t pid) {
  ++uids_[uid].clients;
  ++pids_[pid];
}

void TenantLimits::Removed(uid_t uid, pid_t pid, uint64_t now_ns) {
  if (const auto u = uids_.find(uid); u != uids_.end())
    u->second.clients -= std::min(u->second.clients, 1U);
  if (const auto p = pids_.find(pid); p != pids_.end() && --p->second == 0) pids_.erase(p);
  MaybeForget(uid, now_ns);
}

uint64_t TenantLimits::Unenforceable(uid_t uid, uint64_t now_ns) {
  Uid& u = uids_[uid];
  if (u.last_unenforceable_ns != 0 && now_ns - u.last_unenforceable_ns > kQuietNs) u.unenforceable = 0;
  ++u.unenforceable;
  u.last_unenforceable_ns = now_ns;
  if (u.unenforceable < 2) return 0;
  const uint64_t backoff =
      std::min(kBackoffMaxNs, kBackoffBaseNs << std::min<uint32_t>(u.unenforceable - 2, 20));
  u.backoff_until_ns = now_ns + backoff;
  return backoff;
}

bool TenantLimits::AllowMpsTermination(uid_t uid, uint64_t now_ns, std::string* why) {
  if (config_.mps_terminations_per_uid == 0) return true;
  Uid& u = uids_[uid];
  std::deque<uint64_t>& times = u.mps_terminations;
  while (!times.empty() && now_ns - times.front() >= config_.mps_termination_window_ns) times.pop_front();
  if (times.size() >= config_.mps_terminations_per_uid) {
    *why = "uid " + std::to_string(uid) + " caused " + std::to_string(times.size()) +
           " MPS terminations within " +
           std::to_string(config_.mps_termination_window_ns / 1'000'000) +
           " ms, its maximum (mps_terminations_per_uid / mps_termination_window); the next is "
           "allowed in " +
           std::to_string((times.front() + config_.mps_termination_window_ns - now_ns) / 1'000'000 + 1) +
           " ms";
    return false;
  }
  times.push_back(now_ns);
  return true;
}

uint32_t TenantLimits::clients_of_uid(uid_t uid) const {
  const auto it = uids_.find(uid);
  return it == uids_.end() ? 0 : it->second.clients;
}

void TenantLimits::MaybeForget(uid_t uid, uint64_t now_ns) {
  const auto it = uids_.find(uid);
  if (it == uids_.end()) return;
  const Uid& u = it->second;
  // Kept while it has clients, an unenforceable count that still matters, or a bucket that has
  // not refilled by now (forgetting it would hand the uid a fresh burst).
  const double rate = static_cast<double>(config_.registration_rate_per_uid);
  const bool bucket_full =
      rate == 0 || u.refill_ns == 0 ||
      u.tokens + rate * static_cast<double>(now_ns - std::min(now_ns, u.refill_ns)) / 1e9 >= 2 * rate;
  // A termination still inside its window counts too (forgetting it would reset the cap).
  const bool terminations_over =
      u.mps_terminations.empty() ||
      now_ns - u.mps_terminations.back() >= config_.mps_termination_window_ns;
  if (u.clients == 0 && u.unenforceable == 0 && bucket_full && terminations_over) uids_.erase(it);
}

}  // namespace gshare::arbiter
