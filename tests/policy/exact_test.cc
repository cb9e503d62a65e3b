// The exact solvers: hand-checked optima, infeasibility, brute force against CBC on random tiny
// instances (when built with CBC), and the discretisation of continuous workloads.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "gshare/policy/exact.h"

namespace gshare::policy {
namespace {

ExactInstance OneFunctionTwoRequests() {
  ExactInstance in;
  in.functions = {{100, 2}};
  in.requests = {{0, 2, 4, 1}, {0, 10, 12, 1}};
  in.gpus = 1;
  in.gpu_memory = 1000;
  in.horizon = 12;
  return in;
}

TEST(BruteForce, ReloadsWhenThatIsCheaperThanStayingResident) {
  const ExactSolution s = MakeBruteForceSolver()->Solve(OneFunctionTwoRequests()).value();
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.cost, 6);  // load [0,2) run [2,3); load [8,10) run [10,11)
  EXPECT_EQ(EvaluateAssignment(OneFunctionTwoRequests(), s.gpu, s.start), 6);
}

TEST(BruteForce, StaysResidentWhenTheGapIsShort) {
  ExactInstance in = OneFunctionTwoRequests();
  in.requests[1] = {0, 4, 6, 1};
  const ExactSolution s = MakeBruteForceSolver()->Solve(in).value();
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.cost, 4);  // load [1,3), run [3,4), stay resident, run [4,5)
}

TEST(BruteForce, UsesASecondGpuWhenMemoryForcesIt) {
  ExactInstance in;
  in.functions = {{600, 1}, {600, 1}};
  in.requests = {{0, 1, 3, 2}, {1, 1, 3, 2}};
  in.gpus = 2;
  in.gpu_memory = 1000;
  in.horizon = 3;
  const ExactSolution s = MakeBruteForceSolver()->Solve(in).value();
  ASSERT_TRUE(s.feasible);
  EXPECT_NE(s.gpu[0], s.gpu[1]);
  EXPECT_EQ(s.cost, 6);
  EXPECT_EQ(s.served, 2);
  in.gpus = 1;
  const ExactSolution one = MakeBruteForceSolver()->Solve(in).value();
  EXPECT_EQ(one.served, 1) << "one GPU cannot hold both at once: one request is dropped";
}

TEST(BruteForce, DropsARequestThatCannotMeetItsDeadline) {
  ExactInstance in = OneFunctionTwoRequests();
  in.requests[0].deadline = 2;  // cannot load (2 steps) and run (1) by step 2
  const ExactSolution s = MakeBruteForceSolver()->Solve(in).value();
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.served, 1);
  EXPECT_EQ(s.gpu[0], -1);
  EXPECT_EQ(s.cost, 3);  // only the second request: load [8,10), run [10,11)
}

TEST(BruteForce, SerialisesLoadsOnOneGpusLink) {
  // Two functions, each a 3-step load, needed at steps 3 and 4 on one GPU: the loads would
  // overlap on the link, so one GPU serves only one request; two GPUs (two links) serve both.
  ExactInstance in;
  in.functions = {{100, 3}, {100, 3}};
  in.requests = {{0, 3, 4, 1}, {1, 3, 5, 1}};
  in.gpus = 1;
  in.gpu_memory = 1000;
  in.horizon = 5;
  EXPECT_EQ(MakeBruteForceSolver()->Solve(in).value().served, 1);
  EXPECT_EQ(EvaluateAssignment(in, {0, 0}, {3, 4}), -1);
  in.gpus = 2;
  const ExactSolution two = MakeBruteForceSolver()->Solve(in).value();
  EXPECT_EQ(two.served, 2);
  EXPECT_NE(two.gpu[0], two.gpu[1]);
}

TEST(EvaluateAssignment, LoadsEarlierWhenTheLinkIsBusy) {
  // f0 runs at 6, f1 at 7, loads of 2 steps: just in time they would overlap ([4,6), [5,7));
  // serialised, f1 loads [5,7) and f0 just before it, [3,5): active over [3,8) = 5 steps.
  ExactInstance in;
  in.functions = {{100, 2}, {100, 2}};
  in.requests = {{0, 0, 7, 1}, {1, 0, 8, 1}};
  in.gpus = 1;
  in.gpu_memory = 1000;
  in.horizon = 8;
  EXPECT_EQ(EvaluateAssignment(in, {0, 0}, {6, 7}), 5);
}

TEST(EvaluateAssignment, RejectsOverlapsAndMissedDeadlines) {
  ExactInstance in = OneFunctionTwoRequests();
  EXPECT_EQ(EvaluateAssignment(in, {0, 0}, {3, 13}), -1);  // second ends past its deadline
  in.requests[1] = {0, 2, 4, 1};
  EXPECT_EQ(EvaluateAssignment(in, {0, 0}, {2, 2}), -1);  // overlap on one GPU
}

