// /metrics of a real gshare-arbiter scraped over HTTP after fake functions ran, parsed as the
// Prometheus text format (0.0.4): every sample belongs to a family announced by one HELP and
// one TYPE line; histograms have cumulative buckets ending in le="+Inf" equal to _count, plus
// _sum; the per-GPU, per-function and per-direction figures agree with what ran. And the
// endpoint's exposure (issue 16, item 15): a cap on the connections (and so the fds) it takes,
// idle connections closed, the client allow-list, the Unix socket, no silent non-loopback bind.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
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

int OpenFds(pid_t pid) {
  int n = 0;
  DIR* d = ::opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (d == nullptr) return -1;
  while (const dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n;
}

// A TCP connection to 127.0.0.1:port that never sends anything (non-blocking connect).
int IdleConnection(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  (void)::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  return fd;
}

std::vector<std::string> MetricsArgs(const std::string& address, std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"--gpu-memory", "1GiB", "--libcuda", "/nonexistent/libcuda.so.1",
                                   "--metrics", address};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// 1,100 idle TCP connections to /metrics used to exhaust the arbiter's 1024 fds: cpp-httplib
// accepted every one into an unbounded queue. Now at most metrics_max_connections are served at
// once (the rest wait in the kernel's backlog), so the arbiter's fds stay within cap + 2 of what
// it had; an idle connection is closed by the server, and a scrape gets through afterwards.
TEST(ArbiterMetrics, IdleConnectionsAreCappedAndClosed) {
  TempDir dir;
  const int port = FreeTcpPort();
  ASSERT_GT(port, 0);
  constexpr int kCap = 4;
  ArbiterProcess arb(dir, MetricsArgs("127.0.0.1:" + std::to_string(port),
                                      {"--metrics-max-connections", std::to_string(kCap)}));
  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  const int before = OpenFds(arb.pid());
  ASSERT_GT(before, 0);
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) idle.push_back(IdleConnection(port));
  // Watch the arbiter's fds while the connections are accepted, served idle and dropped.
  int most = 0;
  for (int i = 0; i < 100; ++i) {
    most = std::max(most, OpenFds(arb.pid()));
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_LE(most, before + kCap + 2) << "fds before " << before;
  EXPECT_GE(most, before + 1) << "the test's connections never reached the server";
  // The server closes a connection that sends nothing (EOF or reset on our side).
  pollfd p{idle.front(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, static_cast<int>(Scaled(seconds(30)).count())), 1);
  char byte = 0;
  EXPECT_LE(::recv(idle.front(), &byte, 1, 0), 0);
  for (int fd : idle) ::close(fd);
  httplib::Client http("127.0.0.1", port);
  int status = 0;
  std::string body;
  for (int i = 0; i < 100 && status != 200; ++i) {
    if (auto res = http.Get("/metrics")) {
      status = res->status;
      body = res->body;
    } else {
      std::this_thread::sleep_for(milliseconds(100));
    }
  }
  EXPECT_EQ(status, 200);
  EXPECT_NE(body.find("gshare_arbiter_clients"), std::string::npos);
  ASSERT_TRUE(arb.Stop().is_object());
}

// metrics_allow: TCP clients outside the list are refused (403) and never see the page.
TEST(ArbiterMetrics, ClientsOutsideTheAllowListAreRefused) {
  TempDir dir;
  const int port = FreeTcpPort();
  ASSERT_GT(port, 0);
  const std::string address = "127.0.0.1:" + std::to_string(port);
  {
    ArbiterProcess arb(dir, MetricsArgs(address, {"--metrics-allow", "10.9.9.9,192.168.0.0/16"}));
    ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
    auto res = httplib::Client("127.0.0.1", port).Get("/metrics");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 403);
    EXPECT_EQ(res->body.find("gshare_arbiter"), std::string::npos) << res->body;
    ASSERT_TRUE(arb.Stop().is_object());
    EXPECT_NE(ReadFile(arb.log()).find("metrics: refused a scrape from 127.0.0.1"),
              std::string::npos);
  }
  ArbiterProcess arb(dir, MetricsArgs(address, {"--metrics-allow", "127.0.0.0/8"}));
  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  auto res = httplib::Client("127.0.0.1", port).Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  ASSERT_TRUE(arb.Stop().is_object());
}

