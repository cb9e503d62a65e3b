// Read-only views of the arbiter's state for the control socket (docs/operating.md, "Control
// interface"): the status (GPUs, memory, holders, queues, utilisation, co-running, orphans,
// recent SLO misses, counters), the clients list, the instances of each function (warm first,
// for a platform's router) and the orphan reservations. Built from const references to what
// ArbiterImpl owns, so nothing here can change the state it shows; testable with hand-built
// state.
//
// Thread-safety: the arbiter's loop thread only, like the state it reads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "arbiter_state.h"
#include "corun.h"
#include "gpu_ids.h"
#include "mps_daemons.h"
#include "reservation_book.h"
#include "telemetry.h"

namespace gshare::arbiter {

// A client's "state" as the status and gshare-ctl show it: resident, swapped, checkpointed, or
// swapping-in / swapping-out while an order is in flight.
const char* WhereName(const Client& c);

// What every status reply carries beside the state: the arbiter's identity and counters.
struct StatusHeader {
  uint64_t epoch = 0;
  std::string policy;
  uint64_t started_ns = 0;
  nlohmann::json counters;  // every counter of counters.h shown in the status
};

class StatusViews {
 public:
  StatusViews(const std::map<uint32_t, std::unique_ptr<Client>>& clients,
              const ByGpu<GpuState>& gpus, const ReservationBook& book,
              const std::map<uint32_t, Orphan>& orphans, const CorunBook& corun,
              const MpsDaemons& mps, const Telemetry& telemetry)
      : clients_(clients), gpus_(gpus), book_(book), orphans_(orphans), corun_(corun),
        mps_(mps), telemetry_(telemetry) {}

  // {"cmd":"status"}: call Telemetry::Prune(now_ns) first (the window's holds and misses).
  nlohmann::json Status(uint64_t now_ns, const StatusHeader& header) const;
  // {"cmd":"clients"}: one entry per registered client.
  nlohmann::json Clients(uint64_t now_ns) const;
  // {"cmd":"instances"}: each function's instances, warm and idle first.
  nlohmann::json Instances() const;
  // The status's "orphans": the reservations of live processes the arbiter disconnected.
  nlohmann::json Orphans(uint64_t now_ns) const;

 private:
  const std::map<uint32_t, std::unique_ptr<Client>>& clients_;
  const ByGpu<GpuState>& gpus_;
  const ReservationBook& book_;
  const std::map<uint32_t, Orphan>& orphans_;
  const CorunBook& corun_;
  const MpsDaemons& mps_;
  const Telemetry& telemetry_;
};

}  // namespace gshare::arbiter
