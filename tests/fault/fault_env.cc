// The node of a fault-injection or soak test (see fault_env.h).
#include "fault_env.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace gshare::fault {

int TimeScale() { return arbiter::testing::TimeScale(); }  // one reading of the variable

using arbiter::testing::ExitCode;
using arbiter::testing::LastJsonLine;
using arbiter::testing::ReadFile;
using arbiter::testing::WaitFor;

// The node's daemon checks its invariants after every loop iteration (summary
// "invariant_violations"), unless the suite runs against another build of it
// (GSHARE_TEST_ARBITER_BIN, which may predate the flag).
static std::vector<std::string> WithInvariantChecks(std::vector<std::string> args) {
  const char* other = std::getenv("GSHARE_TEST_ARBITER_BIN");
  if (other == nullptr || *other == '\0') {
    args.push_back("--check-invariants");
    args.push_back("on");
  }
  return args;
}

FaultNode::FaultNode(const std::string& devices, const std::string& link_gbps,
                     std::vector<std::string> arbiter_args)
    : tag_(std::filesystem::path(dir_.path()).filename().string()),
      registry_("/" + tag_ + "-simcuda"),
      created_(std::filesystem::file_time_type::clock::now()),
      devices_(devices),
      link_gbps_(link_gbps),
      arbiter_(dir_, WithInvariantChecks(std::move(arbiter_args))) {
  arbiter_.env = SimcudaEnv();
}

FaultNode::~FaultNode() {
  for (const pid_t pid : children_) {
    // Only a child not yet reaped still owns its pid (a reaped one's may belong to another
    // process now): waitpid(WNOHANG) == 0 means it is ours and running.
    if (::waitpid(pid, nullptr, WNOHANG) == 0) {
      ::kill(pid, SIGKILL);
      (void)::waitpid(pid, nullptr, 0);
    }
  }
  arbiter_.Kill();
  ::shm_unlink(registry_.c_str());
}

std::vector<std::string> FaultNode::SimcudaEnv() const {
  return {std::string("LD_LIBRARY_PATH=") + SIMCUDA_DIR, "SIMCUDA_DEVICES=" + devices_,
          "SIMCUDA_REGISTRY=" + registry_, std::string("SIMCUDA_KERNELS=") + SIMCUDA_KERNELS_LIB,
          "SIMCUDA_LINK_GBPS=" + link_gbps_};
}

Worker FaultNode::Spawn(const WorkerSpec& spec) {
  Worker w;
  w.name = spec.name;
  w.out = dir_ / (spec.name + ".out");
  w.log = dir_ / (spec.name + ".log");
  std::vector<std::string> env = SimcudaEnv();
  env.push_back(std::string("LD_PRELOAD=") + PRELOAD_LIB);
  env.push_back("GSHARE_ARBITER_SOCKET=" + arbiter_.socket());
  env.push_back("GSHARE_VGPU_MEMORY=" + spec.quota);
  env.push_back("GSHARE_FUNCTION=" + spec.name);
  env.push_back("GSHARE_SLO_MS=50");
  env.push_back("GSHARE_LOG_LEVEL=debug");
  env.push_back("GSHARE_LOG_FILE=" + w.log);
  env.insert(env.end(), spec.extra_env.begin(), spec.extra_env.end());
  std::vector<std::string> argv = {
      WORKER_BIN, "run", "--seed", std::to_string(spec.seed), "--big-mib",
      std::to_string(spec.big_mib), "--budget-mib", std::to_string(spec.budget_mib), "--turns",
      std::to_string(spec.turns), "--ops", std::to_string(spec.ops), "--idle-ms",
      std::to_string(spec.idle_ms)};
  argv.insert(argv.end(), spec.extra_args.begin(), spec.extra_args.end());
  w.pid = Track(arbiter::testing::Spawn(argv, w.out, dir_ / (spec.name + ".err"), env));
  return w;
}

pid_t FaultNode::Track(pid_t pid) {
  if (pid > 0) children_.push_back(pid);
  return pid;
}

