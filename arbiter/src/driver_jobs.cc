// What each driver job in flight is for (see driver_jobs.h).
#include "driver_jobs.h"

#include <utility>

namespace gshare::arbiter {

uint64_t DriverJobs::Add(JobPurpose purpose) {
  const uint64_t job = next_++;
  jobs_.emplace(job, std::move(purpose));
  return job;
}

std::optional<JobPurpose> DriverJobs::Take(uint64_t job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return std::nullopt;
  JobPurpose purpose = std::move(it->second);
  jobs_.erase(it);
  return purpose;
}

bool DriverJobs::IsClientJob(uint64_t job, uint32_t client_id) const {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return false;
  const auto* c = std::get_if<ClientJob>(&it->second);
  return c != nullptr && c->client_id == client_id;
}

std::vector<const Arrival*> DriverJobs::Registrations() const {
  std::vector<const Arrival*> out;
  for (const auto& [job, purpose] : jobs_)
    if (const auto* r = std::get_if<RegistrationJob>(&purpose)) out.push_back(&r->arrival);
  return out;
}

std::vector<Arrival> DriverJobs::TakeRegistrations() {
  std::vector<Arrival> out;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (auto* r = std::get_if<RegistrationJob>(&it->second)) {
      out.push_back(std::move(r->arrival));
      it = jobs_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

}  // namespace gshare::arbiter
