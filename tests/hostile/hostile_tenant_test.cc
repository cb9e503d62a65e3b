// The hostile-tenant suite (issue 16; docs/security.md "Hostile tenants"): real attacker
// processes (hostile_client) against a real gshare-arbiter on simcuda, each next to an honest
// tenant (arbiter_fake_function: the shim's real arbiter client) whose service is checked while
// the attack runs. Every test here failed before the fix it names: the loop stalled for the
// attack's length, a core burned, an exited process kept its registration, lies were reserved.
// Waits are safety nets; the bounds on the honest tenant's waits are an order of magnitude
// above an unloaded run and far below what each attack used to cost.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fault_env.h"
#include "test_util.h"

namespace gshare::fault {
namespace {

using arbiter::testing::ExitCode;
using arbiter::testing::LastJsonLine;
using arbiter::testing::ReadFile;
using arbiter::testing::Scaled;
using arbiter::testing::WaitFor;
using shm::Event;
using shm::EventType;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

const auto kSafety = seconds(60) * TimeScale();

// What the honest tenant saw.
struct HonestReport {
  bool ok = false;
  int requests = 0;
  double seconds = 0;
  double max_wait_ms = 0;
  std::string describe;
};

// CPU time (user + system) the process has used, in seconds.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream fields(stat.substr(paren + 2));
  std::string f;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i)
    if (i == 14 || i == 15) ticks += std::stod(f);
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

class HostileTenant : public ::testing::Test {
 protected:
  explicit HostileTenant(std::vector<std::string> args = {"--slice", "5ms"},
                         const std::string& gpu = "1x1GiB")
      : node_(gpu, "0", std::move(args)) {}

  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the attackers run as uid 65534: needs root";
    ASSERT_TRUE(node_.arbiter().Start()) << Log();
  }

  // Every test ends with the arbiter stopped cleanly, its invariants intact.
  void TearDown() override {
    if (node_.arbiter().pid() > 0) (void)StopArbiter();
  }

  std::string Log() { return "--- arbiter log:\n" + ReadFile(node_.arbiter().log()); }

  std::string ControlSocket() {
    const std::string& s = node_.arbiter().socket();
    return s.substr(0, s.rfind('/')) + "/control.sock";
  }

  // Starts an attacker as uid 65534 (the review's attackers were another uid than the honest
  // tenant: the limits are per uid); `cuda`: a CUDA process with simcuda's environment, as root
  // (simcuda's registry belongs to the test's uid).
  pid_t Attack(const std::vector<std::string>& args, const std::string& out, bool cuda = false) {
    std::vector<std::string> argv;
    if (!cuda) argv = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
    argv.push_back(HOSTILE_CLIENT_BIN);
    for (const std::string& a : args) argv.push_back(a);
    return node_.Track(arbiter::testing::Spawn(argv, node_.dir() / out, node_.dir() / (out + ".err"),
                                               cuda ? node_.SimcudaEnv() : std::vector<std::string>{}));
  }