nlohmann::json FaultNode::Finish(const Worker& w, std::chrono::seconds timeout, int* exit_code) {
  *exit_code = ExitCode(WaitFor(w.pid, timeout));
  return LastJsonLine(w.out);
}

std::string FaultNode::Describe(const Worker& w) const {
  return "--- " + w.name + " stdout:\n" + ReadFile(w.out) + "--- stderr:\n" +
         ReadFile(dir_ / (w.name + ".err")) + "--- shim log (tail):\n" +
         [&] {
           const std::string log = ReadFile(w.log);
           return log.size() > 6000 ? log.substr(log.size() - 6000) : log;
         }() +
         "\n";
}

std::optional<uint64_t> FaultNode::DeviceUsed() {
  const std::string out = dir_ / "used.out";
  const pid_t pid = arbiter::testing::Spawn({WORKER_BIN, "used"}, out, "", SimcudaEnv());
  if (ExitCode(WaitFor(pid, std::chrono::seconds(60))) != 0) return std::nullopt;
  const std::string text = ReadFile(out);
  const auto at = text.find("used=");
  if (at == std::string::npos) return std::nullopt;
  return std::stoull(text.substr(at + 5));
}

std::optional<int> FaultNode::ProcessState(pid_t pid) {
  const std::string out = dir_ / "state.out";
  const pid_t child =
      arbiter::testing::Spawn({WORKER_BIN, "state", std::to_string(pid)}, out, "", SimcudaEnv());
  if (ExitCode(WaitFor(child, std::chrono::seconds(60))) != 0) return std::nullopt;
  const std::string text = ReadFile(out);
  const auto at = text.find("state=");
  if (at == std::string::npos) return std::nullopt;
  return std::stoi(text.substr(at + 6));
}

std::vector<shm::Event> FaultNode::Events(int start) {
  std::vector<shm::Event> all;
  auto reader = shm::EventRingReader::Open(arbiter_.events(start));
  if (!reader.ok()) return all;
  reader->SeekToOldest();
  std::array<shm::Event, 256> buf;
  for (;;) {
    const size_t n = reader->Read(buf);
    if (n == 0) break;
    all.insert(all.end(), buf.begin(), buf.begin() + static_cast<long>(n));
  }
  return all;
}

std::optional<shm::Event> FaultNode::WaitForEvent(
    int start, const std::function<bool(const shm::Event&)>& match,
    std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  std::optional<shm::EventRingReader> reader;
  std::array<shm::Event, 256> buf;
  while (std::chrono::steady_clock::now() < end) {
    if (!reader) {
      auto r = shm::EventRingReader::Open(arbiter_.events(start));
      if (r.ok()) {
        reader.emplace(std::move(*r));
        reader->SeekToOldest();
      }
    }
    if (reader) {
      for (size_t n = reader->Read(buf); n > 0; n = reader->Read(buf)) {
        for (size_t i = 0; i < n; ++i)
          if (match(buf[i])) return buf[i];
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return std::nullopt;
}

pid_t FaultNode::ClientPid(int start, uint32_t client_id) {
  for (const shm::Event& e : Events(start))
    if (e.type == shm::EventType::kRegister && e.client_id == client_id)
      return static_cast<pid_t>(e.args[2]);
  return -1;
}

std::vector<std::string> FaultNode::LeftoverShm(const std::vector<pid_t>& pids) const {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = e.path().filename().string();
    if ("/" + name == registry_) continue;
    const auto written = std::filesystem::last_write_time(e.path(), ec);
    if (!ec && written < created_) continue;  // from before this node: not its leftover
    bool mine = name.find(tag_) != std::string::npos;
    for (const pid_t pid : pids) {
      const std::string p = std::to_string(pid);
      for (size_t at = name.find(p); at != std::string::npos; at = name.find(p, at + 1)) {
        const bool left = at == 0 || !isdigit(static_cast<unsigned char>(name[at - 1]));
        const bool right = at + p.size() == name.size() ||
                           !isdigit(static_cast<unsigned char>(name[at + p.size()]));
        mine = mine || (left && right);
      }
    }
    if (mine) found.push_back(name);
  }
  return found;
}

}  // namespace gshare::fault
