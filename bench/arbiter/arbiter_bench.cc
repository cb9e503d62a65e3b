// End-to-end benchmarks of the arbiter with the shim's ArbiterClient (fake GPU hosts):
//  - BM_TokenHandoff: one tenant yields (its client releases the token after an idle
//    period) -> the arbiter sees the release, the policy grants the next tenant, whose
//    blocked submission resumes. p50/p99 over 10,000 handoffs, with a Unix-socket
//    (SOCK_SEQPACKET) round trip between two processes measured in the same run as the
//    reference (socket_rtt_*), and their ratio.
//  - BM_Registration: connect, register, receive the channel fds, attach, disconnect.
//  - BM_SoleTenantReacquire: a sole tenant's request after an idle gap (its token released):
//    how long its first submission waits, with the lease (taken with one CAS) and without it
//    (doorbell -> arbiter -> policy -> grant), each against its own arbiter in the same run,
//    and their ratio (p50 and p99).
// The arbiter runs in-process on its own thread (the real gshare_arbiter_core), tenants are
// threads with their own connections. Run:
//   bench/arbiter/arbiter_bench --benchmark_format=json
#include <benchmark/benchmark.h>
#include <spdlog/spdlog.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "arbiter_client.h"
#include "gshare/arbiter/arbiter.h"
#include "gshare/shm/futex.h"
#include "gshare/shm/registration.h"
#include "gshare/shm/unix_socket.h"
#include "test_gate.h"

namespace {

using gshare::shm::MonotonicNowNs;

// 10,000 handoffs; GSHARE_BENCH_HANDOFFS overrides (quick runs).
int Handoffs() {
  const char* env = std::getenv("GSHARE_BENCH_HANDOFFS");
  return env != nullptr ? std::atoi(env) : 10'000;
}

// A gate and nothing else: the tenant's "GPU work" is instant.
class BenchHost final : public gshare::preload::ShimHost {
 public:
  bool TryEnter() { return gate_.TryEnter(); }
  void Exit() { gate_.Exit(); }
  void CloseGate() override { gate_.Close(); }
  void OpenGate() override { gate_.Open(); }
  bool Drain() override {
    yield_ns->store(MonotonicNowNs(), std::memory_order_release);  // the yield happens now
    return true;
  }
  bool TakeActivity() override { return gate_.TakeActivity(); }
  gshare::preload::SwapOutcome SwapOut() override { resident_ = false; return {true, 0, 0}; }
  gshare::preload::SwapOutcome SwapIn(uint32_t) override { resident_ = true; return {true, 0, 0}; }
  bool Resident() const override { return resident_; }
  uint64_t ResidentBytes() const override { return 0; }
  uint32_t CurrentGpu() const override { return 0; }

  std::atomic<uint64_t>* yield_ns = nullptr;

 private:
  gshare::arbiter::testing::TestGate gate_;
  std::atomic<bool> resident_{true};
};

struct ArbiterThread {
  std::unique_ptr<gshare::arbiter::Arbiter> arbiter;
  std::thread thread;
  std::string socket;

  bool Start(const std::string& policy, const std::string& tag = "") {
    spdlog::set_level(spdlog::level::err);  // keep the JSON on stdout clean
    gshare::arbiter::ArbiterConfig c;
    socket = "/tmp/gshare-arbiter-bench-" + std::to_string(::getpid()) + tag + ".sock";
    c.socket_path = socket;
    c.policy = policy;
    c.libcuda = "/nonexistent/libcuda.so.1";
    c.slice = std::chrono::seconds(10);
    auto a = gshare::arbiter::Arbiter::Create(c, {{0, 16ull << 30}}, false);
    if (!a.ok()) return false;
    arbiter = std::move(*a);
    thread = std::thread([this] { (void)arbiter->Run(); });
    return true;
  }
  ~ArbiterThread() {
    if (arbiter) arbiter->Stop();
    if (thread.joinable()) thread.join();
  }
};

double Percentile(std::vector<uint64_t> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return static_cast<double>(v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))]);
}

