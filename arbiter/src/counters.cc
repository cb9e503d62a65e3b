// The counters table (counters.h). Existing Prometheus names, types and HELP lines are kept as
// they were written by hand before the table (dashboards depend on them).
#include "counters.h"

#include <array>

namespace gshare::arbiter {
namespace {

using S = ArbiterStats;
constexpr CounterType kC = CounterType::kCounter;
constexpr CounterType kG = CounterType::kGauge;
constexpr unsigned kAll = kShownEverywhere;

// Struct order, except swap_ins before swap_outs (the page's order before the table).
constexpr std::array kCounters{
    CounterInfo{"registrations", &S::registrations, kC, kAll, "Accepted registrations."},
    CounterInfo{"re_registrations", &S::re_registrations, kC, kAll,
                "Registrations after an arbiter restart."},
    CounterInfo{"refusals", &S::refusals, kC, kAll, "Refused registrations."},
    CounterInfo{"grants", &S::grants, kC, kAll, "Token grants."},
    CounterInfo{"yields", &S::yields, kC, kAll, "Token releases."},
    CounterInfo{"preemptions", &S::preemptions, kC, kAll, "Preemption requests."},
    CounterInfo{"swap_ins", &S::swap_ins, kC, kAll, "Swap-in orders."},
    CounterInfo{"swap_outs", &S::swap_outs, kC, kAll, "Swap-out orders."},
    CounterInfo{"client_deaths", &S::client_deaths, kC, kAll, "Clients whose connection closed."},
    CounterInfo{"malformed_channels", &S::malformed_channels, kC, kAll,
                "Clients disconnected for a malformed channel."},
    CounterInfo{"enforcements", &S::enforcements, kC, kAll,
                "Holders checkpointed for not yielding."},
    CounterInfo{"deep_evictions", &S::deep_evictions, kC, kAll, "Idle vGPUs checkpointed."},
    CounterInfo{"restores", &S::restores, kC, kAll, "Checkpointed vGPUs restored."},
    CounterInfo{"context_moves", &S::context_moves, kC, kAll,
                "Functions moved to another GPU through the driver's checkpoint."},
    CounterInfo{"doorbell_mutes", &S::doorbell_mutes, kC, kAll,
                "Doorbells muted for ringing over doorbell_rate."},
    CounterInfo{"flood_disconnects", &S::flood_disconnects, kC, kAll,
                "Clients disconnected for flooding their doorbell."},
    CounterInfo{"order_timeouts", &S::order_timeouts, kC, kAll,
                "Clients disconnected for not acknowledging a swap order in time."},
    CounterInfo{"unenforceable", &S::unenforceable, kC, kAll,
                "Holders disconnected: preemption ignored and the checkpoint failed."},
    CounterInfo{"lease_offers", &S::lease_offers, kC, kAll,
                "Sole-tenant leases offered (next grant in advance)."},
    CounterInfo{"lease_takes", &S::lease_takes, kC, kAll,
                "Leases taken: grants without a round trip (also in grants_total)."},
    CounterInfo{"lease_revokes", &S::lease_revokes, kC, kAll, "Leases withdrawn before a take."},
    CounterInfo{"lease_revokes_lost", &S::lease_revokes_lost, kC, kAll,
                "Revocations that found the lease taken."},
    CounterInfo{"lease_unconfirmed", &S::lease_unconfirmed, kC, kAll,
                "Lease takes the policy did not grant at once."},
    CounterInfo{"corun_joins", &S::corun_joins, kC, kAll,
                "Grants that joined a co-run set (the GPU held by several at once)."},
    CounterInfo{"corun_refusals", &S::corun_refusals, kC, kAll,
                "Co-run grants the rules refused (fault domain, back-off, not MPS, set full)."},
    CounterInfo{"corun_revocations", &S::corun_revocations, kC, kAll,
                "Co-run sets revoked because co-running threatened a member's SLO (its latency "
                "over corun_threat, its burst longer than its solo bursts by 5% of the SLO)."},
    CounterInfo{"mps_terminations", &S::mps_terminations, kC, kAll,
                "MPS clients that ignored preemption, terminated through MPS (terminate_client)."},
    CounterInfo{"mps_terminations_capped", &S::mps_terminations_capped, kC, kAll,
                "MPS clients that ignored preemption, disconnected without an MPS termination: "
                "their uid had reached mps_terminations_per_uid."},
    CounterInfo{"mps_pins_refused", &S::mps_pins_refused, kC, kAll,
                "Swap-outs and moves to another GPU of MPS clients refused: their memory stays on "
                "their GPU (with mps_swaps_verified: only moves, deep evictions and drains)."},
    CounterInfo{"mps_clients_unserved", &S::mps_clients_unserved, kC, kAll,
                "Clients that reported an MPS share which their GPU's MPS daemon (the arbiter's) "
                "does not serve: they co-run with nobody."},
    CounterInfo{"share_queries", &S::share_queries, kC, kAll,
                "Share queries answered: the MPS share a function would get, asked before its "
                "process initialises CUDA."},
    CounterInfo{"orphans_created", &S::orphans_created, kC, kAll,
                "Reservations kept for live processes the arbiter disconnected."},
    CounterInfo{"orphans_released_exited", &S::orphans_released_exited, kC, kAll,
                "Orphan reservations released: the process exited.", "orphans_released_total",
                "cause=\"exited\"", "Orphan reservations released, by cause."},
    CounterInfo{"orphans_released_reregistered", &S::orphans_released_reregistered, kC, kAll,
                "Orphan reservations released: the process registered again.",
                "orphans_released_total", "cause=\"reregistered\""},
    CounterInfo{"orphans_released_no_device", &S::orphans_released_no_device, kC, kAll,
                "Orphan reservations released: the driver knows no CUDA state of the process.",
                "orphans_released_total", "cause=\"no_device\""},
    CounterInfo{"refusals_limit", &S::refusals_limit, kC, kAll,
                "Registrations refused over max_clients_per_uid/_per_pid or the registration "
                "rate (also in refusals_total)."},
    CounterInfo{"refusals_backoff", &S::refusals_backoff, kC, kAll,
                "Registrations refused for a uid in back-off after an unenforceable "
                "disconnection (also in refusals_total)."},
    CounterInfo{"resident_claims_refused", &S::resident_claims_refused, kC, kAll,
                "Registrations claiming to be resident that were not believed (accepted as "
                "swapped out)."},
    CounterInfo{"exited_with_connection_held", &S::exited_with_connection_held, kC, kAll,
                "Clients whose process exited while another process held their connection open."},
    CounterInfo{"registration_timeouts", &S::registration_timeouts, kC, kAll,
                "Registration connections closed without a request in time."},
    CounterInfo{"registration_pending_refused", &S::registration_pending_refused, kC, kAll,
                "Registration connections refused for too many waiting."},
    CounterInfo{"registration_malformed", &S::registration_malformed, kC, kAll,
                "Malformed registration requests."},
    CounterInfo{"registration_out_of_fds", &S::registration_out_of_fds, kC, kAll,
                "Registration connections refused when out of file descriptors."},
    CounterInfo{"invariant_violations", &S::invariant_violations, kC, kAll,
                "Loop iterations after which check_invariants found a violation."},
    CounterInfo{"release_spins", &S::release_spins, kC, kAll,
                "Times the loop spun briefly for a draining holder's release."},
    CounterInfo{"function_ids", &S::function_ids, kG, kAll,
                "Policy function ids allocated (reused: the most functions at once)."},
    CounterInfo{"policy_entries", &S::policy_entries, kG, kAll,
                "The scheduling policy's per-function entries."},
    CounterInfo{"tracked_uids", &S::tracked_uids, kG, kAll, "Uids the arbiter keeps state for."},
};

}  // namespace

std::span<const CounterInfo> Counters() { return kCounters; }

std::string MetricFamily(const CounterInfo& c) {
  if (c.metric != nullptr) return c.metric;
  return c.type == CounterType::kCounter ? std::string(c.name) + "_total" : std::string(c.name);
}

void AddCountersJson(const ArbiterStats& stats, unsigned where, nlohmann::json& j) {
  for (const CounterInfo& c : kCounters)
    if ((c.shown & where) != 0) j[c.name] = stats.*c.field;
}

std::string CountersMarkdown() {
  auto mark = [](const CounterInfo& c, unsigned bit) { return (c.shown & bit) != 0 ? "✓" : ""; };
  std::string out =
      "| counter | summary | status | Prometheus (`gshare_arbiter_` …) | type | meaning |\n"
      "|---|---|---|---|---|---|\n";
  for (const CounterInfo& c : kCounters) {
    std::string metric = "";
    if ((c.shown & kShownInMetrics) != 0) {
      metric = "`" + MetricFamily(c);
      if (c.metric_labels != nullptr) metric += std::string("{") + c.metric_labels + "}";
      metric += "`";
    }
    out += std::string("| `") + c.name + "` | " + mark(c, kShownInSummary) + " | " +
           mark(c, kShownInStatus) + " | " + metric + " | " +
           (c.type == CounterType::kCounter ? "counter" : "gauge") + " | " + c.help + " |\n";
  }
  return out;
}

}  // namespace gshare::arbiter