ExactInstance RandomInstance(std::mt19937& rng) {
  ExactInstance in;
  const int functions = 1 + static_cast<int>(rng() % 3);
  for (int f = 0; f < functions; ++f) {
    in.functions.push_back({100 + rng() % 600, 1 + static_cast<int>(rng() % 3)});
  }
  in.gpus = 1 + static_cast<int>(rng() % 2);
  in.gpu_memory = 1000;
  const int requests = 2 + static_cast<int>(rng() % 3);
  for (int r = 0; r < requests; ++r) {
    ExactRequest q;
    q.function = static_cast<int>(rng() % static_cast<unsigned>(functions));
    q.arrival = static_cast<int>(rng() % 12);
    q.exec = 1 + static_cast<int>(rng() % 3);
    q.deadline = q.arrival + q.exec + 2 + static_cast<int>(rng() % 5);
    in.horizon = std::max(in.horizon, q.deadline);
    in.requests.push_back(q);
  }
  return in;
}

TEST(Cbc, AgreesWithBruteForceOnRandomTinyInstances) {
  auto cbc = MakeCbcSolver();
  if (!cbc) GTEST_SKIP() << "built without CBC";
  auto brute = MakeBruteForceSolver();
  std::mt19937 rng(7);
  int feasible = 0;
  for (int i = 0; i < 25; ++i) {
    const ExactInstance in = RandomInstance(rng);
    const ExactSolution b = brute->Solve(in).value();
    const auto solved = cbc->Solve(in);
    ASSERT_TRUE(solved.ok()) << solved.status().ToString();
    const ExactSolution& c = *solved;
    ASSERT_TRUE(b.feasible && c.feasible) << "instance " << i;
    EXPECT_EQ(b.served, c.served) << "instance " << i;
    EXPECT_EQ(b.cost, c.cost) << "instance " << i;
    EXPECT_EQ(EvaluateAssignment(in, c.gpu, c.start), c.cost) << "instance " << i;
    if (b.served == static_cast<int>(in.requests.size())) ++feasible;
  }
  EXPECT_GT(feasible, 10) << "too few instances where every request can be served";
}

// serve_all: no request may be dropped. Where serving everything is impossible the instance is
// infeasible; where it is possible, the optimum serves everything even if dropping were
// cheaper; brute force and CBC agree on both.
TEST(ServeAll, NeverDropsAndIsInfeasibleWhenItMust) {
  ExactInstance in;
  in.functions = {{600, 1}, {600, 1}};
  in.requests = {{0, 1, 3, 2}, {1, 1, 3, 2}};
  in.gpus = 1;
  in.gpu_memory = 1000;
  in.horizon = 3;
  in.serve_all = true;
  std::vector<std::unique_ptr<ExactSolver>> solvers;
  solvers.push_back(MakeBruteForceSolver());
  if (auto cbc = MakeCbcSolver()) solvers.push_back(std::move(cbc));
  for (auto& solver : solvers) {
    SCOPED_TRACE(solver->name());
    in.gpus = 1;  // both at once do not fit one GPU
    auto infeasible = solver->Solve(in);
    ASSERT_TRUE(infeasible.ok()) << "infeasibility is no failure: " << infeasible.status().ToString();
    EXPECT_FALSE(infeasible->feasible);
    in.gpus = 2;
    auto solved = solver->Solve(in);
    ASSERT_TRUE(solved.ok()) << solved.status().ToString();
    const ExactSolution& s = *solved;
    ASSERT_TRUE(s.feasible);
    EXPECT_EQ(s.served, 2);
    EXPECT_EQ(s.cost, 6);
  }
}

TEST(Discretize, RoundsInTheSafeDirection) {
  FunctionSpec f;
  f.weights_bytes = 1'500'000;
  f.slo = 10'500;
  GpuSpec g;
  g.link_bytes_per_us = 1000.0;
  g.restore_overhead = 0;
  const ExactInstance in = Discretize({f}, {{1000, 0, 2500}, {3500, 0, 100}}, 2, g, 1000,
                                      /*lead_in=*/true);
  ASSERT_EQ(in.requests.size(), 2u);
  EXPECT_EQ(in.functions[0].load, 2);     // 1.5 ms up to 2 steps
  EXPECT_EQ(in.requests[0].arrival, 2);   // rebased, after a lead-in of one load
  EXPECT_EQ(in.requests[0].deadline, 12); // 10.5 ms down to 10
  EXPECT_EQ(in.requests[0].exec, 3);      // 2.5 ms up to 3
  EXPECT_EQ(in.requests[1].arrival, 5);   // 2.5 ms up to 3
  EXPECT_EQ(in.requests[1].exec, 1);
  EXPECT_EQ(in.horizon, 15);
  const ExactInstance cold = Discretize({f}, {{1000, 0, 2500}}, 2, g, 1000);
  EXPECT_EQ(cold.requests[0].arrival, 0);
  EXPECT_EQ(cold.requests[0].deadline, 10);
  // Relaxed: every continuous schedule fits the grid (times down, deadlines up).
  const ExactInstance relaxed = Discretize({f}, {{1000, 0, 2500}, {3500, 0, 100}}, 2, g, 1000,
                                           /*lead_in=*/false, /*relaxed=*/true);
  EXPECT_EQ(relaxed.functions[0].load, 1);
  EXPECT_EQ(relaxed.requests[0].deadline, 11);
  EXPECT_EQ(relaxed.requests[0].exec, 2);
  EXPECT_EQ(relaxed.requests[1].arrival, 2);
  EXPECT_EQ(relaxed.requests[1].exec, 1);  // never below one step
}

}  // namespace
}  // namespace gshare::policy
