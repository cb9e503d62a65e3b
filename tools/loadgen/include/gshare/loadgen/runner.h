// Executes a plan against the targets: a dispatcher releases each arrival at its time, a
// bounded pool of worker threads (each with one keep-alive connection per target) sends it,
// and every answer is timed (from the scheduled arrival, so queueing in the load generator
// counts: open-loop, no coordinated omission) and checked (requests.h).
//
// Thread-safety: Discover and Run are blocking calls; Run uses its own threads internally.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gshare/loadgen/plan.h"
#include "gshare/loadgen/requests.h"
#include "gshare/loadgen/targets.h"
#include "gshare/workload/result.h"

namespace gshare::loadgen {

// A target after asking it for its metadata.
struct TargetInfo {
  Target target;
  ModelKind kind = ModelKind::kCnn;
  std::string platform;
  uint64_t seed = 0;  // the server's weight seed (metadata parameters.seed)
};

// Waits up to wait_ready_s for each target's /v2/models/MODEL/ready, then reads its metadata.
workload::Result<std::vector<TargetInfo>> Discover(const std::vector<Target>& targets,
                                                   double wait_ready_s);

enum class Outcome : uint8_t {
  kOk,
  kTransport,     // connection failed or timed out
  kHttpError,     // a status other than 200
  kBadResponse,   // 200 but not the expected JSON
  kWrongDigest,   // the digest does not match the request
  kInconsistent,  // outputs differ from an earlier answer to the same request
  kSkipped,       // not sent: the run's wall-clock bound had passed when a worker got to it
};
const char* OutcomeName(Outcome o);

// A request's answer as checked: its outcome and, unless kOk, what was wrong with it (the
// report's error examples show the message). Codes: kUnavailable (transport), kRefused (an HTTP
// status other than 200), kMalformed (not an inference response, no or a wrong digest, outputs
// that differ from an earlier answer).
struct CheckedAnswer {
  Outcome outcome = Outcome::kOk;
  Status error;             // ok() when outcome is kOk
  std::string fingerprint;  // kOk: the outputs but the digest, to compare with later answers
};

// Checks one HTTP answer against the request's digest (not the consistency with earlier
// answers: the runner keeps those). Pure; thread-safe.
CheckedAnswer CheckAnswer(int http_status, const std::string& body, const std::string& digest);

struct Record {
  uint32_t target = 0;
  int64_t scheduled_us = 0;
  double latency_ms = 0;
  Outcome outcome = Outcome::kOk;
};

struct RunOptions {
  int concurrency = 8;       // worker threads (>= 1)
  double timeout_s = 30;     // per request
  uint64_t input_seed = 1;
  // Hard bound on the run: requests still queued this long after the start are not sent
  // (recorded as kSkipped), so a stalled server cannot stretch the run. 0: no bound.
  double max_wall_s = 0;
  RequestShape shape;
};

struct RunResult {
  std::vector<Record> records;              // one per arrival, in completion order
  double wall_s = 0;                        // first arrival to last completion
  std::vector<std::string> error_examples;  // the first few error messages
};

RunResult Run(const std::vector<TargetInfo>& targets, const Plan& plan, const RunOptions& o);

}  // namespace gshare::loadgen