// metrics = "unix:PATH": served on a Unix socket born with metrics_socket_mode (default 0600),
// removed at exit.
TEST(ArbiterMetrics, UnixSocketHasItsMode) {
  TempDir dir;
  const std::string path = dir / "metrics.sock";
  for (const auto& [args, mode] :
       std::vector<std::pair<std::vector<std::string>, mode_t>>{{{}, 0600}, {{"--metrics-socket-mode", "0660"}, 0660}}) {
    ArbiterProcess arb(dir, MetricsArgs("unix:" + path, args));
    ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, mode) << std::oct << (st.st_mode & 07777);
    httplib::Client http(path);
    http.set_address_family(AF_UNIX);
    auto res = http.Get("/metrics");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
    EXPECT_NE(res->body.find("gshare_arbiter_clients"), std::string::npos);
    ASSERT_TRUE(arb.Stop().is_object());
    EXPECT_NE(::lstat(path.c_str(), &st), 0);
  }
}

// A non-loopback bind is refused without metrics_allow (it used to serve every interface).
TEST(ArbiterMetrics, NonLoopbackBindNeedsAnAllowList) {
  TempDir dir;
  const int port = FreeTcpPort();
  ASSERT_GT(port, 0);
  const char* other = std::getenv("GSHARE_TEST_ARBITER_BIN");  // as ArbiterProcess does
  std::vector<std::string> argv = {other != nullptr && *other != '\0' ? other : ARBITER_BIN,
                                   "--socket", dir / "arbiter.sock"};
  for (const auto& a : MetricsArgs("0.0.0.0:" + std::to_string(port))) argv.push_back(a);
  const ToolResult r = RunTool(dir, argv);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("metrics: '0.0.0.0' is not a loopback address"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("metrics_allow"), std::string::npos) << r.err;
}

// Item 5: each client costs about 3 fds and metrics its cap + 2. The arbiter raises its soft
// RLIMIT_NOFILE to the hard limit at start (it used to run with whatever soft limit it got,
// often 1024) and logs it; it warns when max_clients could need more than that.
TEST(ArbiterMetrics, OpenFileLimitIsRaisedAndChecked) {
  TempDir dir;
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max <= 512) GTEST_SKIP() << "hard limit too low";
  rlimit low = saved;
  low.rlim_cur = 256;  // inherited by the daemon
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  ArbiterProcess arb(dir, {"--gpu-memory", "1GiB", "--libcuda", "/nonexistent/libcuda.so.1",
                           "--max-clients", "1048576"});
  const bool started = arb.Start();
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  ASSERT_TRUE(started) << ReadFile(arb.log());
  std::ifstream limits("/proc/" + std::to_string(arb.pid()) + "/limits");
  std::string line;
  std::string files;
  while (std::getline(limits, line))
    if (line.rfind("Max open files", 0) == 0) files = line;
  const std::string hard =
      saved.rlim_max == RLIM_INFINITY ? "unlimited" : std::to_string(saved.rlim_max);
  std::istringstream words(files.substr(std::string("Max open files").size()));
  std::string soft_now, hard_now;
  words >> soft_now >> hard_now;
  EXPECT_EQ(soft_now, hard) << files;
  const std::string log = ReadFile(arb.log());
  EXPECT_NE(log.find("open-file limit " + hard + " (was 256"), std::string::npos) << log;
  // 1,048,576 clients * 3 fds is beyond any usual hard limit.
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < 3u * 1048576u) {
    EXPECT_NE(log.find("registrations may fail with 'too many open files'"), std::string::npos)
        << log;
  }
  ASSERT_TRUE(arb.Stop().is_object());
}

}  // namespace
}  // namespace gshare::arbiter::testing
