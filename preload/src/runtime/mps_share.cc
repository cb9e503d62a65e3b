// Asks the arbiter for the MPS share before the real cuInit and applies it (see mps_share.h).
#include "runtime/mps_share.h"

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gshare/shm/registration.h"
#include "runtime/log.h"

namespace gshare::preload {
namespace {

constexpr const char* kShareVar = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE";
constexpr const char* kLimitVar = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT";
constexpr const char* kPipeVar = "CUDA_MPS_PIPE_DIRECTORY";

std::string EnvText(const char* value) {
  return value == nullptr ? std::string("unset") : "=" + std::string(value);
}

// Points CUDA_MPS_PIPE_DIRECTORY at the daemon a co-run answer names ("" names none: the
// environment stays as it is), unless the environment sets it: an explicit setting wins, and
// one that differs is a warning naming both values. True when the variable is the answer's.
bool JoinAnsweredDaemon(const std::string& pipe, uint32_t gpu) {
  if (pipe.empty()) return false;
  const char* given = std::getenv(kPipeVar);
  if (given != nullptr && pipe == given) return true;
  if (given != nullptr && *given != '\0') {
    Log().warn("{}={} from the environment is kept (an explicit setting wins), but the arbiter "
               "co-runs this function on GPU {}, whose MPS daemon is at {}: unless the "
               "environment's daemon serves GPU {}, unset the variable (docs/arbiter.md, "
               "Co-running)",
               kPipeVar, given, gpu, pipe, gpu);
    return false;
  }
  if (::setenv(kPipeVar, pipe.c_str(), 1) != 0) {
    Log().error("cannot set {}={} (the MPS daemon of GPU {}, where the arbiter co-runs this "
                "function): {}; it stays unset",
                kPipeVar, pipe, gpu, std::strerror(errno));
    return false;
  }
  Log().info("{}={} set: the MPS daemon of GPU {}, where the arbiter co-runs this function",
             kPipeVar, pipe, gpu);
  return true;
}

}  // namespace

ShareChoice ChooseMpsShare(const Config& config) {
  if (config.arbiter_socket.empty() || config.share_query_ns == 0) return {ShareOutcome::kNotAsked, {}};
  const char* env = std::getenv(kShareVar);
  if (env != nullptr && *env == '\0') env = nullptr;
  shm::ShareQuery query;
  const uint64_t quota = config.vgpu_memory_bytes.value_or(0);
  query.quota_bytes = quota <= shm::kMaxQuotaBytes ? quota : 0;
  query.slo_ms = config.slo_ms.value_or(1000);
  query.compute_demand_pct = config.compute_demand_pct;
  query.bandwidth_demand_pct = config.bandwidth_demand_pct;
  query.function_name = config.function_name;
  const auto started = std::chrono::steady_clock::now();
  auto answer = shm::QueryShare(config.arbiter_socket, query,
                                std::chrono::nanoseconds(config.share_query_ns));
  const auto waited_us = std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::steady_clock::now() - started)
                             .count();
  if (!answer.ok()) {
    const shm::StatusCode code = answer.status().code();
    if (code == shm::StatusCode::kMalformed || code == shm::StatusCode::kVersionMismatch) {
      Log().error("the arbiter at {} answered the MPS share query with a bad message ({}): {} is "
                  "left as the environment has it ({})",
                  config.arbiter_socket, answer.status().ToString(), kShareVar, EnvText(env));
      return {ShareOutcome::kBadAnswer, {}};
    }
    Log().info("no MPS share from the arbiter at {} ({}, after {} us): {} is left as the "
               "environment has it ({})",
               config.arbiter_socket, answer.status().ToString(), waited_us, kShareVar,
               EnvText(env));
    return {ShareOutcome::kNoAnswer, {}};
  }
  if (!answer->corun) {
    const std::string why = answer->reason.empty() ? "no reason given" : answer->reason;
    const char* pipe = std::getenv(kPipeVar);
    if (pipe != nullptr && *pipe != '\0' && std::strcmp(pipe, kNoMpsPipeDirectory) != 0) {
      // The environment would take the process to an MPS daemon the arbiter did not give it
      // (another uid's server, a GPU whose MPS clients' memory leaves no room): kept off it.
      const std::string given = pipe;
      if (::setenv(kPipeVar, kNoMpsPipeDirectory, 1) == 0) {
        Log().warn(
            "the arbiter does not co-run this function ({}): {}={} from the environment "
            "is replaced by {} (no MPS daemon there), so the process runs as a "
            "time-sliced client, not as an MPS client of that daemon",
            why, kPipeVar, given, kNoMpsPipeDirectory);
        return {ShareOutcome::kNotCorunKeptOffDaemon, {}};
      }
      Log().error("the arbiter does not co-run this function ({}) but {} cannot be replaced: {}",
                  why, kPipeVar, std::strerror(errno));
    }
    Log().info(
        "the arbiter does not co-run this function ({}): {} is left as the environment "
        "has it ({})",
        why, kShareVar, EnvText(env));
    return {ShareOutcome::kNotCorun, {}};
  }
  CorunPlacement placement;
  placement.gpu = answer->gpu;
  placement.uuid = answer->gpu_uuid;
  placement.pipe_from_answer = JoinAnsweredDaemon(answer->mps_pipe_directory, answer->gpu);
  const std::string chosen = std::to_string(answer->share_pct);
  if (answer->memory_limit_bytes != 0 && std::getenv(kLimitVar) == nullptr) {
    const uint64_t mib = (answer->memory_limit_bytes + (1ULL << 20) - 1) >> 20;
    (void)::setenv(kLimitVar, (std::to_string(mib) + "M").c_str(), 1);
    Log().info("{}={}M set from the arbiter's share class", kLimitVar, mib);
  }
  if (env == nullptr) {
    if (::setenv(kShareVar, chosen.c_str(), 1) != 0) {
      Log().error("cannot set {}={} (the arbiter's share for GPU {}): {}", kShareVar, chosen,
                  answer->gpu, std::strerror(errno));
      return {ShareOutcome::kNoAnswer, placement};
    }
    Log().info("{}={} set from the arbiter's share class for GPU {} (answered in {} us)",
               kShareVar, chosen, answer->gpu, waited_us);
    return {ShareOutcome::kSet, placement};
  }
  unsigned given = 0;
  const char* end = env + std::strlen(env);
  const auto [p, ec] = std::from_chars(env, end, given);
  if (ec == std::errc() && p == end && given == answer->share_pct) {
    Log().info("{}={} from the environment is the arbiter's share class for GPU {}", kShareVar,
               env, answer->gpu);
    return {ShareOutcome::kKeptAgrees, placement};
  }
  Log().warn("{}={} from the environment is kept (an explicit setting wins), but the arbiter "
             "chose {}% for this function on GPU {}: start it with {}={} or unset the variable "
             "(docs/arbiter.md, Co-running)",
             kShareVar, env, chosen, answer->gpu, kShareVar, chosen);
  return {ShareOutcome::kKeptDisagrees, placement};
}

}  // namespace gshare::preload
