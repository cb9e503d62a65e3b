// Unit tests of ClientSession (arbiter/src/client_session.h): every transition of docs/arbiter.md's
// client state diagram from its source phase, the derived Where and hold, and the refusal of
// transitions the diagram does not have (each leaves the session as it was).
#include "client_session.h"

#include <gtest/gtest.h>

namespace gshare::arbiter {
namespace {

const GpuIndex kG0{0};
const GpuIndex kG1{1};

// Fields that a refused transition must leave alone.
void ExpectUnchanged(const ClientSession& before, const ClientSession& after) {
  EXPECT_EQ(before.phase(), after.phase());
  EXPECT_EQ(before.gpu(), after.gpu());
  EXPECT_EQ(before.holding(), after.holding());
  EXPECT_EQ(before.op(), after.op());
  EXPECT_EQ(before.op_job(), after.op_job());
}

TEST(ClientSession, ANewClientIsOutOnItsAssignedGpu) {
  ClientSession s;
  ASSERT_TRUE(s.AssignGpu(kG1).ok());
  EXPECT_EQ(s.phase(), Phase::kOut);
  EXPECT_EQ(s.where(), Where::kOut);
  EXPECT_EQ(s.gpu(), kG1);
  EXPECT_FALSE(s.holding());
  EXPECT_EQ(s.op(), DriverOp::kNone);
  EXPECT_FALSE(IsWarm(s.phase()));
}

TEST(ClientSession, SwapInGrantReleaseSwapOut) {
  ClientSession s(kG0);
  ASSERT_TRUE(s.OrderIssued(shm::SwapOp::kSwapIn, kG1).ok());
  EXPECT_EQ(s.phase(), Phase::kSwappingIn);
  EXPECT_EQ(s.where(), Where::kOut);
  EXPECT_EQ(s.order_target(), kG1);
  EXPECT_EQ(s.gpu(), kG0);  // its GPU changes when the swap-in is acknowledged
  ASSERT_TRUE(s.OrderAcknowledged(true).ok());
  EXPECT_EQ(s.phase(), Phase::kResident);
  EXPECT_EQ(s.gpu(), kG1);
  EXPECT_TRUE(IsWarm(s.phase()));

  ASSERT_TRUE(s.Granted(kG1).ok());
  EXPECT_EQ(s.phase(), Phase::kHolding);
  EXPECT_TRUE(s.holding());
  EXPECT_EQ(s.hold_gpu(), kG1);
  s.Dropped();
  EXPECT_EQ(s.phase(), Phase::kResident);
  EXPECT_FALSE(s.holding());
  s.Dropped();  // nothing held: nothing to do
  EXPECT_EQ(s.phase(), Phase::kResident);

  ASSERT_TRUE(s.OrderIssued(shm::SwapOp::kSwapOut, kG1).ok());
  EXPECT_EQ(s.phase(), Phase::kSwappingOut);
  EXPECT_EQ(s.where(), Where::kResident);  // its memory is there until acknowledged
  ASSERT_TRUE(s.OrderAcknowledged(true).ok());
  EXPECT_EQ(s.phase(), Phase::kOut);
  EXPECT_EQ(s.gpu(), kG1);  // its last GPU
}

TEST(ClientSession, FailedOrdersLeaveTheMemoryWhereItWas) {
  ClientSession s(kG0);
  ASSERT_TRUE(s.OrderIssued(shm::SwapOp::kSwapIn, kG1).ok());
  ASSERT_TRUE(s.OrderAcknowledged(false).ok());
  EXPECT_EQ(s.phase(), Phase::kOut);
  EXPECT_EQ(s.gpu(), kG0);
  ASSERT_TRUE(s.ClaimResident().ok());
  ASSERT_TRUE(s.OrderIssued(shm::SwapOp::kSwapOut, kG0).ok());
  ASSERT_TRUE(s.OrderAcknowledged(false).ok());
  EXPECT_EQ(s.phase(), Phase::kResident);
}

// The commands transitions hand the loop: the reservation is released exactly where the memory
// left the GPU (a swap-out done, a checkpoint of a resident client) or never arrived (a swap-in
// that failed: its target's); nothing else releases or takes one, and a refused transition
// carries no command.
TEST(ClientSession, TransitionsSayWhenTheReservationIsReleased) {
  ClientSession s(kG0);
  ASSERT_TRUE(s.OrderIssued(shm::SwapOp::kSwapIn, kG1).ok());
  EXPECT_EQ(s.OrderAcknowledged(false).command, Command::kUnreserve);
  ASSERT_TRUE(s.OrderIssued(shm::SwapOp::kSwapIn, kG1).ok());
  EXPECT_EQ(s.OrderAcknowledged(true).command, Command::kNone);
  ASSERT_TRUE(s.OrderIssued(shm::SwapOp::kSwapOut, kG1).ok());
  EXPECT_EQ(s.OrderAcknowledged(false).command, Command::kNone);  // still resident
  ASSERT_TRUE(s.OrderIssued(shm::SwapOp::kSwapOut, kG1).ok());
  EXPECT_EQ(s.OrderAcknowledged(true).command, Command::kUnreserve);
  EXPECT_EQ(s.Checkpointed().command, Command::kNone);  // from out: it held nothing
  EXPECT_EQ(s.Restored(kG1).command, Command::kNone);   // reserved before the job
  EXPECT_EQ(s.Checkpointed().command, Command::kUnreserve);

  ClientSession c(kG0);
  const Transition claim = c.ClaimResident();
  EXPECT_TRUE(claim.ok());
  EXPECT_EQ(claim.command, Command::kNone);              // the loop reserves it only if it fits
  const Transition refused = c.OrderAcknowledged(true);  // no order in flight
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.command, Command::kNone);
  EXPECT_STREQ(CommandName(Command::kUnreserve), "unreserve");
}

TEST(ClientSession, EnforcementCheckpointsAHolderAndARestoreBringsItBack) {
  ClientSession s(kG0);
  ASSERT_TRUE(s.ClaimResident().ok());
  ASSERT_TRUE(s.Granted(kG0).ok());
  ASSERT_TRUE(s.OpStarted(DriverOp::kEnforcing, 7).ok());
  EXPECT_EQ(s.phase(), Phase::kEnforcing);
  EXPECT_TRUE(s.holding());  // the hold stands while the worker locks it
  EXPECT_EQ(s.op_job(), 7u);
  EXPECT_EQ(s.OpEnded(), DriverOp::kEnforcing);
  EXPECT_EQ(s.phase(), Phase::kHolding);  // back where the job started; the outcome follows
  s.Dropped();
  ASSERT_TRUE(s.Checkpointed().ok());
  EXPECT_EQ(s.phase(), Phase::kCheckpointed);
  EXPECT_EQ(s.where(), Where::kCheckpointed);

  ASSERT_TRUE(s.OpStarted(DriverOp::kRestoring, 8, kG1).ok());
  EXPECT_EQ(s.phase(), Phase::kRestoring);
  EXPECT_EQ(s.where(), Where::kCheckpointed);
  EXPECT_EQ(s.OpEnded(), DriverOp::kRestoring);
  EXPECT_EQ(s.op_target(), kG1);  // kept for the completion's handler
  ASSERT_TRUE(s.Restored(s.op_target()).ok());
  EXPECT_EQ(s.phase(), Phase::kResident);
  EXPECT_EQ(s.gpu(), kG1);
}

TEST(ClientSession, AHoldDroppedDuringEnforcementEndsResident) {
  ClientSession s(kG0);
  ASSERT_TRUE(s.ClaimResident().ok());
  ASSERT_TRUE(s.Granted(kG0).ok());
  ASSERT_TRUE(s.OpStarted(DriverOp::kTerminating, 3).ok());
  EXPECT_EQ(s.phase(), Phase::kEnforcing);
  s.Dropped();
  EXPECT_EQ(s.phase(), Phase::kEnforcing);  // the job goes on
  EXPECT_FALSE(s.holding());
  EXPECT_EQ(s.OpEnded(), DriverOp::kTerminating);
  EXPECT_EQ(s.phase(), Phase::kResident);
}

TEST(ClientSession, DeepEvictionAndMoves) {
  ClientSession s(kG0);
  ASSERT_TRUE(s.ClaimResident().ok());
  ASSERT_TRUE(s.OpStarted(DriverOp::kDeepEvicting, 1).ok());
  EXPECT_EQ(s.phase(), Phase::kDeepEvicting);
  EXPECT_EQ(s.where(), Where::kResident);
  EXPECT_EQ(s.OpEnded(), DriverOp::kDeepEvicting);
  EXPECT_EQ(s.phase(), Phase::kResident);  // a failed deep eviction stays here
  ASSERT_TRUE(s.Checkpointed().ok());

  ClientSession m(kG0);
  ASSERT_TRUE(m.OpStarted(DriverOp::kMoving, 2, kG1).ok());
  EXPECT_EQ(m.phase(), Phase::kMoving);
  EXPECT_EQ(m.where(), Where::kOut);
  EXPECT_EQ(m.OpEnded(), DriverOp::kMoving);
  ASSERT_TRUE(m.MovedTo(kG1).ok());
  EXPECT_EQ(m.phase(), Phase::kOut);
  EXPECT_EQ(m.gpu(), kG1);
  // A move whose restores both failed leaves the process frozen.
  ClientSession f(kG0);
  ASSERT_TRUE(f.OpStarted(DriverOp::kMoving, 3, kG1).ok());
  EXPECT_EQ(f.OpEnded(), DriverOp::kMoving);
  ASSERT_TRUE(f.Checkpointed().ok());
  EXPECT_EQ(f.phase(), Phase::kCheckpointed);
}

TEST(ClientSession, TransitionsTheDiagramDoesNotHaveAreRefusedAndChangeNothing) {
  // A grant of a client that is out, or resident on another GPU.
  {
    ClientSession s(kG0);
    const ClientSession before = s;
    const Status st = s.Granted(kG0);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("a grant while out"), std::string::npos) << st.message();
    ExpectUnchanged(before, s);
    ASSERT_TRUE(s.ClaimResident().ok());
    EXPECT_FALSE(s.Granted(kG1).ok());
    EXPECT_FALSE(s.holding());
  }
  // A second order while one is in flight; a swap-in of a resident client; a swap-out of one
  // that is out; an acknowledgement with no order in flight.
  {
    ClientSession s(kG0);
    EXPECT_FALSE(s.OrderIssued(shm::SwapOp::kSwapOut, kG0).ok());
    EXPECT_FALSE(s.OrderAcknowledged(true).ok());
    ASSERT_TRUE(s.OrderIssued(shm::SwapOp::kSwapIn, kG0).ok());
    const ClientSession before = s;
    EXPECT_FALSE(s.OrderIssued(shm::SwapOp::kSwapIn, kG1).ok());
    ExpectUnchanged(before, s);
    EXPECT_EQ(s.order_target(), kG0);
    ASSERT_TRUE(s.OrderAcknowledged(true).ok());
    EXPECT_FALSE(s.OrderIssued(shm::SwapOp::kSwapIn, kG0).ok());
    EXPECT_FALSE(s.OrderIssued(shm::SwapOp::kSwapOut, kG1).ok());  // not from its own GPU
  }
  // Driver jobs: one at a time, each from its own phase only.
  {
    ClientSession s(kG0);
    EXPECT_FALSE(s.OpStarted(DriverOp::kEnforcing, 1).ok());       // not holding
    EXPECT_FALSE(s.OpStarted(DriverOp::kDeepEvicting, 1).ok());    // not resident
    EXPECT_FALSE(s.OpStarted(DriverOp::kRestoring, 1, kG0).ok());  // not checkpointed
    EXPECT_FALSE(s.OpStarted(DriverOp::kNone, 1).ok());
    ASSERT_TRUE(s.OpStarted(DriverOp::kMoving, 1, kG1).ok());
    const ClientSession before = s;
    const Status st = s.OpStarted(DriverOp::kMoving, 2, kG1);
    EXPECT_NE(st.message().find("(move)"), std::string::npos) << st.message();
    ExpectUnchanged(before, s);
    EXPECT_FALSE(s.ClaimResident().ok());
    EXPECT_FALSE(s.Checkpointed().ok());  // not while the job runs
    EXPECT_FALSE(s.AssignGpu(kG1).ok());
    EXPECT_EQ(s.OpEnded(), DriverOp::kMoving);
    EXPECT_EQ(s.OpEnded(), DriverOp::kNone);  // nothing in flight any more
  }
  // A checkpointed client is restored, never swapped or granted.
  {
    ClientSession s(kG0);
    ASSERT_TRUE(s.ClaimResident().ok());
    ASSERT_TRUE(s.Checkpointed().ok());
    EXPECT_FALSE(s.OrderIssued(shm::SwapOp::kSwapIn, kG0).ok());
    EXPECT_FALSE(s.OrderIssued(shm::SwapOp::kSwapOut, kG0).ok());
    EXPECT_FALSE(s.Granted(kG0).ok());
    EXPECT_FALSE(s.Checkpointed().ok());
    EXPECT_FALSE(s.MovedTo(kG1).ok());
    EXPECT_EQ(s.phase(), Phase::kCheckpointed);
  }
}

TEST(ClientSession, EveryPhaseHasANameAndAWhere) {
  for (Phase p : {Phase::kOut, Phase::kSwappingIn, Phase::kResident, Phase::kHolding,
                  Phase::kSwappingOut, Phase::kEnforcing, Phase::kDeepEvicting,
                  Phase::kCheckpointed, Phase::kRestoring, Phase::kMoving})
    EXPECT_STRNE(PhaseName(p), "?");
  for (DriverOp op : {DriverOp::kNone, DriverOp::kEnforcing, DriverOp::kDeepEvicting,
                      DriverOp::kRestoring, DriverOp::kMoving, DriverOp::kTerminating})
    EXPECT_STRNE(DriverOpName(op), "?");
}

}  // namespace
}  // namespace gshare::arbiter
