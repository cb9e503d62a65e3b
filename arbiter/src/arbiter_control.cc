// The control interface's commands (gshare-ctl, gshare-top), run on the event loop's thread:
// status, clients, drain/undrain GPU, evict CLIENT, set-slo CLIENT MS. Requests and replies
// are JSON objects (docs/operating.md, "Control interface"); every reply has "ok", and "error"
// with a message when ok is false.
//
// Drain: the GPU is marked drained and the policy told (GpuUnavailable): it moves the functions
// there to other GPUs (or holds them while no GPU is available) and places nothing there; the
// token holder is preempted, every vGPU resident there is swapped out (after it releases the
// token), and no swap-in, restore or grant happens there until undrain (GpuAvailable). MPS
// clients stay (their memory cannot leave the GPU: docs/arbiter.md, "Co-running"): the reply
// names them (mps_clients_staying), their requests wait until undrain or they exit.
// Evict: one vGPU is swapped out now (a holder first is asked to yield); an MPS client's
// memory stays, and evict answers an error saying so, unless mps_swaps_verified (then it is
// swapped out on its GPU like any vGPU). A drain leaves MPS clients either way. Set-slo: the policy learns the new SLO by the function
// being re-registered with it (a new policy function id) once the client is idle.
#include <algorithm>
#include <charconv>
#include <map>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "arbiter_impl.h"
#include "counters.h"
#include "gshare/common/units.h"

namespace gshare::arbiter {
namespace {

using nlohmann::json;

std::optional<uint64_t> ParseUnsigned(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    uint64_t x = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
    if (!s.empty() && ec == std::errc() && p == s.data() + s.size()) return x;
  }
  return std::nullopt;
}

}  // namespace

json ArbiterImpl::HandleControl(const json& req, ControlAccess access, const ControlPeer& peer) {
  const uint64_t now = NowNs();
  const std::string cmd = req.value("cmd", std::string());
  if (cmd == "status") {
    telemetry_.Prune(now);
    json counters = json::object();
    AddCountersJson(stats(), kShownInStatus, counters);  // every counter of counters.h
    return Views().Status(now, {epoch_, std::string(policy_->name()), started_ns_, counters});
  }
  if (cmd == "clients") return Views().Clients(now);
  if (cmd == "instances") return Views().Instances();
  const bool mutating = cmd == "drain" || cmd == "undrain" || cmd == "evict" || cmd == "set-slo";
  if (!mutating)
    return ControlError(cmd.empty() ? "request has no \"cmd\""
                                    : "unknown command '" + cmd +
                                          "' (status, clients, drain, undrain, evict, set-slo)");
  if (access != ControlAccess::kAdmin)
    return ControlError("uid " + std::to_string(peer.uid) + " may only read (status, clients); '" +
                        cmd + "' needs control_admin_uids/control_admin_gids");
  if (cmd == "drain" || cmd == "undrain") {
    const auto ordinal = req.contains("gpu") ? ParseUnsigned(req["gpu"]) : std::nullopt;
    if (!ordinal) return ControlError(cmd + ": \"gpu\" must be a GPU ordinal");
    const auto g = ordinal <= UINT32_MAX ? IndexOf(DeviceOrdinal{static_cast<uint32_t>(*ordinal)})
                                          : std::nullopt;
    if (!g) return ControlError(cmd + ": GPU " + std::to_string(*ordinal) + " is not managed by this arbiter");
    spdlog::info("control: uid {} pid {}: {} GPU {}", peer.uid, peer.pid, cmd, *ordinal);
    return Drain(*g, cmd == "drain", now);
  }
  // evict / set-slo name a client: its id, or a function name that only one client has.
  if (!req.contains("client")) return ControlError(cmd + ": \"client\" is missing");
  Client* c = nullptr;
  if (const auto id = ParseUnsigned(req["client"]); id && *id <= UINT32_MAX) {
    c = clients_.Find(static_cast<uint32_t>(*id));
  } else if (req["client"].is_string()) {
    const std::string name = req["client"].get<std::string>();
    for (auto& [cid, other] : clients_) {
      if (other->name != name) continue;
      if (c != nullptr)
        return ControlError(cmd + ": more than one client runs function '" + name + "'; name it by id");
      c = other.get();
    }
  }
  if (c == nullptr) return ControlError(cmd + ": no client " + req["client"].dump());
  spdlog::info("control: uid {} pid {}: {} client {} '{}'", peer.uid, peer.pid, cmd, c->id, c->name);
  if (cmd == "evict") return Evict(*c, now);
  const auto slo = req.contains("slo_ms") ? ParseUnsigned(req["slo_ms"]) : std::nullopt;
  if (!slo || *slo == 0 || *slo > 3'600'000)
    return ControlError("set-slo: \"slo_ms\" must be between 1 and 3600000 milliseconds");
  return SetSlo(*c, static_cast<uint32_t>(*slo), now);
}

