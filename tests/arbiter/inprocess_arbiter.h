// The arbiter driven in-process (gshare_arbiter_core on a thread) by scripted clients written
// directly on shm/ (no shim), for tests/arbiter's in-process tests: the arbiter on its own
// thread, scripted registrations and swap-order acknowledgements, and a spdlog hook that runs
// a client's writes on the arbiter's thread inside the loop step that logs a given line.
//
// Ownership: InProcessArbiter owns its temporary directory (removed on destruction) and the
// arbiter thread (stopped and joined by Finish or the destructor). Thread-safety: one test
// thread; LogHook's callback runs on whichever thread logs (the arbiter's).
#pragma once

#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "gshare/arbiter/arbiter.h"
#include "gshare/arbiter/config.h"
#include "gshare/arbiter/control_client.h"
#include "gshare/shm/atomic_word.h"
#include "gshare/shm/channel.h"
#include "gshare/shm/registration.h"

namespace gshare::arbiter::inproc {

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
    // MPS contexts are not counted unless a test says how large they are: the 1 GiB GPU would
    // hold two of an H200's (mps_context_memory's default).
    config_.corun.mps_context_bytes = 0;
    config_.corun.mps_context_floor_bytes = 0;
    config_.libcuda = "/nonexistent/libcuda.so.1";
    config_.lease = false;  // the orderings tested are about plain grants
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
  // Before Start(): the configuration to run with.
  ArbiterConfig& config() { return config_; }
  // Before Start(): serve the control socket (status, clients) in the test's directory.
  void EnableControl() { config_.control_socket = (dir_ / "control.sock").string(); }
  // The control interface's "status" reply (served on the arbiter's thread: safe while it
  // runs, unlike stats()); null on failure.
  nlohmann::json Status() const { return Control({{"cmd", "status"}}); }
  // Any control request (EnableControl; the test's uid is the arbiter's: an admin).
  nlohmann::json Control(const nlohmann::json& request) const {
    auto reply = ControlCall(config_.control_socket, request, std::chrono::seconds(10));
    return reply.ok() ? *reply : nlohmann::json();
  }

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

// Registers `req` as a scripted client (any field: SLO, MPS share, demands).
inline Scripted RegisterScripted(const std::string& socket, const shm::RegisterRequest& req) {
  Scripted s;
  auto reg = shm::Register(socket, req, std::chrono::seconds(10));
  EXPECT_TRUE(reg.ok()) << reg.status().ToString();
  if (!reg.ok()) return s;
  s.reg = std::move(*reg);
  auto chan = shm::ClientChannel::Attach(std::move(s.reg.channel), std::move(s.reg.doorbell));
  EXPECT_TRUE(chan.ok()) << chan.status().ToString();
  if (chan.ok()) s.chan = std::make_unique<shm::ClientChannel>(std::move(*chan));
  return s;
}

// `flags`, `gpu`, `previous_id`: a re-registration (shm::kFlagReRegister with the id it had,
// kFlagResident with its GPU). `mps_share`: it reports running as an MPS client at that share.
inline Scripted RegisterScripted(const std::string& socket, const std::string& name,
                                 uint64_t quota, uint32_t flags = 0,
                                 uint32_t gpu = shm::kNoGpu, uint32_t previous_id = 0,
                                 uint32_t mps_share = 0) {
  shm::RegisterRequest req;
  req.quota_bytes = quota;
  req.slo_ms = 100;
  req.function_name = name;
  req.flags = flags;
  req.current_gpu = gpu;
  req.previous_client_id = previous_id;
  req.mps_share = mps_share;
  return RegisterScripted(socket, req);
}

// The test's own uid asks for its share on GPU 0 (for `quota` bytes): the answer.
inline shm::ShareAnswer OwnQuery(const std::string& socket, uint64_t quota = 0) {
  shm::ShareQuery q;
  q.quota_bytes = quota;
  q.slo_ms = 100;
  q.function_name = "own-uid";
  auto answer = shm::QueryShare(socket, q, std::chrono::seconds(10));
  EXPECT_TRUE(answer.ok()) << answer.status().ToString();
  return answer.ok() ? *answer : shm::ShareAnswer{};
}

inline constexpr uid_t kOtherUid = 65534;  // nobody

// A child process that takes one step each time it is told to and sends back that step's line
// of text. Forked at construction, before the arbiter's thread starts (the child copies only this
// thread), it switches to `uid` (when not the test's) and waits; Step() lets it take its next
// step and returns the line ("error: ..." when there is none). The steps run in the child: they
// may use what the parent had before the fork (the socket's path), nothing the parent does after.
class ForkedSteps {
 public:
  ForkedSteps(uid_t uid, std::vector<std::function<std::string()>> steps) {
    int go[2], out[2];
    if (::pipe(go) != 0 || ::pipe(out) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(go[1]);
      ::close(out[0]);
      if (uid != ::getuid() && (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0 ||
                                ::setresuid(uid, uid, uid) != 0))
        ::_exit(2);
      char byte;
      for (const auto& step : steps) {
        if (::read(go[0], &byte, 1) != 1) ::_exit(0);  // the parent is done with it
        const std::string line = step() + "\n";
        if (::write(out[1], line.data(), line.size()) != static_cast<ssize_t>(line.size()))
          ::_exit(3);
      }
      (void)::read(go[0], &byte, 1);  // alive (its connections open) until the parent is done
      ::_exit(0);
    }
    ::close(go[0]);
    ::close(out[1]);
    go_ = go[1];
    out_ = out[0];
  }
  ~ForkedSteps() {
    if (go_ >= 0) ::close(go_);
    if (out_ >= 0) ::close(out_);
    if (pid_ > 0) (void)::waitpid(pid_, nullptr, 0);
  }
  ForkedSteps(const ForkedSteps&) = delete;
  ForkedSteps& operator=(const ForkedSteps&) = delete;

