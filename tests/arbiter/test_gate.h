// TestGate: a stand-in for the shim's submission gate in the arbiter's test programs and
// benchmark (no CUDA, no preload runtime): submitters enter and exit, Close() waits for the
// admitted ones, and it remembers whether anything was submitted since the last TakeActivity().
// Thread-safe (one mutex; speed is not the point here).
#pragma once

#include <condition_variable>
#include <mutex>

namespace gshare::arbiter::testing {

class TestGate {
 public:
  // True: admitted (call Exit()); false: closed.
  bool TryEnter() {
    std::lock_guard<std::mutex> l(mu_);
    if (closed_) return false;
    ++active_;
    activity_ = true;
    return true;
  }
  void Exit() {
    std::lock_guard<std::mutex> l(mu_);
    --active_;
    cv_.notify_all();
  }
  void Close() {
    std::unique_lock<std::mutex> l(mu_);
    closed_ = true;
    cv_.wait(l, [&] { return active_ == 0; });
  }
  void Open() {
    std::lock_guard<std::mutex> l(mu_);
    closed_ = false;
    opened_ = true;
  }
  // Submitted since the last call, or a submission is still inside.
  bool TakeActivity() {
    std::lock_guard<std::mutex> l(mu_);
    const bool a = activity_ || active_ > 0;
    activity_ = false;
    return a;
  }
  // Whether the gate was ever opened (by a grant).
  bool ever_opened() {
    std::lock_guard<std::mutex> l(mu_);
    return opened_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;
  bool opened_ = false;
  int active_ = 0;
  bool activity_ = false;
};

}  // namespace gshare::arbiter::testing
