// arbiter_fake_function: a test "function" process that speaks the real arbiter protocol
// through the shim's ArbiterClient, with a fake ShimHost instead of CUDA: a gate, a "device"
// buffer that a swap-out scrambles and a swap-in restores, and submissions that busy-wait.
// It checks what the arbiter must guarantee and reports violations in its exit status:
//   - mutual exclusion: a counter in a shared file (--shared) must be 0 when a submission
//     starts (two functions never submit at once on the one GPU);
//   - residency: a submission never runs while the vGPU is swapped out, and the "device"
//     data is intact (checksum) every time.
// With --until-registrations N it goes on with further requests after the first --requests until
// it has registered N times (an arbiter restarted under it), for at most --until-ms.
// Output: one JSON line on stdout. Exit status 0 iff every request ran and nothing was violated.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "arbiter_client.h"
#include "gshare/shm/futex.h"
#include "test_gate.h"

namespace {

using gshare::preload::ArbiterClient;
using gshare::preload::ArbiterClientOptions;
using gshare::preload::ShimHost;
using gshare::preload::SwapOutcome;

class FakeHost final : public ShimHost {
 public:
  explicit FakeHost(uint64_t bytes, uint64_t drain_ns) : device_(bytes / 4096 + 1), drain_ns_(drain_ns) {
    for (size_t i = 0; i < device_.size(); ++i) device_[i] = static_cast<uint32_t>(i * 2654435761U);
    checksum_ = Sum();
    bytes_ = bytes;
  }
  bool TryEnter() { return gate_.TryEnter(); }
  void Exit() { gate_.Exit(); }
  void CloseGate() override { gate_.Close(); }
  void OpenGate() override { gate_.Open(); }
  bool Drain() override {
    if (drain_ns_ != 0) std::this_thread::sleep_for(std::chrono::nanoseconds(drain_ns_));
    return true;
  }
  bool TakeActivity() override { return gate_.TakeActivity(); }
  SwapOutcome SwapOut() override {
    const uint64_t t0 = gshare::shm::MonotonicNowNs();
    if (resident_.load()) {
      host_ = device_;
      std::fill(device_.begin(), device_.end(), 0xDEADBEEF);
      resident_.store(false);
      ++swap_outs_;
      return {true, bytes_, gshare::shm::MonotonicNowNs() - t0};
    }
    return {true, 0, 0};
  }
  SwapOutcome SwapIn(uint32_t gpu) override {
    const uint64_t t0 = gshare::shm::MonotonicNowNs();
    if (!resident_.load()) {
      device_ = host_;
      gpu_ = gpu;
      resident_.store(true);
      ++swap_ins_;
      return {true, bytes_, gshare::shm::MonotonicNowNs() - t0};
    }
    return {true, 0, 0};
  }
  bool Resident() const override { return resident_.load(); }
  uint64_t ResidentBytes() const override { return resident_.load() ? bytes_ : 0; }
  uint32_t CurrentGpu() const override { return gpu_.load(); }

  bool DataIntact() const { return Sum() == checksum_; }
  // Counted by the client's service thread (swap orders), read by main at the end while the
  // arbiter may still order a swap: atomics (a TSan report made the function exit 66).
  std::atomic<uint64_t> swap_outs_{0};
  std::atomic<uint64_t> swap_ins_{0};

