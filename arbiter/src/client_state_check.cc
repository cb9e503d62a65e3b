// Invariant 7 (arbiter_impl.h): a client's stored phase (its ClientSession, client_session.h)
// agrees with the rest of what the arbiter keeps about it — the swap order in flight, the
// grant waiting for it — so a transition that was not made (or made twice) is found.
#include <string>

#include "arbiter_impl.h"

namespace gshare::arbiter {

std::string CheckClientState(const Client& c) {
  const std::string who =
      "client " + std::to_string(c.id) + " (" + PhaseName(c.session.phase()) + ") ";
  const Transfer* t = c.transfers.InFlight();
  const Phase p = c.session.phase();
  if (t != nullptr && t->op == shm::SwapOp::kSwapIn && p != Phase::kSwappingIn)
    return who + "has a swap-in in flight";
  if (t != nullptr && t->op == shm::SwapOp::kSwapOut && p != Phase::kSwappingOut)
    return who + "has a swap-out in flight";
  if (t == nullptr && (p == Phase::kSwappingIn || p == Phase::kSwappingOut))
    return who + "has no swap order in flight";
  if (t != nullptr && t->gpu != c.session.order_target())
    return who + "has its order in flight for another GPU than the session's";
  if (c.session.holding() && p != Phase::kHolding && p != Phase::kEnforcing)
    return who + "holds a GPU's token";
  if (p == Phase::kHolding && c.session.hold_gpu() != c.session.gpu())
    return who + "holds another GPU than its own";
  if ((p == Phase::kEnforcing || p == Phase::kDeepEvicting || p == Phase::kRestoring ||
       p == Phase::kMoving) == (c.session.op() == DriverOp::kNone))
    return who + "disagrees with its driver job (" + DriverOpName(c.session.op()) + ")";
  return "";
}

}  // namespace gshare::arbiter
