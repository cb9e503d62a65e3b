// Constructors of the concrete policies, for the factory (policy.cc). Internal header.
#pragma once

#include <memory>
#include <string>

#include "gshare/policy/policy.h"

namespace gshare::policy::internal {

// The ideas of the SLO-aware slack scheduler; dual-queue is all of them off, aggressive all on.
struct SlackOptions {
  bool learned = true;     // predict with a high quantile of the learned window (else p90 * 1.4)
  bool residency = true;   // choose GPUs by residency, swap cost and packing (else first fit)
  bool prefetch = true;    // swap periodic functions in ahead of their predicted arrival
  bool deep_evict = true;  // park idle functions (context stays), deep-evict long-idle ones
  bool release = true;     // release a GPU as soon as it empties (else after a minute)
  bool scale = true;       // drain and release lightly used GPUs when the rest can take the load
  bool eager = true;       // place at once when an active GPU meets the deadline (else lazily)
  bool interference = true;  // co-locate only functions whose bursts fit each other's slack
  bool edf = true;         // run the ready function with the least slack first (else FIFO)
  // How `interference` judges a pair (either or both): typical bursts fit each other's slack;
  // the misses their bursts would cause each other (rate x expected overrun) stay small.
  bool typical = true;
  bool collisions = true;
  // A function without execution history (fewer than ExecPredictor::kMinSamples bursts) is
  // placed at once, on a new GPU if need be, instead of waiting for a latest safe start that
  // only the catalog prior predicts.
  bool cold = true;
  // Bursts that overrun their prediction (issue 21, from the exact optimum's windows): a tenant
  // still running past its predicted end is expected to run as long again as it has so far
  // (not to end now), and the functions queued behind it that would then miss their deadline
  // move to another active GPU where they fit without evicting anyone and meet it.
  bool rescue = true;
  // Co-running (issue 20): on GPUs marked GpuSpec::corun, grant a ready function beside the
  // running holders when the interference predictor keeps every one of them within its SLO
  // and the set does more work per GPU-second than time slicing; place by it; revoke and back
  // off after an observed threat (slack_scheduler.cc, corun.h). No effect on other GPUs.
  bool corun = true;
  // Placement and scale-down count on co-running (issue 20, item 5; opt-in, `aggressive-corun-
  // pack`, off in `aggressive`: with the harmless waiver it saves 3-25% GPU time on seeds 1-5,
  // 7 and 8 but loses 0.11-0.60 points of SLO attainment on seeds 1, 3 and 5 and costs 1.8% on
  // held-out seed 6 and 2.2% on the trace, docs/scheduling.md): a function may join a corun
  // GPU's functions beyond time slicing's utilisation and collision rules when all of them
  // would co-run within their SLOs (slack_scheduler.cc, CorunPacks), and sets that slow none of their members are co-run
  // through back-offs and not revoked for their own variance. Needs `corun`.
  bool corun_pack = false;
};

std::unique_ptr<Policy> MakeKeepAlive(const std::string& name, const PolicyConfig& config);
std::unique_ptr<Policy> MakeProxySwap(const std::string& name, const PolicyConfig& config);
std::unique_ptr<Policy> MakeFifo(const std::string& name, const PolicyConfig& config);
std::unique_ptr<Policy> MakeSlackScheduler(const std::string& name, const PolicyConfig& config,
                                           const SlackOptions& options);

}  // namespace gshare::policy::internal
