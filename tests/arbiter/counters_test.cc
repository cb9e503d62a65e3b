// The counters table (arbiter/src/counters.h) covers every uint64 counter of ArbiterStats exactly
// once, and the summary, the status counters, the Prometheus page and docs/operating.md are
// produced from it without losing a key or metric name that existed before the table (issue 19).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "counters.h"
#include "gshare/arbiter/arbiter.h"
#include "metrics_text.h"

namespace gshare::arbiter {
namespace {

// Every counter of the table set to a distinct value (1000 + its row).
ArbiterStats Distinct() {
  ArbiterStats s;
  uint64_t v = 1000;
  for (const CounterInfo& c : Counters()) s.*c.field = v++;
  return s;
}

TEST(Counters, EveryUint64FieldOfArbiterStatsIsInTheTableOnce) {
  const auto rows = Counters();
  // ArbiterStats is the per-GPU vector followed by uint64 counters only: their number is the
  // size beyond the vector. With the member pointers distinct, the table names each field once.
  ASSERT_EQ(sizeof(ArbiterStats) - sizeof(std::vector<GpuStats>), rows.size() * sizeof(uint64_t))
      << "a field was added to ArbiterStats (or removed) without its row in arbiter/src/counters.cc";
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t k = i + 1; k < rows.size(); ++k)
      EXPECT_FALSE(rows[i].field == rows[k].field) << rows[i].name << " and " << rows[k].name;
  // Every field is written by exactly one row: set through the table, each reads back its own.
  const ArbiterStats s = Distinct();
  uint64_t v = 1000;
  for (const CounterInfo& c : rows) EXPECT_EQ(s.*c.field, v++) << c.name;
}

TEST(Counters, NamesHelpAndMetricsAreUnique) {
  std::set<std::string> names, samples;
  for (const CounterInfo& c : Counters()) {
    EXPECT_TRUE(names.insert(c.name).second) << "second row " << c.name;
    ASSERT_NE(c.help, nullptr) << c.name;
    EXPECT_GT(std::string(c.help).size(), 5U) << c.name;
    EXPECT_EQ(std::string(c.help).find('\n'), std::string::npos) << c.name;
    EXPECT_NE(c.shown, 0U) << c.name << " is shown nowhere";
    if ((c.shown & kShownInMetrics) == 0) continue;
    const std::string sample =
        MetricFamily(c) + "{" + (c.metric_labels != nullptr ? c.metric_labels : "") + "}";
    EXPECT_TRUE(samples.insert(sample).second) << "second sample " << sample;
  }
  // The gauges follow the live tenants; the rest only grow.
  for (const char* gauge : {"function_ids", "policy_entries", "tracked_uids"})
    for (const CounterInfo& c : Counters())
      if (std::string(c.name) == gauge) {
        EXPECT_EQ(c.type, CounterType::kGauge) << gauge;
      }
}

TEST(Counters, SummaryHasEveryCounterUnderItsKey) {
  ArbiterStats s = Distinct();
  GpuStats g;
  g.ordinal = 3;
  g.usable_bytes = 7;
  g.reserved_bytes = 6;
  g.peak_reserved_bytes = 5;
  g.overshoot_events = 4;
  g.orphaned_bytes = 2;
  g.orphans = 1;
  g.mps_context_bytes = 8;
  s.gpus.push_back(g);
  char path[] = "/tmp/gshare-counters-test-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  ASSERT_TRUE(WriteSummary(path, s).ok());
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  ::unlink(path);
  // The keys the summary had before the table (tests and tools read them).
  const std::set<std::string> legacy = {
      "registrations", "re_registrations", "refusals", "grants", "yields", "preemptions",
      "swap_outs", "swap_ins", "client_deaths", "malformed_channels", "enforcements", "restores",
      "context_moves", "doorbell_mutes", "flood_disconnects", "order_timeouts", "unenforceable",
      "deep_evictions", "lease_offers", "lease_takes", "lease_revokes", "lease_revokes_lost",
      "lease_unconfirmed", "corun_joins", "corun_refusals", "corun_revocations", "mps_terminations",
      "mps_terminations_capped",
      "mps_pins_refused", "mps_clients_unserved", "share_queries",
      "orphans_created", "orphans_released_exited",
      "orphans_released_reregistered", "orphans_released_no_device", "refusals_limit",
      "refusals_backoff", "resident_claims_refused", "exited_with_connection_held",
      "registration_timeouts", "registration_pending_refused", "registration_malformed",
      "registration_out_of_fds", "invariant_violations", "release_spins", "function_ids",
      "policy_entries", "tracked_uids"};
  std::set<std::string> keys;
  for (const auto& [k, v] : j.items())
    if (k != "gpus") keys.insert(k);
  EXPECT_EQ(keys, legacy);
  for (const CounterInfo& c : Counters())
    if ((c.shown & kShownInSummary) != 0) {
      EXPECT_EQ(j.value(c.name, uint64_t{0}), s.*c.field) << c.name;
    }
  const nlohmann::json want = {{"ordinal", 3},          {"usable_bytes", 7},
                               {"reserved_bytes", 6},   {"peak_reserved_bytes", 5},
                               {"overshoot_events", 4}, {"orphaned_bytes", 2},
                               {"orphans", 1},          {"mps_context_bytes", 8}};
  ASSERT_EQ(j["gpus"].size(), 1U);
  EXPECT_EQ(j["gpus"][0], want);
}

TEST(Counters, StatusHasEveryCounter) {
  const ArbiterStats s = Distinct();
  nlohmann::json j = nlohmann::json::object();
  AddCountersJson(s, kShownInStatus, j);
  size_t shown = 0;
  for (const CounterInfo& c : Counters()) {
    if ((c.shown & kShownInStatus) == 0) continue;
    ++shown;
    EXPECT_EQ(j.value(c.name, uint64_t{0}), s.*c.field) << c.name;
  }
  EXPECT_EQ(j.size(), shown);
  EXPECT_EQ(shown, Counters().size());
}

TEST(Counters, PrometheusPageHasEveryCounterAndTheOldNames) {
  MetricsInput in;
  in.stats = Distinct();
  const std::string page = PrometheusText(in);
  auto has_line = [&page](const std::string& line) {
    return page.find("\n" + line + "\n") != std::string::npos;
  };
  for (const CounterInfo& c : Counters()) {
    if ((c.shown & kShownInMetrics) == 0) continue;
    const std::string family = "gshare_arbiter_" + MetricFamily(c);
    const std::string labels = c.metric_labels != nullptr ? std::string("{") + c.metric_labels + "}" : "";
    EXPECT_TRUE(has_line(family + labels + " " + std::to_string(in.stats.*c.field))) << c.name;
    EXPECT_TRUE(has_line("# TYPE " + family + " " +
                         (c.type == CounterType::kCounter ? "counter" : "gauge")))
        << c.name;
  }
  // The families the page had before the table, with their types (dashboards use them).
  for (const char* name :
       {"registrations_total", "re_registrations_total", "refusals_total", "grants_total",
        "yields_total", "preemptions_total", "swap_ins_total", "swap_outs_total",
        "client_deaths_total", "malformed_channels_total", "enforcements_total",
        "deep_evictions_total", "restores_total", "context_moves_total", "doorbell_mutes_total",
        "flood_disconnects_total", "order_timeouts_total", "unenforceable_total",
        "lease_offers_total", "lease_takes_total", "lease_revokes_total",
        "lease_revokes_lost_total", "lease_unconfirmed_total", "orphans_created_total",
        "orphans_released_total"})
    EXPECT_TRUE(has_line(std::string("# TYPE gshare_arbiter_") + name + " counter")) << name;
  EXPECT_TRUE(has_line("# HELP gshare_arbiter_orphans_released_total Orphan reservations "
                       "released, by cause."));
  // One HELP per family.
  std::istringstream lines(page);
  std::set<std::string> helps;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("# HELP ", 0) == 0) {
      EXPECT_TRUE(helps.insert(line.substr(7, line.find(' ', 7) - 7)).second) << line;
    }
}