json ArbiterImpl::Drain(GpuIndex g, bool drain, uint64_t now) {
  GpuState& gs = gpus_[g];
  const bool was = gs.drained;
  gs.drained = drain;
  uint32_t moving = 0;
  json staying = json::array();  // MPS clients: they stay (RefusePinned)
  for (const auto& [id, c] : clients_) {
    if (ReservedOn(*c) != g) continue;
    if (c->mps_share == 0) {
      ++moving;
    } else {
      staying.push_back(c->id);
      if (drain && !was) (void)RefusePinned(*c, PinnedOp::kOffItsGpu, "drain's swap-out");
    }
  }
  if (drain) {
    if (!was) {
      // The policy stops using the GPU and moves its functions to others (or holds them).
      Deliver(now, policy::GpuUnavailable{ToPolicy(g)});
      // Swap-ins onto g not yet issued never will be while it is drained: a policy swap-in is
      // reported done (the policy then moves the function off again, at no cost), and a grant
      // waiting for residency there is handed back as a slice that expired.
      std::vector<policy::EventBody> handed_back;
      for (auto& [id, c] : clients_) {
        if (c->transfers.DropWaitingSwapInsTo(g))
          handed_back.emplace_back(policy::SwapDone{c->fid, ToPolicy(g), policy::SwapKind::kIn, 0, 0});
        if (c->pending_grant && c->pending_grant->first == g) {
          c->pending_grant.reset();
          handed_back.emplace_back(policy::SliceExpired{c->fid, ToPolicy(g)});
        }
      }
      for (auto& body : handed_back) Deliver(now, std::move(body));
    }
    EnforceDrains(now);
    spdlog::info("GPU {} drained: {} vGPU(s) to move off it{}", gs.ordinal, moving,
                 staying.empty() ? std::string()
                                 : "; " + std::to_string(staying.size()) +
                                       " MPS client(s) stay (stop them to empty it)");
  } else {
    spdlog::info("GPU {} undrained", gs.ordinal);
    if (was) Deliver(now, policy::GpuAvailable{ToPolicy(g)});
    PumpTransfers(now);
  }
  metrics_dirty_ = metrics_ != nullptr;
  json reply = {{"ok", true}, {"gpu", gs.ordinal.value()}, {"drained", drain},
                {"changed", was != drain}, {"resident_clients", moving}};
  if (!staying.empty()) {
    reply["mps_clients_staying"] = staying;
    reply["note"] = "MPS clients stay on the GPU (their memory cannot leave it: docs/arbiter.md, "
                    "Co-running); their requests wait until undrain, or stop them to empty it";
  }
  return reply;
}

void ArbiterImpl::EnforceDrains(uint64_t now) {
  for (const GpuIndex g : gpus_.indices()) {
    if (!gpus_[g].drained) continue;
    for (uint32_t hid : std::vector<uint32_t>(gpus_[g].holders.ids()))
      if (Client* h = clients_.Find(hid); h != nullptr && !h->preempt_sent) Preempt(*h, now);
    std::vector<Client*> out;
    for (auto& [id, c] : clients_) {
      if (ReservedOn(*c) != g || c->session.holding() || c->mps_share != 0) continue;  // MPS: stays
      if (!c->transfers.empty() &&
          (c->transfers.front().issued || c->transfers.front().op == shm::SwapOp::kSwapOut))
        continue;  // an order in flight (checked again next time) or a swap-out already queued
      out.push_back(c.get());
    }
    for (Client* c : out) {
      c->transfers.QueueFirst({shm::SwapOp::kSwapOut, g, false, policy::SwapKind::kOut});
      (void)TryIssue(*c, now);
      NoteUnissued(*c);
    }
  }
}

