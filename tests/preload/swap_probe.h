// SwapProbe: a `preload_probe swap` program (probe/swap.cc) run as a child process, and the
// test's side of its stdin/stdout protocol: start and wait for "ready" with its pointers,
// "verify", "where", "quit". Shared by the shim's tests here and in tests/arbiter, which all
// check that a program's data survives swaps and moves of its vGPU.
//
// Ownership: owns the ChildProcess (reaped, killed if still running, when destroyed).
// Thread-safety: one thread per object.
#pragma once

#include <sys/types.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "child_process.h"

namespace gshare::test {

// The answer to "verify": every block re-read and checksummed on the host and by a kernel.
struct Verified {
  bool answered = false;  // false: no "verified" line within the wait (its stderr tells why)
  std::string line;       // "verified blocks=N bad=N kernel_bad=N"
  std::vector<std::string> pointers;  // the "ptr=HEX" lines after it
  // Every block's bytes and kernel checksum intact.
  [[nodiscard]] bool intact() const;
};

// The answer to "where".
struct Where {
  int ctx_device = -1;   // the current context's device
  int count = -1;        // cuDeviceGetCount
  int ptr_ordinal = -1;  // the device ordinal of the first block
  unsigned primary = 0;  // bit per physical GPU holding an active primary context
};

class SwapProbe {
 public:
  // Starts `probe_bin swap <seed> <count> <big_mib>` with the current environment plus `env`
  // (ChildProcess's rules) and reads its first line and the pointer lines up to "end", each
  // within `line_wait`. ready() tells whether it got that far.
  SwapProbe(const std::string& probe_bin, uint32_t seed, int count, int big_mib,
            const std::map<std::string, std::string>& env,
            std::chrono::milliseconds line_wait = std::chrono::seconds(60));

  // Started, and its first line was "ready ...".
  [[nodiscard]] bool ready() const { return ready_; }
  // The first line it printed ("" if none): "ready blocks=N bytes=N kernels=0/1".
  [[nodiscard]] const std::string& ready_line() const { return ready_line_; }
  // The "ptr=HEX" lines of the ready block: the application's pointers.
  [[nodiscard]] const std::vector<std::string>& pointers() const { return pointers_; }
  [[nodiscard]] pid_t pid() const { return process_.pid(); }
  // For other commands ("grow", "inflight", ...) and for its stderr after Quit/Wait.
  [[nodiscard]] ChildProcess& process() { return process_; }

  Verified Verify();
  // For a probe that is not ready (or stopped answering): waits for it to end, killing it after
  // `wait`, and says how it ended and what it printed on stderr (a sanitizer's report, a crash),
  // which a failed assertion should show.
  std::string WhyItStopped(std::chrono::milliseconds wait = std::chrono::seconds(10));
  // Where{} (all -1) when the probe did not answer.
  Where AskWhere();
  // "quit", then ChildProcess::Wait's status (0 for a clean exit).
  int Quit(std::chrono::milliseconds exit_wait = std::chrono::seconds(120));

 private:
  // "ptr=..." lines up to "end".
  std::vector<std::string> ReadPointers();

  ChildProcess process_;
  std::chrono::milliseconds line_wait_;
  bool ready_ = false;
  std::string ready_line_;
  std::vector<std::string> pointers_;
};

// Definitions (header-only: the tests in tests/arbiter use it without building more sources).
inline bool Verified::intact() const {
  return answered && line.find(" bad=0 ") != std::string::npos &&
         line.find("kernel_bad=0") != std::string::npos;
}

inline SwapProbe::SwapProbe(const std::string& probe_bin, uint32_t seed, int count,
                            int big_mib, const std::map<std::string, std::string>& env,
                            std::chrono::milliseconds line_wait)
    : process_({probe_bin, "swap", std::to_string(seed), std::to_string(count),
                std::to_string(big_mib)},
               env),
      line_wait_(line_wait) {
  if (!process_.started() || !process_.ReadLine(&ready_line_, line_wait_)) return;
  if (ready_line_.rfind("ready", 0) != 0) return;
  pointers_ = ReadPointers();
  ready_ = true;
}

inline std::vector<std::string> SwapProbe::ReadPointers() {
  std::vector<std::string> ptrs;
  std::string line;
  while (process_.ReadLine(&line, line_wait_) && line != "end") ptrs.push_back(line);
  return ptrs;
}

inline Verified SwapProbe::Verify() {
  Verified v;
  if (!process_.WriteLine("verify") || !process_.ReadLine(&v.line, line_wait_)) return v;
  v.answered = v.line.rfind("verified ", 0) == 0;
  v.pointers = ReadPointers();
  return v;
}

inline std::string SwapProbe::WhyItStopped(std::chrono::milliseconds wait) {
  const int status = process_.Wait(wait);
  std::string how = WIFEXITED(status)     ? "exited " + std::to_string(WEXITSTATUS(status))
                    : WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                          : "status " + std::to_string(status);
  return "\nthe probe " + how + "; its stderr:\n" + process_.err();
}

inline Where SwapProbe::AskWhere() {
  Where w;
  std::string line;
  if (!process_.WriteLine("where") || !process_.ReadLine(&line, line_wait_)) return w;
  static const std::regex kWhere(
      "ctx_device=(-?\\d+) count=(-?\\d+) ptr_ordinal=(-?\\d+) primary=(\\d+)");
  std::smatch m;
  if (std::regex_search(line, m, kWhere)) {
    w.ctx_device = std::stoi(m[1]);
    w.count = std::stoi(m[2]);
    w.ptr_ordinal = std::stoi(m[3]);
    w.primary = static_cast<unsigned>(std::stoul(m[4]));
  }
  return w;
}

inline int SwapProbe::Quit(std::chrono::milliseconds exit_wait) {
  process_.WriteLine("quit");
  return process_.Wait(exit_wait);
}

// `pattern` (a path with "%p", as GSHARE_CONTROL_SOCKET takes) for process `pid`.
inline std::string PathForPid(std::string pattern, pid_t pid) {
  const size_t at = pattern.find("%p");
  if (at != std::string::npos) pattern.replace(at, 2, std::to_string(pid));
  return pattern;
}

}  // namespace gshare::test
