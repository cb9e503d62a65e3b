// ClientSession's transitions (client_session.h): each checks its source phase and changes
// nothing when the diagram has no such transition, answering an error that names the
// transition and the phase it was tried in.
#include "client_session.h"

#include <string>

namespace gshare::arbiter {

const char* DriverOpName(DriverOp op) {
  switch (op) {
    case DriverOp::kNone:
      return "nothing";
    case DriverOp::kEnforcing:
      return "enforcement";
    case DriverOp::kDeepEvicting:
      return "deep eviction";
    case DriverOp::kRestoring:
      return "restore";
    case DriverOp::kMoving:
      return "move";
    case DriverOp::kTerminating:
      return "MPS termination";
  }
  return "?";
}

const char* PhaseName(Phase p) {
  switch (p) {
    case Phase::kOut:
      return "out";
    case Phase::kSwappingIn:
      return "swapping_in";
    case Phase::kResident:
      return "resident";
    case Phase::kHolding:
      return "holding";
    case Phase::kSwappingOut:
      return "swapping_out";
    case Phase::kEnforcing:
      return "enforcing";
    case Phase::kDeepEvicting:
      return "deep_evicting";
    case Phase::kCheckpointed:
      return "checkpointed";
    case Phase::kRestoring:
      return "restoring";
    case Phase::kMoving:
      return "moving";
  }
  return "?";
}

bool IsWarm(Phase p) { return p == Phase::kResident || p == Phase::kHolding; }

const char* CommandName(Command c) {
  switch (c) {
    case Command::kNone:
      return "none";
    case Command::kUnreserve:
      return "unreserve";
  }
  return "?";
}

Where ClientSession::where() const {
  switch (phase_) {
    case Phase::kResident:
    case Phase::kHolding:
    case Phase::kSwappingOut:
    case Phase::kEnforcing:
    case Phase::kDeepEvicting:
      return Where::kResident;
    case Phase::kCheckpointed:
    case Phase::kRestoring:
      return Where::kCheckpointed;
    case Phase::kOut:
    case Phase::kSwappingIn:
    case Phase::kMoving:
      break;
  }
  return Where::kOut;
}

Transition ClientSession::Refuse(const char* transition) const {
  return {Status(StatusCode::kInvalidArgument,
                 std::string(transition) + " while " + PhaseName(phase_) +
                     (op_ != DriverOp::kNone ? std::string(" (") + DriverOpName(op_) + ")" : ""))};
}

Transition ClientSession::AssignGpu(GpuIndex g) {
  if (phase_ != Phase::kOut) return Refuse("a GPU assigned");
  gpu_ = g;
  return {Status::Ok()};
}

Transition ClientSession::ClaimResident() {
  if (phase_ != Phase::kOut) return Refuse("a resident claim");
  phase_ = Phase::kResident;
  return {
      Status::Ok()};  // (reserved by the loop only if it fits: a disbelieved claim holds nothing)
}

Transition ClientSession::OrderIssued(shm::SwapOp op, GpuIndex target) {
  if (op == shm::SwapOp::kSwapIn && phase_ == Phase::kOut) {
    phase_ = Phase::kSwappingIn;
  } else if (op == shm::SwapOp::kSwapOut && phase_ == Phase::kResident && target == gpu_) {
    phase_ = Phase::kSwappingOut;
  } else {
    return Refuse(op == shm::SwapOp::kSwapIn ? "a swap-in order" : "a swap-out order");
  }
  order_ = op;
  order_target_ = target;
  return {Status::Ok()};
}

Transition ClientSession::OrderAcknowledged(bool ok) {
  Command command = Command::kNone;
  if (phase_ == Phase::kSwappingIn) {
    phase_ = ok ? Phase::kResident : Phase::kOut;
    if (ok) gpu_ = order_target_;
    if (!ok) command = Command::kUnreserve;  // its target's reservation
  } else if (phase_ == Phase::kSwappingOut) {
    phase_ = ok ? Phase::kOut : Phase::kResident;
    if (ok) command = Command::kUnreserve;
  } else {
    return Refuse("an order's acknowledgement");
  }
  order_ = shm::SwapOp::kNone;
  return {Status::Ok(), command};
}

Transition ClientSession::Granted(GpuIndex g) {
  if (phase_ != Phase::kResident || g != gpu_) return Refuse("a grant");
  phase_ = Phase::kHolding;
  holds_ = true;
  hold_gpu_ = g;
  return {Status::Ok()};
}

void ClientSession::Dropped() {
  if (!holds_) return;
  holds_ = false;
  if (phase_ == Phase::kHolding) phase_ = Phase::kResident;
}

Transition ClientSession::OpStarted(DriverOp op, uint64_t job, GpuIndex target) {
  Phase from = Phase::kOut;
  Phase to = Phase::kOut;
  switch (op) {
    case DriverOp::kEnforcing:
    case DriverOp::kTerminating:
      from = Phase::kHolding;
      to = Phase::kEnforcing;
      break;
    case DriverOp::kDeepEvicting:
      from = Phase::kResident;
      to = Phase::kDeepEvicting;
      break;
    case DriverOp::kRestoring:
      from = Phase::kCheckpointed;
      to = Phase::kRestoring;
      break;
    case DriverOp::kMoving:
      from = Phase::kOut;
      to = Phase::kMoving;
      break;
    case DriverOp::kNone:
      return Refuse("no driver operation started");
  }
  if (phase_ != from || op_ != DriverOp::kNone) return Refuse("a driver operation started");
  phase_ = to;
  op_ = op;
  op_job_ = job;
  op_target_ = target;
  return {Status::Ok()};
}

DriverOp ClientSession::OpEnded() {
  const DriverOp op = op_;
  switch (op) {
    case DriverOp::kEnforcing:
    case DriverOp::kTerminating:
      phase_ = holds_ ? Phase::kHolding : Phase::kResident;
      break;
    case DriverOp::kDeepEvicting:
      phase_ = Phase::kResident;
      break;
    case DriverOp::kRestoring:
      phase_ = Phase::kCheckpointed;
      break;
    case DriverOp::kMoving:
      phase_ = Phase::kOut;
      break;
    case DriverOp::kNone:
      break;
  }
  op_ = DriverOp::kNone;
  op_job_ = 0;
  return op;
}

Transition ClientSession::Checkpointed() {
  if (phase_ != Phase::kResident && phase_ != Phase::kOut) return Refuse("a checkpoint");
  // From kOut (a failed move left it frozen) it held no reservation of its own: the swap-in it
  // was moved for answers for its target's.
  const Command command = phase_ == Phase::kResident ? Command::kUnreserve : Command::kNone;
  phase_ = Phase::kCheckpointed;
  return {Status::Ok(), command};
}

Transition ClientSession::Restored(GpuIndex g) {
  if (phase_ != Phase::kCheckpointed) return Refuse("a restore");
  phase_ = Phase::kResident;
  gpu_ = g;
  return {Status::Ok()};
}

Transition ClientSession::MovedTo(GpuIndex g) {
  if (phase_ != Phase::kOut) return Refuse("a move");
  gpu_ = g;
  return {Status::Ok()};
}

}  // namespace gshare::arbiter
