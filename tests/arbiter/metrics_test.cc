// /metrics of a real gshare-arbiter scraped over HTTP after fake functions ran, parsed as the
// Prometheus text format (0.0.4): every sample belongs to a family announced by one HELP and
// one TYPE line; histograms have cumulative buckets ending in le="+Inf" equal to _count, plus
// _sum; the per-GPU, per-function and per-direction figures agree with what ran.
#include <cmath>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>

#include "test_util.h"

namespace gshare::arbiter::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Page {
  std::map<std::string, std::string> types;  // family -> counter|gauge|histogram
  std::set<std::string> helps;
  std::vector<Sample> samples;
  std::vector<std::string> errors;

  // The value of `name` with exactly `labels` (NaN if absent).
  double Get(const std::string& name, const std::map<std::string, std::string>& labels = {}) const {
    for (const Sample& s : samples)
      if (s.name == name && s.labels == labels) return s.value;
    return std::nan("");
  }
};

// The family a sample belongs to: histograms' _bucket/_sum/_count belong to their base name.
std::string FamilyOf(const std::string& name, const std::map<std::string, std::string>& types) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string sfx = suffix;
    if (name.size() > sfx.size() && name.compare(name.size() - sfx.size(), sfx.size(), sfx) == 0) {
      const std::string base = name.substr(0, name.size() - sfx.size());
      const auto it = types.find(base);
      if (it != types.end() && it->second == "histogram") return base;
    }
  }
  return name;
}

Page Parse(const std::string& text) {
  Page p;
  static const std::regex kComment(R"(^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$)");
  static const std::regex kSample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$)");
  static const std::regex kLabel(R"(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)\"(,|$))");
  std::istringstream in(text);
  std::string line;
  std::string current;  // family of the last TYPE line
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.empty()) continue;
    if (std::regex_match(line, m, kComment)) {
      if (m[1] == "HELP") {
        if (!p.helps.insert(m[2]).second) p.errors.push_back("second HELP for " + m[2].str());
      } else {
        if (p.types.count(m[2])) p.errors.push_back("second TYPE for " + m[2].str());
        if (m[3] != "counter" && m[3] != "gauge" && m[3] != "histogram")
          p.errors.push_back("type " + m[3].str());
        p.types[m[2]] = m[3];
        current = m[2];
      }
      continue;
    }
    if (!std::regex_match(line, m, kSample)) {
      p.errors.push_back("not a sample: " + line);
      continue;
    }
    Sample s;
    s.name = m[1];
    const std::string labels = m[3];
    for (auto it = std::sregex_iterator(labels.begin(), labels.end(), kLabel); it != std::sregex_iterator(); ++it)
      s.labels[(*it)[1]] = (*it)[2];
    const std::string v = m[4];
    s.value = v == "+Inf" ? std::numeric_limits<double>::infinity() : std::strtod(v.c_str(), nullptr);
    const std::string family = FamilyOf(s.name, p.types);
    if (family != current) p.errors.push_back(s.name + " outside its family's block");
    if (!p.helps.count(family)) p.errors.push_back(s.name + " without HELP");
    p.samples.push_back(s);
  }
  return p;
}

