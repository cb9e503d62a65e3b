// Unit tests of MpsDaemons (arbiter/src/mps_daemons.h) with real processes: a small shell program
// stands in for the MPS control program (`-f`: the daemon, serving its pipe directory until
// told to quit; no argument: the client mode, reading `quit` from stdin) and logs every
// invocation, so the tests see which directories and GPUs each daemon got, who asked whom to
// quit, and that a restart on the arbiter's loop only spawns (it never waits for a client).
#include "mps_daemons.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace gshare::arbiter {
namespace {

constexpr uint64_t kSec = 1'000'000'000;

constexpr char kFakeControl[] = R"sh(#!/bin/sh
pidf="$CUDA_MPS_PIPE_DIRECTORY/daemon.pid"
if [ "$1" = "-f" ]; then
  echo "daemon $CUDA_VISIBLE_DEVICES $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY" >> "$FAKE_MPS_LOG"
  echo $$ > "$pidf"
  exec sleep 1000
fi
read cmd
echo "client $cmd $CUDA_MPS_PIPE_DIRECTORY" >> "$FAKE_MPS_LOG"
case "$cmd" in
  get_server_list) [ -n "$FAKE_MPS_SERVERS" ] && { echo "$FAKE_MPS_SERVERS"; exit 0; }; echo 4242; exit 0 ;;
  "get_client_list 4242") echo "$FAKE_MPS_CLIENTS" | tr ',' '\n'; exit 0 ;;
  "terminate_client 4242 "*) exit 0 ;;
  slow) sleep 5; exit 0 ;;
  bad) echo "ERROR: unknown command"; exit 0 ;;
esac
if [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null; then
  [ -n "$FAKE_MPS_STUBBORN" ] || kill "$(cat "$pidf")"
  rm -f "$pidf"
  exit 0
fi
exit 1
)sh";

class MpsDaemonsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gshare-mps-daemons-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    program_ = dir_ + "/fake-mps-control";
    {
      std::ofstream out(program_);
      out << kFakeControl;
    }
    ASSERT_EQ(::chmod(program_.c_str(), 0755), 0);
    log_ = dir_ + "/invocations.log";
    ::setenv("FAKE_MPS_LOG", log_.c_str(), 1);
    ::unsetenv("FAKE_MPS_STUBBORN");
  }
  void TearDown() override {
    ::unsetenv("FAKE_MPS_STUBBORN");
    std::filesystem::remove_all(dir_);
  }

  // The invocations logged so far, once there are `at_least` (a daemon logs itself after it
  // was spawned: the safety net waits for it, up to 10 s).
  std::vector<std::string> Invocations(size_t at_least = 0) const {
    std::vector<std::string> lines = ReadLog();
    for (int i = 0; i < 1000 && lines.size() < at_least; ++i) {
      ::usleep(10'000);
      lines = ReadLog();
    }
    return lines;
  }
  std::vector<std::string> ReadLog() const {
    std::vector<std::string> lines;
    std::ifstream in(log_);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  }
  // The first word of each invocation: "client" or "daemon".
  std::vector<std::string> Kinds(size_t at_least) const {
    std::vector<std::string> kinds;
    for (const std::string& l : Invocations(at_least)) kinds.push_back(l.substr(0, l.find(' ')));
    return kinds;
  }
  static bool WaitReadable(int fd, int ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, ms) == 1;
  }
  // The pid the daemon of GPU index g runs as (its Json), 0 if none.
  static pid_t DaemonPid(const MpsDaemons& m, uint32_t g) {
    const auto j = m.Json(GpuIndex{g});
    return j.is_null() ? 0 : j["pid"].get<pid_t>();
  }

  std::string dir_, program_, log_;
};

TEST_F(MpsDaemonsTest, EachGpuGetsItsOwnDaemonDirectoriesAndDevice) {
  MpsDaemons m;
  const std::string root = dir_ + "/mps";
  ASSERT_TRUE(m.Start(program_, root, {{GpuIndex{0}, DeviceOrdinal{3}}, {GpuIndex{1}, DeviceOrdinal{5}}}).ok());
  EXPECT_TRUE(m.Running(GpuIndex{0}));
  EXPECT_TRUE(m.Running(GpuIndex{1}));
  EXPECT_FALSE(m.Running(GpuIndex{2}));
  EXPECT_EQ(m.pidfd(GpuIndex{2}), -1);
  EXPECT_EQ(m.PipeDir(GpuIndex{0}), root + "/gpu3/pipe");
  EXPECT_EQ(m.PipeDir(GpuIndex{1}), root + "/gpu5/pipe");
  EXPECT_EQ(m.PipeDir(GpuIndex{2}), "");
  EXPECT_TRUE(std::filesystem::is_directory(root + "/gpu5/log"));
  // Each daemon was started after asking its directory's stale daemon (none here) to quit (a
  // daemon logs itself when it runs: the order between GPUs is not fixed).
  auto lines = Invocations(4);
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "client quit " + root + "/gpu3/pipe",
                       "client quit " + root + "/gpu5/pipe",
                       "daemon 3 " + root + "/gpu3/pipe " + root + "/gpu3/log",
                       "daemon 5 " + root + "/gpu5/pipe " + root + "/gpu5/log",
                   }));
  m.Stop();
  EXPECT_FALSE(m.Running(GpuIndex{0}));
  EXPECT_FALSE(m.Running(GpuIndex{1}));
}

