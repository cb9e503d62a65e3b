// DriverJobs: what each driver job in flight is for. A job (DriverWorker, driver_worker.h) is
// one driver call about a process, run off the loop; its completion comes back by job id, and
// the loop finishes it by its purpose:
//   ClientJob        - a registered client's driver operation (its session's op: enforcement,
//                      deep eviction, restore, move, termination);
//   RegistrationJob  - a registration waiting for its process's state (thawed if a previous
//                      arbiter left it frozen; whether its resident claim can be true);
//   LeavingThaw      - the thaw of a checkpointed client that left (what to keep reserved, as an
//                      orphan, if the thaw restored its memory);
//   OrphanQuery      - whether an orphan's process still has CUDA state;
//   MpsClientCheck   - whether a client's GPU's MPS daemon serves its process (its reported
//                      share believed; Client::mps_check). Not the client's session op: it runs
//                      beside one.
// Job ids are never reused; each names one purpose until its completion takes it.
//
// Thread-safety: plain values, the arbiter's loop thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "arbiter_state.h"
#include "gpu_ids.h"
#include "gshare/shm/unique_fd.h"
#include "registration_intake.h"

namespace gshare::arbiter {

struct ClientJob {
  uint32_t client_id = 0;
};

struct RegistrationJob {
  Arrival arrival;
};

struct LeavingThaw {
  uint32_t client_id = 0;
  pid_t pid = 0;
  uid_t uid = 0;
  std::string name;
  GpuIndex gpu;
  uint64_t bytes = 0;
  Unregister reason = Unregister::kClean;
  shm::UniqueFd pidfd;  // a duplicate: the client's connection is gone by the completion
};

struct OrphanQuery {
  uint32_t orphan_id = 0;
};

struct MpsClientCheck {
  uint32_t client_id = 0;
};

using JobPurpose = std::variant<ClientJob, RegistrationJob, LeavingThaw, OrphanQuery, MpsClientCheck>;

class DriverJobs {
 public:
  // Records a new job for `purpose`; returns its id (from 1).
  uint64_t Add(JobPurpose purpose);
  // The purpose of a job whose completion came, removed; nullopt for an unknown job.
  std::optional<JobPurpose> Take(uint64_t job);
  // Whether `job` is in flight for client `client_id`.
  bool IsClientJob(uint64_t job, uint32_t client_id) const;
  // The registrations waiting for the driver, in job order.
  std::vector<const Arrival*> Registrations() const;
  // Removes the waiting registrations and returns them (at shutdown, to let them go).
  std::vector<Arrival> TakeRegistrations();
  size_t size() const { return jobs_.size(); }

 private:
  uint64_t next_ = 1;
  std::map<uint64_t, JobPurpose> jobs_;
};

}  // namespace gshare::arbiter
