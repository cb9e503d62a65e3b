// The arbiter driven in-process (gshare_arbiter_core on a thread) by scripted clients written
// directly on shm/ (no shim): protocol orderings that real processes reach only by chance
// (an arbiter descheduled at the wrong moment, seen under sanitizers) are made to happen every
// time. The scripted client's channel writes that must land *inside* one arbiter loop step run
// on the arbiter's own thread, from a spdlog sink that watches for the debug line the arbiter
// logs at that step (the test fails if the line never comes, instead of passing vacuously).
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "gshare/arbiter/arbiter.h"
#include "gshare/arbiter/config.h"
#include "gshare/shm/channel.h"
#include "gshare/shm/futex.h"
#include "gshare/shm/registration.h"

namespace gshare::arbiter {
namespace {

using std::chrono::seconds;

// Calls `on_line` (on the logging thread, i.e. the arbiter's) for every formatted message.
class HookSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit HookSink(std::function<void(const std::string&)> on_line) : on_line_(std::move(on_line)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    on_line_(std::string(msg.payload.data(), msg.payload.size()));
  }
  void flush_() override {}

 private:
  std::function<void(const std::string&)> on_line_;
};

// Routes the process's default spdlog logger (the arbiter's) through a HookSink at debug level
// while in scope.
class LogHook {
 public:
  explicit LogHook(std::function<void(const std::string&)> on_line)
      : previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>(
        "hook", std::make_shared<HookSink>(std::move(on_line)));
    logger->set_level(spdlog::level::debug);
    spdlog::set_default_logger(logger);
  }
  ~LogHook() { spdlog::set_default_logger(previous_); }
  LogHook(const LogHook&) = delete;
  LogHook& operator=(const LogHook&) = delete;

 private:
  std::shared_ptr<spdlog::logger> previous_;
};