  std::string Step() {
    if (pid_ <= 0 || ::write(go_, "g", 1) != 1) return "error: no child";
    std::string line;
    char c;
    while (::read(out_, &c, 1) == 1 && c != '\n') line += c;
    return line.empty() ? "error: the child took no step" : line;
  }

 private:
  pid_t pid_ = -1;
  int go_ = -1, out_ = -1;
};

// A share answer as text: "corun=<0|1> gpu=<ordinal> reason=<why>", or "error: ...".
inline std::string AnswerText(const shm::Result<shm::ShareAnswer>& answer) {
  return answer.ok() ? "corun=" + std::to_string(answer->corun ? 1 : 0) +
                           " gpu=" + std::to_string(answer->gpu) + " reason=" + answer->reason
                     : "error: " + answer.status().ToString();
}

// A process (of kOtherUid, or of the test's uid) that asks the arbiter at `socket` for its MPS
// share, for `quota` bytes, when told to (Ask(): its answer as AnswerText). Forked at
// construction, before the arbiter's thread starts.
class OtherUidQuerier {
 public:
  explicit OtherUidQuerier(const std::string& socket, uid_t uid = kOtherUid, uint64_t quota = 0)
      : child_(uid, {[socket, quota] {
                 shm::ShareQuery q;
                 q.quota_bytes = quota;
                 q.slo_ms = 100;
                 q.function_name = "other-uid";
                 return AnswerText(shm::QueryShare(socket, q, std::chrono::seconds(10)));
               }}) {}
  std::string Ask() { return child_.Step(); }

 private:
  ForkedSteps child_;
};

// Waits for the next swap order after `last` and acknowledges it as done.
inline shm::SwapOrder ObeyNextOrder(Scripted& s, uint32_t last, uint64_t bytes) {
  auto order = s.chan->WaitForSwapOrder(last, std::chrono::seconds(30));
  EXPECT_TRUE(order.ok()) << order.status().ToString();
  if (!order.ok()) return {};
  const bool in = order->op == shm::SwapOp::kSwapIn;
  (void)s.chan->AckSwap(order->seq, shm::SwapAckStatus::kOk, bytes, 1000,
                        in ? shm::Residency::kResident : shm::Residency::kSwappedOut,
                        in ? order->target_gpu : shm::kNoGpu, in ? bytes : 0);
  return *order;
}

// Writes a value nobody may write into the client's token state (the arbiter disconnects it as
// malformed) and waits until the arbiter closed the connection. False if it never did.
inline bool MakeMalformedAndWaitForDisconnect(shm::ClientChannel& chan, int connection) {
  shm::StoreRelease(&chan.layout()->client_token.state, 77U);
  (void)chan.NotifyArbiter();
  pollfd p{connection, POLLRDHUP, 0};
  return ::poll(&p, 1, 30'000) == 1 && (p.revents & (POLLRDHUP | POLLHUP)) != 0;
}

}  // namespace gshare::arbiter::inproc
