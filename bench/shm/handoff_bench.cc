// Token handoff latency through the channel, between real processes: tenant A releases its
// grant, the arbiter sees it and grants tenant B, B resumes. p50/p99 over 10,000 handoffs for
// (a) B spinning because the arbiter told it it is next, (b) B blocked in FUTEX_WAIT, each with
// the arbiter spinning for the release (it was woken by A's "draining" notice) or sleeping on
// the doorbell. In the same run, as references: a raw futex wake between two processes, a raw
// spin handoff on a shared word, and a Unix-socket round trip. Latencies are one-way
// (CLOCK_MONOTONIC timestamps compared across processes), except the socket round trip.
// Run: bench/shm/shm_handoff_bench --benchmark_format=json (see docs/protocol.md).
#include <benchmark/benchmark.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gshare/shm/atomic_word.h"
#include "gshare/shm/channel.h"
#include "gshare/shm/futex.h"
#include "gshare/shm/spin.h"

namespace gshare::shm {
namespace {

constexpr int kHandoffs = 10'000;
constexpr uint64_t kWorkNs = 30'000;   // a tenant "computes" this long while holding the token
constexpr uint64_t kDrainNs = 60'000;  // then drains its in-flight work this long
constexpr uint32_t kSpinBudgetNs = 500'000;

// Shared between the benchmark's processes (MAP_SHARED | MAP_ANONYMOUS, inherited by fork).
struct alignas(64) Shared {
  uint64_t release_ns;  // when the last holder released (written by the releasing tenant)
  uint32_t stop;
  uint32_t count;       // samples recorded
  uint32_t word;        // raw futex / spin reference word
  uint32_t pad;
  uint64_t samples[2 * kHandoffs + 16];
};

Shared* MapShared() {
  void* p = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) std::abort();
  return new (p) Shared{};
}

// Blocks for about `ns` (like waiting on the GPU): sleeps, so it leaves the CPU to others.
void BlockFor(uint64_t ns) {
  timespec ts{0, static_cast<long>(ns)};
  ::nanosleep(&ts, nullptr);
}

void Record(Shared* sh, uint64_t value) {
  const uint32_t i = FetchAdd(&sh->count, 1U);
  if (i < 2 * kHandoffs + 16) sh->samples[i] = value;
}

struct Percentiles {
  double p50_us = 0, p99_us = 0, p999_us = 0, max_us = 0;
};

Percentiles Summarise(std::vector<uint64_t> v) {
  Percentiles p;
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return static_cast<double>(v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))]) / 1000.0; };
  p.p50_us = at(0.50);
  p.p99_us = at(0.99);
  p.p999_us = at(0.999);
  p.max_us = static_cast<double>(v.back()) / 1000.0;
  return p;
}

std::vector<uint64_t> Samples(const Shared* sh, size_t skip) {
  const size_t n = std::min<size_t>(LoadSeqCst(&sh->count), 2 * kHandoffs + 16);
  if (n <= skip) return {};
  return std::vector<uint64_t>(sh->samples + skip, sh->samples + n);
}

// References measured earlier in the same run (registered first), for ratios.
Percentiles g_socket_rtt;
Percentiles g_futex_wake;

void Report(benchmark::State& state, const Percentiles& p, bool ratios) {
  state.counters["p50_us"] = p.p50_us;
  state.counters["p99_us"] = p.p99_us;
  state.counters["p999_us"] = p.p999_us;
  state.counters["max_us"] = p.max_us;
  if (ratios && g_socket_rtt.p50_us > 0) {
    state.counters["p50_vs_socket_rtt"] = p.p50_us / g_socket_rtt.p50_us;
    state.counters["p99_vs_socket_rtt"] = p.p99_us / g_socket_rtt.p99_us;
  }
  if (ratios && g_futex_wake.p50_us > 0) state.counters["p50_vs_futex_wake"] = p.p50_us / g_futex_wake.p50_us;
}

pid_t Fork(void (*body)(Shared*, void*), Shared* sh, void* arg) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_TIMERSLACK, 1UL);
    body(sh, arg);
    ::_exit(0);
  }
  return pid;
}