TEST_F(MpsDaemonsTest, ADaemonThatDiesIsRestartedAfterABackOffWithoutAskingAnyoneToQuit) {
  MpsDaemons m;
  ASSERT_TRUE(m.Start(program_, dir_ + "/mps", {{GpuIndex{0}, DeviceOrdinal{0}}}).ok());
  const pid_t first = DaemonPid(m, 0);
  ASSERT_GT(first, 0);
  ASSERT_EQ(Invocations(2).size(), 2u);  // it runs (and logged itself) before it is killed
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_TRUE(WaitReadable(m.pidfd(GpuIndex{0}), 10'000));
  m.OnExit(GpuIndex{0}, 100 * kSec);
  EXPECT_FALSE(m.Running(GpuIndex{0}));
  EXPECT_EQ(m.pidfd(GpuIndex{0}), -1);
  EXPECT_EQ(m.NextRestartNs(), 101 * kSec);
  EXPECT_TRUE(m.RestartDue(100 * kSec + kSec / 2).empty());
  EXPECT_EQ(m.RestartDue(101 * kSec), std::vector<GpuIndex>{GpuIndex{0}});
  EXPECT_TRUE(m.Running(GpuIndex{0}));
  EXPECT_EQ(m.NextRestartNs(), UINT64_MAX);
  EXPECT_EQ(m.Json(GpuIndex{0})["restarts"], 1);
  EXPECT_NE(DaemonPid(m, 0), first);
  // The restart ran on the loop: it spawned the daemon and nothing else (asking a stale daemon
  // to quit waits up to seconds for the control program, and the one replaced was reaped).
  EXPECT_EQ(Kinds(3), (std::vector<std::string>{"client", "daemon", "daemon"}));

  // A second death waits twice as long.
  ASSERT_EQ(Invocations(3).size(), 3u);
  ASSERT_EQ(::kill(DaemonPid(m, 0), SIGKILL), 0);
  ASSERT_TRUE(WaitReadable(m.pidfd(GpuIndex{0}), 10'000));
  m.OnExit(GpuIndex{0}, 200 * kSec);
  EXPECT_EQ(m.NextRestartNs(), 202 * kSec);
}

TEST_F(MpsDaemonsTest, ASpuriousWakeUpOfALiveDaemonChangesNothing) {
  MpsDaemons m;
  ASSERT_TRUE(m.Start(program_, dir_ + "/mps", {{GpuIndex{0}, DeviceOrdinal{0}}}).ok());
  const pid_t pid = DaemonPid(m, 0);
  m.OnExit(GpuIndex{0}, 5 * kSec);
  EXPECT_TRUE(m.Running(GpuIndex{0}));
  EXPECT_EQ(DaemonPid(m, 0), pid);
  EXPECT_EQ(m.NextRestartNs(), UINT64_MAX);
}

TEST_F(MpsDaemonsTest, AStaleDaemonOnTheDirectoryIsAskedToQuitAtTheFirstStart) {
  const std::string root = dir_ + "/mps";
  const std::string pipe = root + "/gpu0/pipe";
  std::filesystem::create_directories(pipe);
  // A daemon left by an arbiter that was killed.
  const pid_t stale = ::fork();
  ASSERT_GE(stale, 0);
  if (stale == 0) {
    ::setenv("CUDA_MPS_PIPE_DIRECTORY", pipe.c_str(), 1);
    ::execl(program_.c_str(), program_.c_str(), "-f", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 1000 && !std::filesystem::exists(pipe + "/daemon.pid"); ++i) ::usleep(10'000);
  ASSERT_TRUE(std::filesystem::exists(pipe + "/daemon.pid"));

  MpsDaemons m;
  ASSERT_TRUE(m.Start(program_, root, {{GpuIndex{0}, DeviceOrdinal{0}}}).ok());
  int status = 0;
  ASSERT_EQ(::waitpid(stale, &status, 0), stale);  // told to quit: it ended
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(m.Running(GpuIndex{0}));
  EXPECT_NE(DaemonPid(m, 0), stale);
  EXPECT_EQ(Kinds(3), (std::vector<std::string>{"daemon", "client", "daemon"}));
}

TEST_F(MpsDaemonsTest, StopKillsADaemonThatDoesNotQuit) {
  ::setenv("FAKE_MPS_STUBBORN", "1", 1);
  MpsDaemons m;
  ASSERT_TRUE(m.Start(program_, dir_ + "/mps", {{GpuIndex{0}, DeviceOrdinal{0}}}).ok());
  const pid_t pid = DaemonPid(m, 0);
  m.Stop(200);
  EXPECT_FALSE(m.Running(GpuIndex{0}));
  EXPECT_EQ(::kill(pid, 0), -1);  // reaped: no such process
  m.Stop(200);                    // idempotent
}

TEST_F(MpsDaemonsTest, AProgramThatCannotStartOrABadDirectoryIsAnErrorNamingIt) {
  MpsDaemons m;
  const auto s = m.Start(dir_ + "/no-such-control", dir_ + "/mps", {{GpuIndex{0}, DeviceOrdinal{0}}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("no-such-control"), std::string::npos) << s.ToString();

  const std::string file = dir_ + "/a-file";
  std::ofstream(file) << "x";
  MpsDaemons m2;
  const auto s2 = m2.Start(program_, file, {{GpuIndex{0}, DeviceOrdinal{0}}});
  ASSERT_FALSE(s2.ok());
  EXPECT_NE(s2.ToString().find("mps_dir"), std::string::npos) << s2.ToString();
  EXPECT_NE(s2.ToString().find(file), std::string::npos) << s2.ToString();
}

TEST_F(MpsDaemonsTest, TerminatingAClientFindsItsServerAndRunsOffTheLoopBounded) {
  ::setenv("FAKE_MPS_CLIENTS", "12,77", 1);
  MpsDaemons m;
  ASSERT_TRUE(m.Start(program_, dir_ + "/mps", {{GpuIndex{0}, DeviceOrdinal{2}}}).ok());
  EXPECT_FALSE(m.ControlFor(GpuIndex{1}).has_value());
  const auto control = m.ControlFor(GpuIndex{0});
  ASSERT_TRUE(control.has_value());
  EXPECT_EQ(control->pipe_dir, dir_ + "/mps/gpu2/pipe");
  const auto ok = control->TerminateClient(77, 5000);
  EXPECT_TRUE(ok.ok()) << ok.ToString();
  bool terminated = false;
  for (const std::string& l : Invocations())
    terminated |= l.rfind("client terminate_client 4242 77 ", 0) == 0;
  EXPECT_TRUE(terminated);
  // A process no server serves, a command the daemon refuses, one that does not finish.
  const auto none = control->TerminateClient(99, 5000);
  EXPECT_EQ(none.code(), shm::StatusCode::kInvalidArgument);
  EXPECT_NE(none.message().find("pid 99"), std::string::npos) << none.ToString();
  std::string out;
  const auto bad = control->Run("bad", 5000, &out);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("ERROR"), std::string::npos) << bad.ToString();
  const auto slow = control->Run("slow", 200, &out);
  EXPECT_EQ(slow.code(), shm::StatusCode::kTimeout) << slow.ToString();
  ::unsetenv("FAKE_MPS_CLIENTS");
}

// Whether the daemon serves a process (the arbiter's MPS client check, CheckMpsClient): the server
// listing it; 0 for a process no server lists, and for output that is not a list of pids (not
// believed, never a crash); an error when the daemon refuses or does not answer in time.
TEST_F(MpsDaemonsTest, ServerOfNamesTheServerListingTheProcessOrNone) {
  ::setenv("FAKE_MPS_CLIENTS", "12,77", 1);
  MpsDaemons m;
  ASSERT_TRUE(m.Start(program_, dir_ + "/mps", {{GpuIndex{0}, DeviceOrdinal{0}}}).ok());
  EXPECT_TRUE(m.HasDaemon(GpuIndex{0}));
  EXPECT_FALSE(m.HasDaemon(GpuIndex{1}));
  const auto control = m.ControlFor(GpuIndex{0});
  ASSERT_TRUE(control.has_value());
  auto served = control->ServerOf(77, 5000);
  ASSERT_TRUE(served.ok()) << served.status().ToString();
  EXPECT_EQ(*served, 4242);
  auto stranger = control->ServerOf(99, 5000);
  ASSERT_TRUE(stranger.ok()) << stranger.status().ToString();
  EXPECT_EQ(*stranger, 0);
  ::setenv("FAKE_MPS_SERVERS", "not-a-pid", 1);
  auto garbage = control->ServerOf(77, 5000);
  ASSERT_TRUE(garbage.ok()) << garbage.status().ToString();
  EXPECT_EQ(*garbage, 0);
  ::setenv("FAKE_MPS_SERVERS", "ERROR: the server is busy", 1);
  EXPECT_FALSE(control->ServerOf(77, 5000).ok());
  ::unsetenv("FAKE_MPS_SERVERS");
  ::unsetenv("FAKE_MPS_CLIENTS");
}

}  // namespace
}  // namespace gshare::arbiter