// Each function's instances, warm or not (for platforms' routers; docs/operating.md).
TEST(Counters, PrometheusPageCountsEachFunctionsWarmInstances) {
  MetricsInput in;
  in.instances["bert"] = {2, 3};
  in.instances["res\"net"] = {0, 1};
  const std::string page = PrometheusText(in);
  auto has_line = [&page](const std::string& line) {
    return page.find("\n" + line + "\n") != std::string::npos;
  };
  EXPECT_TRUE(has_line("# TYPE gshare_arbiter_function_instances gauge")) << page;
  EXPECT_TRUE(has_line("gshare_arbiter_function_instances{function=\"bert\",warm=\"true\"} 2")) << page;
  EXPECT_TRUE(has_line("gshare_arbiter_function_instances{function=\"bert\",warm=\"false\"} 1")) << page;
  EXPECT_TRUE(has_line("gshare_arbiter_function_instances{function=\"res\\\"net\",warm=\"false\"} 1"))
      << page;
}

TEST(Counters, OperatingDocListsEveryCounter) {
  std::ifstream in(OPERATING_MD);
  ASSERT_TRUE(in) << OPERATING_MD;
  std::stringstream doc;
  doc << in.rdbuf();
  EXPECT_NE(doc.str().find(CountersMarkdown()), std::string::npos)
      << "docs/operating.md's counters table is out of date; the table from counters.h:\n"
      << CountersMarkdown();
}

}  // namespace
}  // namespace gshare::arbiter