// ---- the channel handoff ----

struct Tenant {
  ClientChannel* channel;
};

// A tenant: wait for a grant, record how long since the previous holder released, work,
// announce draining, drain, release (wanting the token again).
void TenantLoop(Shared* sh, void* arg) {
  ClientChannel* ch = static_cast<Tenant*>(arg)->channel;
  (void)ch->RequestToken();
  for (;;) {
    auto g = ch->WaitForGrant(std::chrono::seconds(30));
    const uint64_t resumed = MonotonicNowNs();
    if (!g.ok() || LoadAcquire(&sh->stop) != 0) return;
    const uint64_t released = LoadAcquire(&sh->release_ns);
    if (released != 0) Record(sh, resumed - released);
    BlockFor(kWorkNs);
    (void)ch->BeginDraining();
    BlockFor(kDrainNs);
    StoreRelease(&sh->release_ns, MonotonicNowNs());
    (void)ch->Release(g->seq, /*want_again=*/true);
  }
}

// Waits (arbiter side) until `ch`'s client reported something: sleeps in poll on the doorbell
// after arming it, re-checking `done` after arming (no lost wake-up).
template <typename Done>
void SleepUntil(ArbiterChannel& ch, Done done) {
  for (;;) {
    if (done()) return;
    ch.ArmDoorbell();
    if (done()) break;
    pollfd p{ch.doorbell_fd(), POLLIN, 0};
    ::poll(&p, 1, 1000);
    (void)ch.DrainDoorbell();
  }
  ch.DisarmDoorbell();
}

void BM_ChannelHandoff(benchmark::State& state) {
  const bool next_spins = state.range(0) != 0;
  const bool arbiter_spins = state.range(1) != 0;
  Shared* sh = MapShared();
  auto a = ArbiterChannel::Create(ChannelInit{1, 0, 1, 1 << 20, 20'000'000, 100});
  auto b = ArbiterChannel::Create(ChannelInit{2, 0, 1, 1 << 20, 20'000'000, 100});
  if (!a.ok() || !b.ok()) {
    state.SkipWithError("channel creation failed");
    return;
  }
  ArbiterChannel* arb[2] = {&a.value(), &b.value()};
  pid_t pids[2];
  for (int i = 0; i < 2; ++i) {
    auto c = ClientChannel::Attach(UniqueFd(::dup(arb[i]->channel_fd())), UniqueFd(::dup(arb[i]->doorbell_fd())));
    if (!c.ok()) std::abort();
    ClientChannel client = std::move(c).value();
    Tenant t{&client};
    pids[i] = Fork(TenantLoop, sh, &t);
  }
  for (auto _ : state) {
    int holder = 0;
    arb[0]->Grant(0, 0);
    for (int k = 0; k < kHandoffs + 1; ++k) {
      ArbiterChannel& h = *arb[holder];
      ArbiterChannel& next = *arb[1 - holder];
      // The holder works, then announces draining: that wakes us (doorbell) in both modes.
      SleepUntil(h, [&] {
        auto v = h.ReadClient(MonotonicNowNs());
        return h.Released() || (v.ok() && v->state == ClientTokenState::kDraining);
      });
      if (next_spins) next.SetNextHint(true, kSpinBudgetNs);
      if (arbiter_spins) {
        (void)SpinUntil([&] { return h.Released(); }, 2'000'000);
      }
      SleepUntil(h, [&] { return h.Released(); });
      next.Grant(0, 0);
      holder = 1 - holder;
    }
  }
  StoreSeqCst(&sh->stop, 1U);
  arb[0]->Grant(0, 0);
  arb[1]->Grant(0, 0);
  for (pid_t pid : pids) ::waitpid(pid, nullptr, 0);
  Report(state, Summarise(Samples(sh, 0)), true);
  state.counters["handoffs"] = static_cast<double>(LoadSeqCst(&sh->count));
  ::munmap(sh, sizeof(Shared));
}

// ---- references ----

