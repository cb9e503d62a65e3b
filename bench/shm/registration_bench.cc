// Registration time: a client connects to an arbiter process, sends its request, receives the
// reply with the channel and doorbell fds, and attaches the channel (checks + mmap). The
// arbiter side (a forked process) accepts, decodes, creates and seals a channel, and replies.
// p50/p99 over 2,000 registrations. Run: bench/shm/shm_registration_bench --benchmark_format=json
#include <benchmark/benchmark.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gshare/shm/channel.h"
#include "gshare/shm/registration.h"

namespace gshare::shm {
namespace {

constexpr int kRegistrations = 2'000;

void ServeForever(const RegistrationListener& listener) {
  for (uint32_t id = 1;; ++id) {
    auto conn = listener.Accept(std::chrono::seconds(10));
    if (!conn.ok()) return;
    auto req = conn->ReceiveRequest(std::chrono::seconds(10));
    if (!req.ok()) continue;
    auto ch = ArbiterChannel::Create(ChannelInit{id, 0, 1, req->quota_bytes, 20'000'000, req->slo_ms});
    if (!ch.ok()) return;
    RegisterReply reply;
    reply.accepted = true;
    reply.gpu = 0;
    reply.client_id = id;
    reply.channel_size = kChannelSegmentSize;
    reply.quota_bytes = req->quota_bytes;
    reply.arbiter_epoch = 1;
    (void)conn->Accept(reply, ch->channel_fd(), ch->doorbell_fd(), std::chrono::seconds(10));
  }
}

void BM_Registration(benchmark::State& state) {
  const std::string path = "/tmp/gshare-shm-bench-" + std::to_string(::getpid()) + ".sock";
  auto listener = RegistrationListener::Listen(path, 0600);
  if (!listener.ok()) {
    state.SkipWithError(listener.status().ToString().c_str());
    return;
  }
  const pid_t server = ::fork();
  if (server == 0) {
    ServeForever(*listener);
    ::_exit(0);
  }
  RegisterRequest req;
  req.quota_bytes = 256ULL << 20;
  req.slo_ms = 100;
  req.function_name = "bench";
  std::vector<uint64_t> samples;
  for (auto _ : state) {
    for (int i = 0; i < kRegistrations; ++i) {
      const uint64_t t0 = MonotonicNowNs();
      auto reg = Register(path, req, std::chrono::seconds(10));
      if (!reg.ok()) {
        state.SkipWithError(reg.status().ToString().c_str());
        break;
      }
      auto ch = ClientChannel::Attach(std::move(reg->channel), std::move(reg->doorbell));
      samples.push_back(MonotonicNowNs() - t0);
      if (!ch.ok()) {
        state.SkipWithError(ch.status().ToString().c_str());
        break;
      }
    }
  }
  ::kill(server, SIGTERM);
  ::waitpid(server, nullptr, 0);
  std::sort(samples.begin(), samples.end());
  if (!samples.empty()) {
    state.counters["p50_us"] = static_cast<double>(samples[samples.size() / 2]) / 1000.0;
    state.counters["p99_us"] = static_cast<double>(samples[samples.size() * 99 / 100]) / 1000.0;
  }
}

BENCHMARK(BM_Registration)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gshare::shm

BENCHMARK_MAIN();