json ArbiterImpl::Evict(Client& c, uint64_t now) {
  if (RefusePinned(c, PinnedOp::kSwapInPlace, "gshare-ctl evict"))
    return ControlError("evict: client " + std::to_string(c.id) + " '" + c.name + "': " +
                        std::string(kMpsPinReason));
  if (c.session.where() != Where::kResident)
    return ControlError("evict: client " + std::to_string(c.id) + " '" + c.name + "' is already " +
                        WhereName(c));
  for (const Transfer& t : c.transfers)
    if (t.op == shm::SwapOp::kSwapOut)
      return {{"ok", true}, {"client", c.id}, {"state", WhereName(c)}, {"note", "already being swapped out"}};
  const bool was_holding = c.session.holding();
  if (c.session.holding()) Preempt(c, now);
  const Transfer t{shm::SwapOp::kSwapOut, c.session.gpu(), false, policy::SwapKind::kOut};
  if (c.transfers.FrontWaiting()) {
    c.transfers.QueueFirst(t);
  } else {
    (void)c.transfers.Queue(t);
  }
  (void)TryIssue(c, now);
  NoteUnissued(c);
  return {{"ok", true},
          {"client", c.id},
          {"state", WhereName(c)},
          {"note", was_holding ? "asked to yield; swapped out when it releases its GPU"
                               : "swap-out ordered"}};
}

json ArbiterImpl::SetSlo(Client& c, uint32_t slo_ms, uint64_t now) {
  const uint32_t old = c.slo_ms;
  c.pending_slo = slo_ms;
  any_pending_slo_ = true;
  ApplyPendingSlos(now);
  const bool applied = !c.pending_slo.has_value();
  return {{"ok", true},
          {"client", c.id},
          {"old_slo_ms", old},
          {"slo_ms", slo_ms},
          {"applied", applied},
          {"note", applied ? "in effect" : "takes effect when the client is next idle"}};
}

void ArbiterImpl::ApplyPendingSlos(uint64_t now) {
  if (!any_pending_slo_) return;
  std::vector<uint32_t> ready;
  bool waiting = false;
  for (const auto& [id, c] : clients_) {
    if (!c->pending_slo) continue;
    if (!c->session.holding() && !c->burst_outstanding && c->transfers.empty() &&
        !c->pending_grant) {
      ready.push_back(id);
    } else {
      waiting = true;
    }
  }
  any_pending_slo_ = waiting;
  for (uint32_t id : ready) {
    Client* c = clients_.Find(id);
    if (c == nullptr) continue;
    // The policy knows a function's SLO from its registration: re-register it under another
    // policy id (the old one is reused only after its FunctionGone). Its history starts afresh.
    const policy::FunctionId old_fid = c->fid;
    clients_.Unbind(old_fid);
    c->fid = clients_.Bind(c->id);
    c->slo_ms = *c->pending_slo;
    c->pending_slo.reset();
    if (c->session.where() == Where::kResident)
      c->shadow = true;  // the policy will believe it on the host
    const policy::FunctionSpec spec = SpecOf(*c);
    spdlog::info("client {} '{}': SLO now {} ms (policy function {} -> {})", c->id, c->name,
                 c->slo_ms, old_fid, c->fid);
    Record(shm::EventType::kSloChange, c, kNoOrdinal, c->slo_ms);  // for gshare-trace
    Deliver(now, policy::FunctionGone{old_fid});
    ReleaseFid(old_fid);
    Deliver(now, policy::FunctionRegistered{c->fid, spec});
  }
}

}  // namespace gshare::arbiter
