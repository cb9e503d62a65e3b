// SubmissionGate: admits while open, refuses while closed, Close waits for those inside.
#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "runtime/submission_gate.h"

namespace gshare::preload {
namespace {

TEST(SubmissionGate, OpenGateAdmits) {
  SubmissionGate gate;
  unsigned slot = 0;
  ASSERT_TRUE(gate.TryEnter(&slot));
  gate.Exit(slot);
  EXPECT_FALSE(gate.closed());
}

TEST(SubmissionGate, ClosedGateRefusesUntilOpened) {
  SubmissionGate gate;
  gate.Close();
  EXPECT_TRUE(gate.closed());
  unsigned slot = 0;
  EXPECT_FALSE(gate.TryEnter(&slot));
  std::atomic<bool> admitted{false};
  std::thread waiter([&] {
    gate.WaitOpen();
    unsigned mine = 0;
    if (gate.TryEnter(&mine)) {
      admitted = true;
      gate.Exit(mine);
    }
  });
  gate.Open();
  waiter.join();
  EXPECT_TRUE(admitted.load());
}

TEST(SubmissionGate, CloseWaitsForSubmittersInside) {
  SubmissionGate gate;
  unsigned slot = 0;
  ASSERT_TRUE(gate.TryEnter(&slot));
  std::atomic<bool> closed{false};
  std::thread closer([&] {
    gate.Close();
    closed = true;
  });
  // The closer cannot finish while we are inside; give it time to try (not a timed assertion:
  // it would be wrong for it to finish at any point before Exit).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(closed.load());
  gate.Exit(slot);
  closer.join();
  EXPECT_TRUE(closed.load());
  EXPECT_FALSE(gate.TryEnter(&slot));
}

TEST(SubmissionGate, ManyThreadsNeverInsideWhileClosed) {
  SubmissionGate gate;
  std::atomic<bool> stop{false};
  std::atomic<int> inside{0};
  std::atomic<int> violations{0};
  std::atomic<bool> closed_flag{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      while (!stop) {
        unsigned slot = 0;
        if (gate.TryEnter(&slot)) {
          ++inside;
          if (closed_flag) ++violations;
          --inside;
          gate.Exit(slot);
        } else {
          gate.WaitOpen();  // as a refused submitter does (Runtime::AdmitSlow)
        }
      }
    });
  }
  for (int round = 0; round < 100; ++round) {
    gate.Close();
    closed_flag = true;
    if (inside.load() != 0) ++violations;
    closed_flag = false;
    gate.Open();
  }
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(violations.load(), 0);
}

}  // namespace
}  // namespace gshare::preload