// Unix SEQPACKET round trips between this process and a forked echo process.
std::vector<uint64_t> SocketRoundTrips(int n) {
  int sv[2];
  std::vector<uint64_t> rtt;
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return rtt;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(sv[0]);
    char b[64];
    for (;;) {
      const ssize_t r = ::recv(sv[1], b, sizeof(b), 0);
      if (r <= 0) ::_exit(0);
      if (::send(sv[1], b, static_cast<size_t>(r), MSG_NOSIGNAL) != r) ::_exit(0);
    }
  }
  ::close(sv[1]);
  char b[64] = {1};
  for (int i = 0; i < n; ++i) {
    const uint64_t t0 = MonotonicNowNs();
    if (::send(sv[0], b, 16, MSG_NOSIGNAL) != 16 || ::recv(sv[0], b, sizeof(b), 0) != 16) break;
    rtt.push_back(MonotonicNowNs() - t0);
  }
  ::close(sv[0]);
  ::waitpid(child, nullptr, 0);
  return rtt;
}

void BM_TokenHandoff(benchmark::State& state) {
  ArbiterThread arb;
  if (!arb.Start("aggressive")) {
    state.SkipWithError("arbiter did not start");
    return;
  }
  std::atomic<uint64_t> yield_ns{0};
  BenchHost hosts[2];
  std::unique_ptr<gshare::preload::ArbiterClient> clients[2];
  for (int i = 0; i < 2; ++i) {
    hosts[i].yield_ns = &yield_ns;
    gshare::preload::ArbiterClientOptions o;
    o.socket_path = arb.socket;
    o.quota_bytes = 1ull << 30;
    o.slo_ms = 5;
    o.function_name = "tenant" + std::to_string(i);
    o.idle_release = std::chrono::microseconds(50);
    auto c = gshare::preload::ArbiterClient::Start(o, &hosts[i]);
    if (!c.ok()) {
      state.SkipWithError(c.status().ToString().c_str());
      return;
    }
    clients[i] = std::move(*c);
  }
  const int kHandoffs = Handoffs();
  std::vector<uint64_t> handoff;
  for (auto _ : state) {
    handoff.clear();
    // The tenants alternate: `turn` says whose submission comes next; the other one is
    // already blocked in its submission when the holder goes idle and yields.
    std::atomic<int> turn{0};
    std::atomic<int> arrived[2] = {-1, -1};  // the last turn each tenant started
    auto tenant = [&](int me) {
      for (int k = me; k < kHandoffs + 2; k += 2) {
        while (turn.load(std::memory_order_acquire) != k) std::this_thread::yield();
        arrived[me].store(k, std::memory_order_release);
        while (!hosts[me].TryEnter()) clients[me]->Acquire();
        const uint64_t resumed = MonotonicNowNs();
        const uint64_t yielded = yield_ns.load(std::memory_order_acquire);
        if (k >= 2 && yielded != 0 && resumed > yielded) handoff.push_back(resumed - yielded);
        hosts[me].Exit();
        // Let the other tenant queue behind us before we go idle.
        turn.store(k + 1, std::memory_order_release);
        const int other = 1 - me;
        if (k + 1 < kHandoffs + 2)
          while (arrived[other].load(std::memory_order_acquire) < k + 1) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    };
    std::thread t0(tenant, 0);
    std::thread t1(tenant, 1);
    t0.join();
    t1.join();
  }
  const auto rtt = SocketRoundTrips(Handoffs());
  state.counters["handoffs"] = static_cast<double>(handoff.size());
  state.counters["handoff_p50_us"] = Percentile(handoff, 0.50) / 1000;
  state.counters["handoff_p99_us"] = Percentile(handoff, 0.99) / 1000;
  state.counters["socket_rtt_p50_us"] = Percentile(rtt, 0.50) / 1000;
  state.counters["socket_rtt_p99_us"] = Percentile(rtt, 0.99) / 1000;
  state.counters["handoff_p50_over_socket_rtt_p50"] =
      Percentile(handoff, 0.50) / std::max(1.0, Percentile(rtt, 0.50));
}
BENCHMARK(BM_TokenHandoff)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Registration(benchmark::State& state) {
  ArbiterThread arb;
  if (!arb.Start("aggressive")) {
    state.SkipWithError("arbiter did not start");
    return;
  }
  gshare::shm::RegisterRequest req;
  req.quota_bytes = 64ull << 20;
  req.slo_ms = 100;
  req.function_name = "bench";
  for (auto _ : state) {
    auto r = gshare::shm::Register(arb.socket, req, std::chrono::seconds(5));
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    auto ch = gshare::shm::ClientChannel::Attach(std::move(r->channel), std::move(r->doorbell));
    benchmark::DoNotOptimize(ch.ok());
  }
}
BENCHMARK(BM_Registration)->Unit(benchmark::kMicrosecond)->UseRealTime()->Iterations(2000);

struct ReacquireResult {
  std::vector<uint64_t> wait_ns;  // per request: from the submission attempt to admission
  uint64_t lease_takes = 0;
  std::string error;
};

// `requests` requests of one sole tenant, each after its token went back (idle release) and a
// further gap, against a fresh arbiter.
ReacquireResult SoleTenantRequests(bool use_lease, int requests) {
  ReacquireResult r;
  ArbiterThread arb;
  if (!arb.Start("aggressive", use_lease ? "-lease" : "-nolease")) {
    r.error = "arbiter did not start";
    return r;
  }
  std::atomic<uint64_t> yield_ns{0};
  BenchHost host;
  host.yield_ns = &yield_ns;
  gshare::preload::ArbiterClientOptions o;
  o.socket_path = arb.socket;
  o.quota_bytes = 1ull << 30;
  o.slo_ms = 5;
  o.function_name = "sole";
  o.idle_release = std::chrono::microseconds(100);
  o.use_lease = use_lease;
  auto c = gshare::preload::ArbiterClient::Start(o, &host);
  if (!c.ok()) {
    r.error = c.status().ToString();
    return r;
  }
  for (int i = 0; i < requests; ++i) {
    const uint64_t t0 = MonotonicNowNs();
    while (!host.TryEnter()) (*c)->Acquire();
    const uint64_t t1 = MonotonicNowNs();
    host.Exit();
    if (i > 0) r.wait_ns.push_back(t1 - t0);  // the first one registers the burst history
    // Idle until the token went back, then a gap (the arbiter sees the release meanwhile).
    while ((*c)->holding()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  r.lease_takes = (*c)->lease_takes();
  return r;
}

void BM_SoleTenantReacquire(benchmark::State& state) {
  const int requests = std::max(10, Handoffs() / 5);
  ReacquireResult with;
  ReacquireResult without;
  for (auto _ : state) {
    with = SoleTenantRequests(true, requests);
    without = SoleTenantRequests(false, requests);
  }
  if (!with.error.empty() || !without.error.empty()) {
    state.SkipWithError((with.error + without.error).c_str());
    return;
  }
  const double w50 = Percentile(with.wait_ns, 0.50);
  const double w99 = Percentile(with.wait_ns, 0.99);
  const double n50 = Percentile(without.wait_ns, 0.50);
  const double n99 = Percentile(without.wait_ns, 0.99);
  state.counters["requests"] = static_cast<double>(with.wait_ns.size());
  state.counters["lease_takes"] = static_cast<double>(with.lease_takes);
  state.counters["lease_p50_us"] = w50 / 1000;
  state.counters["lease_p99_us"] = w99 / 1000;
  state.counters["no_lease_p50_us"] = n50 / 1000;
  state.counters["no_lease_p99_us"] = n99 / 1000;
  state.counters["p50_lease_over_no_lease"] = w50 / std::max(1.0, n50);
  state.counters["p99_lease_over_no_lease"] = w99 / std::max(1.0, n99);
}
BENCHMARK(BM_SoleTenantReacquire)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