  bool OutputHas(const std::string& out, const std::string& text, milliseconds timeout = kSafety) {
    const auto end = Clock::now() + timeout;
    while (Clock::now() < end) {
      if (ReadFile(node_.dir() / out).find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  }

  struct Honest {
    pid_t pid = -1;
    std::string out;
    Clock::time_point started;
  };

  // An honest tenant: `requests` requests of 500 us with 2 ms between them, 64 MiB, SLO 50 ms.
  Honest StartHonest(const std::string& name, int requests = 200) {
    Honest h;
    h.out = node_.dir() / (name + ".out");
    h.started = Clock::now();
    h.pid = node_.Track(arbiter::testing::Spawn(
        {FAKE_FUNCTION_BIN, "--socket", node_.arbiter().socket(), "--name", name, "--quota-mib",
         "64", "--slo-ms", "50", "--requests", std::to_string(requests), "--work-us", "500",
         "--gap-us", "2000"},
        h.out, node_.dir() / (name + ".err")));
    return h;
  }

  HonestReport FinishHonest(const Honest& h) {
    HonestReport r;
    const int status = WaitFor(h.pid, kSafety);
    r.seconds = std::chrono::duration<double>(Clock::now() - h.started).count();
    const nlohmann::json j = LastJsonLine(h.out);
    r.describe = ReadFile(h.out);
    if (ExitCode(status) != 0 || !j.is_object() || !j.contains("requests")) return r;
    r.ok = true;
    r.requests = j["requests"].get<int>();
    r.max_wait_ms = static_cast<double>(j["max_wait_us"].get<uint64_t>()) / 1000.0;
    std::printf("honest tenant: %d requests in %.2f s (%.0f/s), longest wait %.1f ms\n", r.requests,
                r.seconds, r.requests / r.seconds, r.max_wait_ms);
    RecordProperty("honest_requests_per_s", std::to_string(r.requests / r.seconds));
    RecordProperty("honest_max_wait_ms", std::to_string(r.max_wait_ms));
    return r;
  }

  // Item 1's attack against `socket` (the registration or, `control`, the control socket).
  void LingerAttack(const std::string& socket, bool control) {
    Attack({"linger-fd", "--socket", socket, "--linger-s", "30", "--control", control ? "1" : "0"},
           "linger.out");
    ASSERT_TRUE(OutputHas("linger.out", "fd ")) << ReadFile(node_.dir() / "linger.out") << Log();
    const Honest h = StartHonest("honest", 400);
    const HonestReport r = FinishHonest(h);
    std::printf("attacker: %s", ReadFile(node_.dir() / "linger.out").c_str());
    ASSERT_TRUE(r.ok) << r.describe << Log();
    EXPECT_LT(r.max_wait_ms, 2000) << "the loop stalled: " << r.describe;
    EXPECT_LT(r.seconds, 20) << "the loop stalled for the linger";
  }

  // Stops the arbiter; its summary (checked: no invariant was violated on the way).
  nlohmann::json StopArbiter() {
    nlohmann::json summary = node_.arbiter().Stop();
    if (summary.is_object()) {
      EXPECT_EQ(summary.value("invariant_violations", uint64_t{0}), 0u) << summary.dump() << Log();
    }
    return summary;
  }

  FaultNode node_;
};

// Item 1: a request carrying a lingering TCP socket (unsent data, SO_LINGER 30 s) sent to
// `socket` (`control`: as a control request, before any access check). The kernel refuses the
// descriptor (SO_PASSRIGHTS, Linux >= 6.16) or, on older kernels, the arbiter closes it off the
// loop (FdReaper); either way the honest tenant is served while the linger runs.
TEST_F(HostileTenant, DescriptorWithLingerNeverStallsTheLoop) {
  LingerAttack(node_.arbiter().socket(), false);
}

TEST_F(HostileTenant, DescriptorOnTheControlSocketNeverStallsTheLoop) {
  LingerAttack(ControlSocket(), true);
}

// Item 2: 16 connections that never send their request, renewed as they are dropped, for 4 s.
TEST_F(HostileTenant, HalfOpenRegistrationsNeverStallTheLoop) {
  const pid_t storm =
      Attack({"half-open", "--socket", node_.arbiter().socket(), "--count", "16", "--seconds", "4"},
             "storm.out");
  std::this_thread::sleep_for(milliseconds(300));
  const Honest h = StartHonest("honest", 400);
  const HonestReport r = FinishHonest(h);
  (void)WaitFor(storm, kSafety);
  ASSERT_TRUE(r.ok) << r.describe << Log();
  EXPECT_LT(r.max_wait_ms, 1000) << r.describe;
}

// Item 3: a CUDA process sends five re-registrations (each makes the arbiter ask the driver for
// its state) and stops itself: the driver answers only after its timeout, on the worker.
TEST_F(HostileTenant, StoppedRegistrantNeverStallsTheLoop) {
  const pid_t stopped = Attack({"stopped-registrant", "--socket", node_.arbiter().socket(),
                                "--count", "5"},
                               "stopped.out", /*cuda=*/true);
  ASSERT_TRUE(OutputHas("stopped.out", "sent 5")) << ReadFile(node_.dir() / "stopped.out.err");
  const Honest h = StartHonest("honest", 400);
  const HonestReport r = FinishHonest(h);
  ::kill(stopped, SIGKILL);
  (void)WaitFor(stopped, kSafety);
  ASSERT_TRUE(r.ok) << r.describe << Log();
  EXPECT_LT(r.max_wait_ms, 1000) << r.describe;
}

// Item 4: a holder that marks itself draining and never releases, ringing 5,000 times a second
// on a GPU nobody else wants: the arbiter spins for its release once per grant, not per ring
// (before: a 200 us spin at every ring, a whole core on an idle machine).
TEST_F(HostileTenant, DrainingHolderThatRingsDoesNotBurnACore) {
  const pid_t ringer = Attack({"drain-ring", "--socket", node_.arbiter().socket(), "--seconds",
                               "4", "--rate", "5000"},
                              "ring.out");
  ASSERT_TRUE(OutputHas("ring.out", "draining")) << Log();
  const double before = CpuSeconds(node_.arbiter().pid());
  const auto t0 = Clock::now();
  ASSERT_EQ(ExitCode(WaitFor(ringer, kSafety)), 0) << ReadFile(node_.dir() / "ring.out");
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = CpuSeconds(node_.arbiter().pid()) - before;
  std::printf("arbiter CPU while the draining holder rang: %.2f s in %.2f s\n", cpu, wall);
  RecordProperty("arbiter_cpu_share", std::to_string(cpu / wall));
  EXPECT_LT(cpu, 0.5 * wall) << ReadFile(node_.dir() / "ring.out");
  // The measure that does not depend on the machine's load (a loaded machine takes the spin's
  // yields away): one spin for the one grant, not one per ring.
  const nlohmann::json summary = StopArbiter();
  ASSERT_TRUE(summary.is_object());
  EXPECT_LE(summary.value("release_spins", uint64_t{999999}), summary["grants"].get<uint64_t>())
      << summary.dump();
}

// Items 7 and 8 (the arbiter's side): a registered process that forks a child (which inherits
// the connection and the channel, holding the token) and exits is gone at once; the child's
// copy of the connection keeps nothing alive, and the GPU is free for the next tenant.
TEST_F(HostileTenant, ExitedRegistrantIsGoneThoughItsChildHoldsTheConnection) {
  const pid_t parent = Attack({"fork-hold", "--socket", node_.arbiter().socket()}, "fork.out");
  ASSERT_TRUE(OutputHas("fork.out", "child ")) << Log();
  (void)WaitFor(parent, kSafety);
  const std::string out = ReadFile(node_.dir() / "fork.out");
  const pid_t child = std::atoi(out.substr(out.find("child ") + 6).c_str());
  ASSERT_GT(child, 0) << out;
  node_.Track(child);
  EXPECT_TRUE(node_.WaitForEvent(0, [](const Event& e) { return e.type == EventType::kUnregister; },
                                 seconds(10)))
      << "the exited registrant is still registered" << Log();
  const Honest h = StartHonest("honest", 100);
  const HonestReport r = FinishHonest(h);
  ASSERT_TRUE(r.ok) << r.describe << Log();
  EXPECT_LT(r.max_wait_ms, 1000) << r.describe;
  ::kill(child, SIGKILL);
  const nlohmann::json summary = StopArbiter();
  ASSERT_TRUE(summary.is_object());
  EXPECT_EQ(summary["exited_with_connection_held"].get<int>(), 1) << summary.dump();
  EXPECT_EQ(summary["enforcements"].get<int>() + summary["unenforceable"].get<int>(), 0)
      << "the arbiter acted on the exited registrant's pid: " << summary.dump();
}

// Item 9: three resident claims of 1 GiB on a 1 GiB GPU by a process the driver knows no CUDA
// state of: none is believed (no reservation, no overshoot), and the honest tenant is served.
TEST_F(HostileTenant, ResidentClaimsOfANonCudaProcessAreNotReserved) {
  Attack({"resident-lie", "--socket", node_.arbiter().socket(), "--quota-mib", "1024", "--count",
          "3"},
         "lie.out");
  ASSERT_TRUE(OutputHas("lie.out", "accepted 3 of 3")) << ReadFile(node_.dir() / "lie.out") << Log();
  const Honest h = StartHonest("honest", 100);
  const HonestReport r = FinishHonest(h);
  ASSERT_TRUE(r.ok) << r.describe << Log();
  EXPECT_LT(r.max_wait_ms, 5000) << r.describe;
  const nlohmann::json summary = StopArbiter();
  ASSERT_TRUE(summary.is_object());
  const auto& gpu = summary["gpus"][0];
  EXPECT_EQ(gpu["overshoot_events"].get<int>(), 0) << summary.dump();
  EXPECT_LE(gpu["peak_reserved_bytes"].get<uint64_t>(), gpu["usable_bytes"].get<uint64_t>());
  EXPECT_EQ(summary["resident_claims_refused"].get<int>(), 3) << summary.dump();
}

class HostileTenantBigGpu : public HostileTenant {
 protected:
  HostileTenantBigGpu() : HostileTenant({"--slice", "5ms"}, "1x2GiB") {}
};

// Item 9, a CUDA process: its first claim right after the start is believed (it could be a
// tenant of a previous arbiter); its second and third are not, though they would fit.
TEST_F(HostileTenantBigGpu, OnlyAProcesssFirstResidentClaimIsBelieved) {
  Attack({"resident-lie", "--socket", node_.arbiter().socket(), "--quota-mib", "768", "--count",
          "3", "--cuda", "1"},
         "lie.out", /*cuda=*/true);
  ASSERT_TRUE(OutputHas("lie.out", "accepted 3 of 3")) << ReadFile(node_.dir() / "lie.out") << Log();
  const nlohmann::json summary = StopArbiter();
  ASSERT_TRUE(summary.is_object());
  const auto& gpu = summary["gpus"][0];
  EXPECT_EQ(summary["resident_claims_refused"].get<int>(), 2) << summary.dump();
  EXPECT_LE(gpu["peak_reserved_bytes"].get<uint64_t>(), uint64_t{768} << 20) << summary.dump();
  EXPECT_EQ(gpu["overshoot_events"].get<int>(), 0) << summary.dump();
}

// Item 10: a holder that cannot be checkpointed (no CUDA state) is disconnected after its slice
// and grace, and comes straight back: from its second disconnection on, its uid is refused for
// a growing back-off, so it holds the GPU a handful of times instead of every 200 ms.
TEST_F(HostileTenant, UnenforceableHolderBacksOff) {
  const pid_t loop = Attack({"unenforceable-loop", "--socket", node_.arbiter().socket(),
                             "--seconds", "6"},
                            "loop.out");
  std::this_thread::sleep_for(milliseconds(100));
  const Honest h = StartHonest("honest", 2000);  // about 5 s unloaded: wants the GPU throughout
  const HonestReport r = FinishHonest(h);
  EXPECT_TRUE(r.ok) << r.describe << Log();
  ASSERT_EQ(ExitCode(WaitFor(loop, kSafety)), 0) << ReadFile(node_.dir() / "loop.out");
  const std::string out = ReadFile(node_.dir() / "loop.out");
  const int holds = std::atoi(out.substr(out.find("holds ") + 6).c_str());
  std::printf("unenforceable holder: %s", out.c_str());
  EXPECT_LE(holds, 6) << out;
  const nlohmann::json summary = StopArbiter();
  ASSERT_TRUE(summary.is_object());
  EXPECT_GE(summary["refusals_backoff"].get<int>(), 1) << summary.dump();
}

class HostileTenantLimits : public HostileTenant {
 protected:
  HostileTenantLimits()
      : HostileTenant({"--slice", "5ms", "--max-clients-per-pid", "4"}) {}
};

// Items 5 and 6: one process registering ten times gets its four clients and clear refusals.
TEST_F(HostileTenantLimits, ClientsPerProcessAreLimited) {
  Attack({"register-many", "--socket", node_.arbiter().socket(), "--count", "10"}, "many.out");
  ASSERT_TRUE(OutputHas("many.out", "last ")) << Log();
  const std::string out = ReadFile(node_.dir() / "many.out");
  EXPECT_NE(out.find("accepted 4 refused 6"), std::string::npos) << out;
  EXPECT_NE(out.find("max_clients_per_pid"), std::string::npos) << out;
  const Honest h = StartHonest("honest", 50);
  const HonestReport r = FinishHonest(h);
  EXPECT_TRUE(r.ok) << r.describe << Log();
}

// Item 6: registration churn leaves no state behind: function ids are reused, the policy and the
// per-uid table keep only the live tenants (before: every registration's id and policy entry
// kept for the arbiter's life, 562 MiB after 277k registrations).
TEST_F(HostileTenant, RegistrationChurnLeavesNoStateBehind) {
  const pid_t churn = Attack({"churn", "--socket", node_.arbiter().socket(), "--count", "300"},
                             "churn.out");
  ASSERT_EQ(ExitCode(WaitFor(churn, kSafety)), 0) << ReadFile(node_.dir() / "churn.out");
  const std::string out = ReadFile(node_.dir() / "churn.out");
  const int churned = std::atoi(out.substr(out.find("churned ") + 8).c_str());
  EXPECT_GE(churned, 150) << out;  // the rest refused by the registration rate
  const nlohmann::json summary = StopArbiter();
  ASSERT_TRUE(summary.is_object());
  EXPECT_LE(summary.value("function_ids", uint64_t{999999}), 2u) << summary.dump();
  EXPECT_LE(summary.value("policy_entries", uint64_t{999999}), 16u) << summary.dump();
  EXPECT_LE(summary.value("tracked_uids", uint64_t{999999}), 1u) << summary.dump();
}

class HostileTenantRate : public HostileTenant {
 protected:
  HostileTenantRate()
      : HostileTenant({"--slice", "5ms", "--registration-rate-per-uid", "5"}) {}
};

// Item 6: registrations of one uid beyond its rate (5 a second, bursts of 10) are refused.
TEST_F(HostileTenantRate, RegistrationRatePerUidIsLimited) {
  Attack({"register-many", "--socket", node_.arbiter().socket(), "--count", "30"}, "many.out");
  ASSERT_TRUE(OutputHas("many.out", "last ")) << Log();
  const std::string out = ReadFile(node_.dir() / "many.out");
  const int accepted = std::atoi(out.substr(out.find("accepted ") + 9).c_str());
  EXPECT_GE(accepted, 10) << out;
  EXPECT_LE(accepted, 14) << out;
  EXPECT_NE(out.find("registration_rate_per_uid"), std::string::npos) << out;
}

class HostileTenantFewFds : public HostileTenant {
 protected:
  HostileTenantFewFds() : HostileTenant({"--slice", "5ms", "--max-clients-per-uid", "0"}) {}
  // Once started, the daemon is limited to 64 descriptors (soft and hard, so it cannot raise
  // them; lowering another process's limit needs no privilege beyond being its owner).
  void SetUp() override {
    HostileTenant::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    const rlimit few{64, 64};
    ASSERT_EQ(::prlimit(node_.arbiter().pid(), RLIMIT_NOFILE, &few, nullptr), 0)
        << std::strerror(errno);
  }
};

// Item 5: out of descriptors, a pending registration is accepted with the reserve descriptor and
// refused with a reason, instead of leaving the listener readable (a core spinning on EMFILE).
TEST_F(HostileTenantFewFds, OutOfDescriptorsRefusesInsteadOfSpinning) {
  const Honest first = StartHonest("first", 50);  // registered before the attack: still served
  ASSERT_TRUE(FinishHonest(first).ok) << Log();
  Attack({"register-many", "--socket", node_.arbiter().socket(), "--count", "40"}, "many.out");
  ASSERT_TRUE(OutputHas("many.out", "last ")) << Log();
  const std::string out = ReadFile(node_.dir() / "many.out");
  // Refused with the reason: at accept ("out of file descriptors", the reserve descriptor) or
  // at the channel's creation ("Too many open files"), whichever runs out first.
  EXPECT_TRUE(out.find("out of file descriptors") != std::string::npos ||
              out.find("Too many open files") != std::string::npos)
      << out;
  const double before = CpuSeconds(node_.arbiter().pid());
  std::this_thread::sleep_for(seconds(2));
  const double cpu = CpuSeconds(node_.arbiter().pid()) - before;
  std::printf("%sarbiter CPU out of descriptors: %.2f s in 2 s\n", out.c_str(), cpu);
  EXPECT_LT(cpu, 0.5) << out;
}

}  // namespace
}  // namespace gshare::fault
