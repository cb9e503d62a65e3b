// The in-flight tracker follows the current context (issue 17): submissions to the legacy
// default stream are tracked in the context current when they are made, however it became
// current — cuCtxSetCurrent, cuCtxPushCurrent, cuCtxPopCurrent, cuCtxCreate, cuCtxDestroy of
// the context above it, a primary context torn down and retained again by another thread, other
// threads — and a swap-out's drain waits for work queued in a context that just became current.
// The shim keeps each thread's last default stream cached (no cuCtxGetCurrent on the gated
// calls' fast path) and drops that cache in the hooks that change the current context: with a
// cache that went stale, the submission after a switch would not be tracked (tracked= in the
// control socket's stats stays where it was) and the drain would not wait for its work.
#include <chrono>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "child_process.h"
#include "shim_test.h"

namespace gshare::test {
namespace {

class ContextTracking : public ShimTest {
 protected:
  std::map<std::string, std::string> ProbeEnv() const {
    std::map<std::string, std::string> env = Env(true, "256MiB");
    env["GSHARE_CONTROL_SOCKET"] = Socket();
    return env;
  }
  std::string Socket() const { return (dir_ / "control.sock").string(); }

  // Sends one command and expects its answer.
  void Do(ChildProcess* probe, const std::string& command, const std::string& expected = "ok") {
    ASSERT_TRUE(probe->WriteLine(command)) << command;
    std::string line;
    ASSERT_TRUE(probe->ReadLine(&line)) << command << ": no answer";
    ASSERT_EQ(line, expected) << command;
  }
  // The number of (context, stream) pairs the shim tracks (the control socket's stats).
  long Tracked() {
    const std::string stats = UnixRequest(Socket(), "stats");
    const size_t at = stats.find(" tracked=");
    if (at == std::string::npos) return -1;
    return std::stol(stats.substr(at + 9));
  }
  // One submission to the legacy default stream of the current context, waited for; then the
  // tracked count.
  long SubmitAndCount(ChildProcess* probe) {
    Do(probe, "submit");
    Do(probe, "sync");
    return Tracked();
  }
};

TEST_F(ContextTracking, DefaultStreamSubmissionsAreTrackedInTheContextCurrentThen) {
  ChildProcess probe({GSHARE_PROBE, "contexts"}, ProbeEnv());
  std::string line;
  ASSERT_TRUE(probe.ReadLine(&line)) << probe.Wait() << probe.err();
  ASSERT_EQ(line, "ready");
  EXPECT_EQ(Tracked(), 0);
  EXPECT_EQ(SubmitAndCount(&probe), 1);  // P, the primary context (made current as cudart does)
  Do(&probe, "set A");
  EXPECT_EQ(SubmitAndCount(&probe), 2) << "after cuCtxSetCurrent";
  Do(&probe, "push B");
  EXPECT_EQ(SubmitAndCount(&probe), 3) << "after cuCtxPushCurrent";
  Do(&probe, "set C");  // C current, nothing submitted there yet
  Do(&probe, "push D");
  EXPECT_EQ(SubmitAndCount(&probe), 4);  // D
  Do(&probe, "pop");
  EXPECT_EQ(SubmitAndCount(&probe), 5) << "after cuCtxPopCurrent (C current again)";
  Do(&probe, "create F");
  EXPECT_EQ(SubmitAndCount(&probe), 6) << "after cuCtxCreate";
  Do(&probe, "set E");  // E current, nothing submitted there yet
  Do(&probe, "create G");
  EXPECT_EQ(SubmitAndCount(&probe), 7);  // G
  Do(&probe, "destroy G");               // forgotten; pops G: E is current
  EXPECT_EQ(Tracked(), 6);
  EXPECT_EQ(SubmitAndCount(&probe), 7) << "after cuCtxDestroy of the current context";
  Do(&probe, "set P");
  EXPECT_EQ(SubmitAndCount(&probe), 7);  // P was tracked already
  // Another thread releases the primary context's last reference (torn down: forgotten) and
  // retains it again (the same handle): this thread's next submission there is tracked again.
  Do(&probe, "thread-cycle-primary");
  EXPECT_EQ(Tracked(), 6);
  EXPECT_EQ(SubmitAndCount(&probe), 7) << "after another thread tore the primary context down";
  // Other threads: their own current contexts, their own caches.
  Do(&probe, "create H");
  Do(&probe, "pop");  // back to P: H exists, nothing submitted there
  Do(&probe, "thread-submit H");
  Do(&probe, "sync");
  EXPECT_EQ(Tracked(), 8) << "a submission from another thread in its own current context";
  EXPECT_EQ(SubmitAndCount(&probe), 8);  // this thread: still P
  Do(&probe, "done", "done 12");
  ASSERT_TRUE(probe.WriteLine("quit"));
  EXPECT_EQ(probe.Wait(), 0) << probe.err();
}

// The drain waits for default-stream work queued right after a switch to a context where
// nothing was submitted before: the swap-out's reply comes only after the work finished (an
// order, not a time: the work counts itself done before the drain can return).
TEST_F(ContextTracking, SwapOutWaitsForWorkInTheContextMadeCurrent) {
  ChildProcess probe({GSHARE_PROBE, "contexts"}, ProbeEnv());
  std::string line;
  ASSERT_TRUE(probe.ReadLine(&line)) << probe.Wait() << probe.err();
  ASSERT_EQ(line, "ready");
  EXPECT_EQ(SubmitAndCount(&probe), 1);  // this thread's cache: P's legacy stream
  for (const char* how : {"set A", "push B", "create F"}) {
    Do(&probe, how);
    Do(&probe, "submit 300");  // returns at once; the host function then sleeps 300 ms
    const std::string out = UnixRequest(Socket(), "swap-out");
    ASSERT_EQ(out.rfind("ok bytes=", 0), 0u) << how << ": " << out;
    Do(&probe, "done", how == std::string("set A") ? "done 2"
                       : how == std::string("push B") ? "done 3" : "done 4");
    ASSERT_EQ(UnixRequest(Socket(), "swap-in 0").rfind("ok", 0), 0u) << how;
  }
  ASSERT_TRUE(probe.WriteLine("quit"));
  EXPECT_EQ(probe.Wait(), 0) << probe.err();
}

}  // namespace
}  // namespace gshare::test