// An in-process arbiter on a 1 GiB GPU, serving on its own thread until Finish().
class InProcessArbiter {
 public:
  InProcessArbiter() {
    dir_ = std::filesystem::temp_directory_path() /
           ("gsa-inproc-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::create_directories(dir_);
    config_.socket_path = (dir_ / "arbiter.sock").string();
    config_.control_socket = "off";
    config_.gpu_memory_bytes = 1ULL << 30;
    config_.libcuda = "/nonexistent/libcuda.so.1";
    config_.lease = false;  // the orderings below are about plain grants
  }
  ~InProcessArbiter() {
    Finish();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  InProcessArbiter(const InProcessArbiter&) = delete;
  InProcessArbiter& operator=(const InProcessArbiter&) = delete;

  bool Start() {
    auto gpus = ResolveGpus(config_);
    if (!gpus.ok()) return false;
    auto made = Arbiter::Create(config_, std::move(*gpus), /*handle_signals=*/false);
    if (!made.ok()) return false;
    arbiter_ = std::move(*made);
    thread_ = std::thread([this] { run_status_ = arbiter_->Run(); });
    return true;
  }
  // Stops the arbiter (holders get their slice and grace) and returns its statistics.
  ArbiterStats Finish() {
    if (thread_.joinable()) {
      arbiter_->Stop();
      thread_.join();
    }
    return arbiter_ ? arbiter_->stats() : ArbiterStats{};
  }
  const std::string& socket() const { return config_.socket_path; }

 private:
  static inline std::atomic<int> counter_{0};
  std::filesystem::path dir_;
  ArbiterConfig config_;
  std::unique_ptr<Arbiter> arbiter_;
  std::thread thread_;
  shm::Status run_status_;
};

// A registered scripted client.
struct Scripted {
  shm::Registration reg;
  std::unique_ptr<shm::ClientChannel> chan;
};

Scripted RegisterScripted(const std::string& socket, const std::string& name, uint64_t quota) {
  Scripted s;
  shm::RegisterRequest req;
  req.quota_bytes = quota;
  req.slo_ms = 100;
  req.function_name = name;
  auto reg = shm::Register(socket, req, seconds(10));
  EXPECT_TRUE(reg.ok()) << reg.status().ToString();
  if (!reg.ok()) return s;
  s.reg = std::move(*reg);
  auto chan = shm::ClientChannel::Attach(std::move(s.reg.channel), std::move(s.reg.doorbell));
  EXPECT_TRUE(chan.ok()) << chan.status().ToString();
  if (chan.ok()) s.chan = std::make_unique<shm::ClientChannel>(std::move(*chan));
  return s;
}

// Waits for the next swap order after `last` and acknowledges it as done.
shm::SwapOrder ObeyNextOrder(Scripted& s, uint32_t last, uint64_t bytes) {
  auto order = s.chan->WaitForSwapOrder(last, seconds(30));
  EXPECT_TRUE(order.ok()) << order.status().ToString();
  if (!order.ok()) return {};
  const bool in = order->op == shm::SwapOp::kSwapIn;
  (void)s.chan->AckSwap(order->seq, shm::SwapAckStatus::kOk, bytes, 1000,
                        in ? shm::Residency::kResident : shm::Residency::kSwappedOut,
                        in ? order->target_gpu : shm::kNoGpu, in ? bytes : 0);
  return *order;
}

// A client whose grant comes with its swap-in's completion runs it and releases it, burst
// ended, before the arbiter looks at its channel again (an arbiter descheduled right after
// granting: seen under ASan). The release must be taken for what it is, the end of the burst:
// it used to be read against the burst report read before the grant (still "in a burst"),
// taken for a slice expiry, and the policy granted the client again: a grant nobody asked for.
TEST(ArbiterInProcess, ReleaseBeforeTheArbiterLooksAgainEndsTheBurst) {
  constexpr uint64_t kQuota = 600ULL << 20;  // two never fit on the 1 GiB GPU together
  Scripted b;  // the client the hook writes for (declared before the hook that uses it)
  std::atomic<uint32_t> b_id{0};  // set once b is registered (the hook then reads b)
  std::mutex mu;
  std::condition_variable cv;
  bool hooked = false;
  // Runs on the arbiter's thread inside its read of b's channel: after it read the swap-in's
  // acknowledgement (and b's burst report: in a burst) and before it grants. b ends its burst
  // and releases the grant about to be issued (its first: sequence 1), exactly what a client
  // that ran that grant before the arbiter looked again leaves in its channel.
  LogHook hook([&](const std::string& line) {
    const uint32_t id = b_id.load();
    if (id == 0 || line.rfind("client " + std::to_string(id) + ": swap-in acknowledged", 0) != 0)
      return;
    const uint64_t now = shm::MonotonicNowNs();
    (void)b.chan->ReportBurstEnd(now, 1000);
    (void)b.chan->Release(1, /*want_again=*/false);
    std::lock_guard<std::mutex> lock(mu);
    hooked = true;
    cv.notify_all();
  });
  InProcessArbiter arb;
  ASSERT_TRUE(arb.Start());
  Scripted a = RegisterScripted(arb.socket(), "a", kQuota);  // fits: resident
  ASSERT_NE(a.chan, nullptr);
  b = RegisterScripted(arb.socket(), "b", kQuota);  // does not fit: starts swapped out
  ASSERT_NE(b.chan, nullptr);
  const shm::SwapOrder out = ObeyNextOrder(b, 0, 0);
  ASSERT_EQ(out.op, shm::SwapOp::kSwapOut);
  b_id.store(b.reg.reply.client_id);

  // b wants the GPU: a (idle) is swapped out to make room, b swapped in and granted.
  (void)b.chan->ReportBurstStart(shm::MonotonicNowNs());
  (void)b.chan->RequestSwapIn();
  EXPECT_EQ(ObeyNextOrder(a, 0, kQuota).op, shm::SwapOp::kSwapOut);
  EXPECT_EQ(ObeyNextOrder(b, out.seq, kQuota).op, shm::SwapOp::kSwapIn);
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, seconds(30), [&] { return hooked; }))
        << "the arbiter never logged b's swap-in acknowledgement";
  }
  // The hook ran inside the loop step that grants; Stop() is served in a later one, and no
  // grant is issued once stopping: whatever that step did is all there is.
  const ArbiterStats stats = arb.Finish();
  EXPECT_EQ(stats.grants, 1U) << "b was granted again after it released its only grant";
  EXPECT_EQ(stats.yields, 1U);
  EXPECT_EQ(shm::TokenSeq(b.chan->LoadToken()), 1U);
  EXPECT_EQ(stats.preemptions, 0U);
}

}  // namespace
}  // namespace gshare::arbiter
