// ArbiterMonitor: a thread that asks the arbiter's control socket for its status every
// poll_interval and keeps the Inventory (inventory.h) current. Each change of the device list
// bumps a generation, which ListAndWatch streams wait on to send the list again.
// A refused, failed or malformed reply makes every device unhealthy, with the reason logged
// once per distinct reason; the monitor never stops trying.
// Thread-safety: every public method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "config.h"
#include "inventory.h"

namespace gshare::deviceplugin {

class ArbiterMonitor {
 public:
  explicit ArbiterMonitor(const PluginConfig& config);
  ~ArbiterMonitor();  // stops the thread
  ArbiterMonitor(const ArbiterMonitor&) = delete;
  ArbiterMonitor& operator=(const ArbiterMonitor&) = delete;

  // Asks the arbiter once now (so the first list kubelet sees is real), then starts polling.
  void Start();
  void Stop();

  // The current view and its generation.
  Snapshot Current(uint64_t* generation = nullptr) const;
  // Waits until the generation differs from `seen`, Stop() is called or `timeout` passes;
  // returns the current generation.
  uint64_t WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) const;
  bool stopped() const;

 private:
  void PollOnce();
  void Run();

  std::string control_socket_;
  std::chrono::milliseconds interval_;
  std::chrono::milliseconds timeout_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  Inventory inventory_;        // guarded by mu_
  uint64_t generation_ = 1;    // guarded by mu_
  bool stop_ = false;          // guarded by mu_
  std::string last_problem_;   // guarded by mu_ (logged once per distinct problem)
  std::thread thread_;
};

}  // namespace gshare::deviceplugin
