// RegistrationIntake: the registration socket's I/O, on a thread of its own. It accepts
// connections and reads each one's RegisterRequest as a small per-connection state machine
// driven by readiness (connected -> request read | refused | timed out), so a peer that
// connects and never sends, sends garbage, or sends descriptors costs the event loop nothing:
// the loop receives only complete, well-formed requests (Arrival), through fd() and
// TakeArrivals(), and decides them. Descriptors a peer sends anyway (kernels without
// SO_PASSRIGHTS) and every connection dropped here are destroyed through the FdReaper.
//
// Limits (docs/arbiter.md, "Limits per tenant"): at most `max_pending_per_uid` connections of
// one uid wait for their request at once and `max_pending` in all (beyond, a new connection is
// refused at once with a reason); a request must arrive within `request_timeout_ns`. When the
// process runs out of descriptors (EMFILE/ENFILE), a reserved descriptor is released to accept
// the pending connection and refuse it with a reason, instead of leaving it queued (a level-
// triggered listener would otherwise wake the thread without end).
//
// Ownership: owns the listener (its socket file goes with it) and the thread (joined on
// destruction). Thread-safety: TakeArrivals, stats and the destructor are for the loop's
// thread; everything else runs on the intake's thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "device_view.h"
#include "fd_reaper.h"
#include "gshare/shm/registration.h"
#include "gshare/shm/status.h"
#include "gshare/shm/wire.h"

namespace gshare::arbiter {

// A complete registration request, or a share query (docs/protocol.md, "Share query"; `query`
// set, `request` unused), for the loop to decide.
struct Arrival {
  shm::RegistrationConnection conn;
  shm::RegisterRequest request;
  std::optional<shm::ShareQuery> query;
  std::vector<gid_t> groups;  // the peer's groups at connect() (SO_PEERGROUPS)
  DeviceView view;  // the loop's: which GPUs the registering process sees (device_view.h)
  uint64_t arrived_ns = 0;
  bool had_orphan = false;  // the loop's: the process had an orphan here (arbiter_orphans.cc)
};

struct IntakeLimits {
  uint32_t max_pending_per_uid = 8;
  uint32_t max_pending = 256;
  uint64_t request_timeout_ns = 1'000'000'000;
  uint64_t arbiter_epoch = 0;  // named in the refusals the intake sends itself
};

struct IntakeStats {
  uint64_t accepted = 0;         // connections accepted
  uint64_t requests = 0;         // well-formed requests handed to the loop
  uint64_t refused_pending = 0;  // refused: too many connections waiting (per uid or in all)
  uint64_t timeouts = 0;         // closed: no request within the timeout
  uint64_t malformed = 0;        // refused: not a well-formed request (incl. descriptors)
  uint64_t out_of_fds = 0;       // accepted with the reserve descriptor and refused
};

class RegistrationIntake {
 public:
  static shm::Result<std::unique_ptr<RegistrationIntake>> Start(shm::RegistrationListener listener,
                                                                IntakeLimits limits,
                                                                FdReaper* reaper);
  ~RegistrationIntake();
  RegistrationIntake(const RegistrationIntake&) = delete;
  RegistrationIntake& operator=(const RegistrationIntake&) = delete;

  // Readable while arrivals wait (an eventfd).
  int fd() const;
  std::vector<Arrival> TakeArrivals();
  IntakeStats stats() const;
  const std::string& path() const;
  bool refuses_descriptors() const;

 private:
  struct State;
  RegistrationIntake() = default;
  std::unique_ptr<State> state_;
};

}  // namespace gshare::arbiter
