// A client's phase in docs/arbiter.md's state diagram, derived from its fields, and the check
// that those fields are a state the diagram's transitions make (invariant 7, arbiter_impl.h).
#include <string>

#include "arbiter_impl.h"

namespace gshare::arbiter {
namespace {

const Transfer* OrderInFlight(const Client& c) {
  if (c.transfers.empty() || !c.transfers.front().issued) return nullptr;
  return &c.transfers.front();
}

}  // namespace

Phase PhaseOf(const Client& c) {
  switch (c.op) {
    case DriverOp::kEnforcing:
    case DriverOp::kTerminating:
      return Phase::kEnforcing;
    case DriverOp::kDeepEvicting:
      return Phase::kDeepEvicting;
    case DriverOp::kRestoring:
      return Phase::kRestoring;
    case DriverOp::kMoving:
      return Phase::kMoving;
    case DriverOp::kNone:
      break;
  }
  if (c.where == Where::kCheckpointed) return Phase::kCheckpointed;
  if (c.holding) return Phase::kHolding;
  if (const Transfer* t = OrderInFlight(c))
    return t->op == shm::SwapOp::kSwapIn ? Phase::kSwappingIn : Phase::kSwappingOut;
  return c.where == Where::kResident ? Phase::kResident : Phase::kOut;
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

std::string CheckClientState(const Client& c) {
  const std::string who = "client " + std::to_string(c.id) + " ";
  if (c.holding && c.where != Where::kResident) return who + "holds a GPU without being resident";
  const Transfer* t = OrderInFlight(c);
  if (t != nullptr && t->op == shm::SwapOp::kSwapIn && (c.where != Where::kOut || c.holding))
    return who + "has a swap-in in flight but is not out";
  if (t != nullptr && c.where == Where::kCheckpointed)
    return who + "has a swap order in flight while checkpointed";
  if (c.op == DriverOp::kRestoring && c.where != Where::kCheckpointed)
    return who + "is being restored but is not checkpointed";
  if (c.op == DriverOp::kMoving && c.where != Where::kOut)
    return who + "is being moved but is not out";
  return "";
}

}  // namespace gshare::arbiter