TEST(ArbiterMetrics, ScrapedPageIsValidPrometheusTextWithTheFiguresThatRan) {
  TempDir dir;
  const int port = FreeTcpPort();
  ASSERT_GT(port, 0);
  ArbiterProcess arb(dir, {"--gpu-memory", "1GiB", "--libcuda", "/nonexistent/libcuda.so.1",
                           "--slice", "5ms", "--metrics", "127.0.0.1:" + std::to_string(port)});
  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  // Two functions that do not fit together: swaps both ways; 20 requests each.
  std::vector<pid_t> pids;
  for (const char* name : {"alpha", "beta"})
    pids.push_back(Spawn({FAKE_FUNCTION_BIN, "--socket", arb.socket(), "--name", name, "--quota-mib",
                          "640", "--slo-ms", "200", "--requests", "20", "--work-us", "1000",
                          "--gap-us", "2000"},
                         dir / (std::string(name) + ".out"), dir / (std::string(name) + ".err")));
  for (pid_t pid : pids) EXPECT_EQ(ExitCode(WaitFor(pid, Scaled(seconds(90)))), 0)
      << ReadFile(arb.log());

  httplib::Client http("127.0.0.1", port);
  Page page;
  std::string body;
  // Snapshots are published at most every 100 ms: poll until both functions have left.
  for (int i = 0; i < 500; ++i) {
    auto res = http.Get("/metrics");
    if (res && res->status == 200) {
      body = res->body;
      page = Parse(body);
      if (page.Get("gshare_arbiter_registrations_total") == 2 &&
          page.Get("gshare_arbiter_clients") == 0)
        break;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_TRUE(page.errors.empty()) << page.errors.front() << "\n" << body;
  // A request as the arbiter sees it is a burst of work after idleness: the 20 requests of
  // each function are at most 20 bursts (requests that follow a burst before its idle release
  // belong to it).
  for (const char* fn : {"alpha", "beta"}) {
    const std::map<std::string, std::string> l = {{"function", fn}};
    const double requests = page.Get("gshare_arbiter_function_requests_total", l);
    EXPECT_GE(requests, 1) << fn << "\n" << body;
    EXPECT_LE(requests, 20) << fn;
    EXPECT_EQ(page.Get("gshare_arbiter_function_slo_met_total", l) +
                  page.Get("gshare_arbiter_function_slo_missed_total", l),
              requests);
    const double att = page.Get("gshare_arbiter_function_slo_attainment", l);
    EXPECT_GE(att, 0.0);
    EXPECT_LE(att, 1.0);
    EXPECT_EQ(page.Get("gshare_arbiter_burst_duration_seconds_count", l), requests);
    EXPECT_EQ(page.Get("gshare_arbiter_token_wait_seconds_count", l), requests);
  }
  const std::map<std::string, std::string> gpu = {{"gpu", "0"}};
  EXPECT_EQ(page.Get("gshare_arbiter_gpu_total_bytes", gpu), 1073741824.0);
  EXPECT_EQ(page.Get("gshare_arbiter_gpu_usable_bytes", gpu), 1073741824.0);
  EXPECT_EQ(page.Get("gshare_arbiter_gpu_reserved_bytes", gpu), 0);
  EXPECT_GE(page.Get("gshare_arbiter_gpu_handoffs_total", gpu), 2);
  EXPECT_EQ(page.Get("gshare_arbiter_gpu_handoffs_total", gpu), page.Get("gshare_arbiter_grants_total"));
  EXPECT_GT(page.Get("gshare_arbiter_gpu_busy_seconds_total", gpu), 0);
  for (const char* dir_name : {"in", "out"}) {
    const std::map<std::string, std::string> l = {{"gpu", "0"}, {"direction", dir_name}};
    EXPECT_GT(page.Get("gshare_arbiter_gpu_swaps_total", l), 0) << dir_name << "\n" << body;
    EXPECT_GT(page.Get("gshare_arbiter_gpu_swap_bytes_total", l), 0) << dir_name;
    EXPECT_EQ(page.Get("gshare_arbiter_swap_duration_seconds_count", l),
              page.Get("gshare_arbiter_gpu_swaps_total", l));
  }
  EXPECT_EQ(page.types["gshare_arbiter_grants_total"], "counter");
  // Lease takes are grants too (docs/arbiter.md, "The lease"); every take was offered first.
  EXPECT_EQ(page.types["gshare_arbiter_lease_takes_total"], "counter");
  EXPECT_LE(page.Get("gshare_arbiter_lease_takes_total"), page.Get("gshare_arbiter_grants_total"));
  EXPECT_LE(page.Get("gshare_arbiter_lease_takes_total"), page.Get("gshare_arbiter_lease_offers_total"));
  EXPECT_EQ(page.types["gshare_arbiter_gpu_resident_bytes"], "gauge");
  EXPECT_EQ(page.types["gshare_arbiter_burst_duration_seconds"], "histogram");
  // Orphan reservations (docs/arbiter.md, "Orphans"): none in this honest run, every series there.
  EXPECT_EQ(page.types["gshare_arbiter_gpu_orphaned_bytes"], "gauge");
  EXPECT_EQ(page.Get("gshare_arbiter_gpu_orphaned_bytes", gpu), 0);
  EXPECT_EQ(page.Get("gshare_arbiter_gpu_orphans", gpu), 0);
  EXPECT_EQ(page.Get("gshare_arbiter_orphans_created_total"), 0);
  EXPECT_EQ(page.types["gshare_arbiter_orphans_released_total"], "counter");
  for (const char* cause : {"exited", "reregistered", "no_device"})
    EXPECT_EQ(page.Get("gshare_arbiter_orphans_released_total", {{"cause", cause}}), 0) << cause;
  // Every histogram series: cumulative buckets, le ascending, +Inf last and equal to _count.
  std::map<std::string, std::vector<std::pair<double, double>>> buckets;  // series -> (le, n)
  for (const Sample& s : page.samples) {
    if (s.name.size() < 7 || s.name.compare(s.name.size() - 7, 7, "_bucket") != 0) continue;
    auto labels = s.labels;
    const std::string le = labels["le"];
    labels.erase("le");
    std::string key = s.name.substr(0, s.name.size() - 7);
    for (const auto& [k, v] : labels) key += "|" + k + "=" + v;
    buckets[key].emplace_back(le == "+Inf" ? std::numeric_limits<double>::infinity() : std::stod(le), s.value);
  }
  ASSERT_FALSE(buckets.empty());
  for (const auto& [series, bs] : buckets) {
    for (size_t i = 1; i < bs.size(); ++i) {
      EXPECT_LT(bs[i - 1].first, bs[i].first) << series;
      EXPECT_LE(bs[i - 1].second, bs[i].second) << series;
    }
    EXPECT_TRUE(std::isinf(bs.back().first)) << series;
  }
  ASSERT_TRUE(arb.Stop().is_object());
}

}  // namespace
}  // namespace gshare::arbiter::testing
