// Shared pieces of the tools' tests (gshare-ctl, gshare-top, gshare-run): a real gshare-arbiter
// on a simulated 1 GiB GPU (no driver) in a per-test directory, fake functions speaking the real
// protocol (tests/arbiter's arbiter_fake_function), and running the tools as processes.
#pragma once

#include <signal.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace gshare::arbiter::testing {

// A running fake function, killed when the test ends unless it was waited for.
class FakeFunction {
 public:
  FakeFunction(const TempDir& dir, const std::string& socket, const std::string& name,
               std::vector<std::string> args);
  ~FakeFunction();
  FakeFunction(const FakeFunction&) = delete;
  FakeFunction& operator=(const FakeFunction&) = delete;
  pid_t pid() const { return pid_; }
  // Waits for it to finish (safety timeout); its exit code (0: every request ran correctly).
  int Wait(std::chrono::seconds timeout = std::chrono::seconds(90));
  std::string output() const { return ReadFile(out_) + ReadFile(err_); }

 private:
  pid_t pid_ = -1;
  std::string out_, err_;
};

class ToolsTest : public ::testing::Test {
 protected:
  // Starts the arbiter with `extra` flags on top of a 1 GiB GPU and no driver.
  void StartArbiter(std::vector<std::string> extra = {});
  std::string control() const { return dir / "control.sock"; }
  // gshare-ctl --socket <control> args...
  ToolResult Ctl(std::vector<std::string> args);
  // gshare-ctl --json ...; the parsed reply (null when it is not JSON).
  nlohmann::json CtlJson(std::vector<std::string> args);
  // Polls `gshare-ctl --json clients` until `pred` holds for the list (safety timeout).
  bool WaitForClients(const std::function<bool(const nlohmann::json&)>& pred,
                      std::chrono::seconds timeout = std::chrono::seconds(30));
  // Polls `gshare-ctl --json <command>` until `pred` holds for the ok reply (safety timeout).
  bool WaitForReply(const std::string& command, const std::function<bool(const nlohmann::json&)>& pred,
                    std::chrono::seconds timeout = std::chrono::seconds(30));

  TempDir dir;
  std::unique_ptr<ArbiterProcess> arb;
};

}  // namespace gshare::arbiter::testing