// One-way futex wake between two processes, ping-pong: the word says whose turn it is.
void FutexPeer(Shared* sh, void* arg) {
  const uint32_t me = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(arg));
  for (int k = 0; k < kHandoffs; ++k) {
    for (;;) {
      const uint32_t w = LoadAcquire(&sh->word);
      if (w == me || LoadAcquire(&sh->stop)) break;
      (void)FutexWait(&sh->word, w, std::chrono::seconds(10));
    }
    if (LoadAcquire(&sh->stop)) return;
    Record(sh, MonotonicNowNs() - LoadAcquire(&sh->release_ns));
    BlockFor(kWorkNs);  // let the peer fall asleep
    StoreRelease(&sh->release_ns, MonotonicNowNs());
    StoreSeqCst(&sh->word, 1 - me);
    (void)FutexWake(&sh->word, 1);
  }
}

// One-way handoff by spinning on a shared word (what the next-in-line spin costs at best).
void SpinPeer(Shared* sh, void* arg) {
  const uint32_t me = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(arg));
  for (int k = 0; k < kHandoffs; ++k) {
    (void)SpinUntil([&] { return LoadAcquire(&sh->word) == me; }, UINT64_MAX);
    Record(sh, MonotonicNowNs() - LoadAcquire(&sh->release_ns));
    StoreRelease(&sh->release_ns, MonotonicNowNs());
    StoreRelease(&sh->word, 1 - me);
  }
}

void RunPeers(benchmark::State& state, void (*peer)(Shared*, void*), Percentiles* out) {
  Shared* sh = MapShared();
  for (auto _ : state) {
    sh->release_ns = MonotonicNowNs();
    const pid_t p0 = Fork(peer, sh, reinterpret_cast<void*>(uintptr_t{0}));
    const pid_t p1 = Fork(peer, sh, reinterpret_cast<void*>(uintptr_t{1}));
    ::waitpid(p0, nullptr, 0);
    ::waitpid(p1, nullptr, 0);
  }
  const Percentiles p = Summarise(Samples(sh, 1));
  if (out != nullptr) *out = p;
  Report(state, p, false);
  ::munmap(sh, sizeof(Shared));
}

void BM_RawFutexWake(benchmark::State& state) { RunPeers(state, FutexPeer, &g_futex_wake); }
void BM_RawSpinHandoff(benchmark::State& state) { RunPeers(state, SpinPeer, nullptr); }

// Round trip over a SOCK_SEQPACKET socketpair: send 8 bytes, the peer process echoes them.
void BM_UnixSocketRoundTrip(benchmark::State& state) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(sv[0]);
    uint64_t v;
    while (::recv(sv[1], &v, sizeof(v), 0) == sizeof(v)) {
      if (::send(sv[1], &v, sizeof(v), 0) != sizeof(v)) break;
    }
    ::_exit(0);
  }
  ::close(sv[1]);
  std::vector<uint64_t> samples;
  samples.reserve(kHandoffs);
  for (auto _ : state) {
    for (int k = 0; k < kHandoffs; ++k) {
      const uint64_t t0 = MonotonicNowNs();
      uint64_t v = t0;
      if (::send(sv[0], &v, sizeof(v), 0) != sizeof(v) || ::recv(sv[0], &v, sizeof(v), 0) != sizeof(v)) {
        state.SkipWithError("socket round trip failed");
        break;
      }
      samples.push_back(MonotonicNowNs() - t0);
      BlockFor(kWorkNs);  // like the handoff: the peer is asleep when the message comes
    }
  }
  ::close(sv[0]);
  ::waitpid(pid, nullptr, 0);
  g_socket_rtt = Summarise(samples);
  Report(state, g_socket_rtt, false);
}

// References first: the handoff benchmarks report ratios against them.
BENCHMARK(BM_UnixSocketRoundTrip)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RawFutexWake)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RawSpinHandoff)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ChannelHandoff)
    ->ArgNames({"next_spins", "arbiter_spins"})
    ->Args({1, 1})
    ->Args({0, 1})
    ->Args({1, 0})
    ->Args({0, 0})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gshare::shm

BENCHMARK_MAIN();