 private:
  uint64_t Sum() const {
    uint64_t s = 0;
    for (uint32_t v : device_) s = s * 31 + v;
    return s;
  }
  gshare::arbiter::testing::TestGate gate_;
  std::atomic<bool> resident_{true};
  std::vector<uint32_t> device_;
  std::vector<uint32_t> host_;
  uint64_t checksum_ = 0;
  uint64_t bytes_ = 0;
  std::atomic<uint32_t> gpu_{0};
  uint64_t drain_ns_ = 0;
};

void Spin(uint64_t ns) {
  const uint64_t end = gshare::shm::MonotonicNowNs() + ns;
  while (gshare::shm::MonotonicNowNs() < end) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  ArbiterClientOptions opt;
  opt.quota_bytes = 256ull << 20;
  int requests = 10;
  int submissions = 4;
  uint64_t work_us = 2000;
  uint64_t gap_us = 1000;
  uint64_t start_delay_us = 0;
  uint64_t exit_delay_us = 0;
  uint64_t drain_us = 0;
  uint64_t until_registrations = 0;
  uint64_t until_ms = 60000;
  std::string shared;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const std::string v = argv[i + 1];
    if (k == "--socket") opt.socket_path = v;
    else if (k == "--quota-mib") opt.quota_bytes = std::stoull(v) << 20;
    else if (k == "--slo-ms") opt.slo_ms = static_cast<uint32_t>(std::stoul(v));
    else if (k == "--name") opt.function_name = v;
    else if (k == "--requests") requests = std::stoi(v);
    else if (k == "--submissions") submissions = std::stoi(v);
    else if (k == "--work-us") work_us = std::stoull(v);
    else if (k == "--gap-us") gap_us = std::stoull(v);
    else if (k == "--idle-release-us") opt.idle_release = std::chrono::microseconds(std::stoull(v));
    else if (k == "--start-delay-us") start_delay_us = std::stoull(v);
    else if (k == "--exit-delay-us") exit_delay_us = std::stoull(v);
    else if (k == "--drain-us") drain_us = std::stoull(v);
    else if (k == "--shared") shared = v;
    else if (k == "--until-registrations")
      until_registrations = std::stoull(v);
    else if (k == "--until-ms")
      until_ms = std::stoull(v);
    else if (k == "--fail-closed") opt.fail_closed = v == "1";
    else if (k == "--lease") opt.use_lease = v == "1";
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  std::atomic<int32_t>* inside = nullptr;
  if (!shared.empty()) {
    const int fd = ::open(shared.c_str(), O_RDWR);
    void* p = fd >= 0 ? ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (p == MAP_FAILED) {
      std::perror("shared file");
      return 2;
    }
    inside = static_cast<std::atomic<int32_t>*>(p);
  }
  if (start_delay_us != 0) std::this_thread::sleep_for(std::chrono::microseconds(start_delay_us));

  FakeHost host(opt.quota_bytes / 2, drain_us * 1000);
  auto client = ArbiterClient::Start(opt, &host);
  if (!client.ok()) {
    std::printf("{\"error\":\"%s\"}\n", client.status().ToString().c_str());
    return 3;
  }
  int overlaps = 0;
  int not_resident = 0;
  int corrupt = 0;
  uint64_t max_wait_ns = 0;
  const uint64_t until_end = gshare::shm::MonotonicNowNs() + until_ms * 1000000;
  const auto more = [&](int r) {
    if (r < requests) return true;
    return (*client)->registrations() < until_registrations &&
           gshare::shm::MonotonicNowNs() < until_end;
  };
  int done = 0;
  for (int r = 0; more(r); ++r, ++done) {
    for (int s = 0; s < submissions; ++s) {
      const uint64_t t0 = gshare::shm::MonotonicNowNs();
      while (!host.TryEnter()) (*client)->Acquire();
      max_wait_ns = std::max(max_wait_ns, gshare::shm::MonotonicNowNs() - t0);
      if (inside != nullptr && inside->fetch_add(1) != 0) ++overlaps;
      if (!host.Resident()) ++not_resident;
      if (!host.DataIntact()) ++corrupt;
      Spin(work_us * 1000 / static_cast<uint64_t>(submissions));
      if (inside != nullptr) inside->fetch_sub(1);
      host.Exit();
    }
    if (gap_us != 0) std::this_thread::sleep_for(std::chrono::microseconds(gap_us));
  }
  if (exit_delay_us != 0) std::this_thread::sleep_for(std::chrono::microseconds(exit_delay_us));
  std::printf(
      "{\"requests\":%d,\"overlaps\":%d,\"not_resident\":%d,\"corrupt\":%d,\"registrations\":%llu,"
      "\"swap_outs\":%llu,\"swap_ins\":%llu,\"max_wait_us\":%llu,\"lease_takes\":%llu,"
      "\"waited_grants\":%llu,\"stray_releases\":%llu}\n",
      done, overlaps, not_resident, corrupt,
      static_cast<unsigned long long>((*client)->registrations()),
      static_cast<unsigned long long>(host.swap_outs_.load()),
      static_cast<unsigned long long>(host.swap_ins_.load()),
      static_cast<unsigned long long>(max_wait_ns / 1000),
      static_cast<unsigned long long>((*client)->lease_takes()),
      static_cast<unsigned long long>((*client)->waited_grants()),
      static_cast<unsigned long long>((*client)->stray_releases()));
  std::fflush(stdout);
  return overlaps == 0 && not_resident == 0 && corrupt == 0 ? 0 : 1;
}
