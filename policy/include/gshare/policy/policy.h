// THE POLICY INTERFACE: the contract between a scheduling policy and whoever drives it — the
// live arbiter daemon (arbiter/) and the trace-driven simulator (tools/sim/) drive it the same
// way. Events go in with the current time; actions come out. The policy owns no threads, reads
// no clock, does no I/O, and is deterministic: the same event sequence yields the same actions.
//
// Protocol (the "environment" is the arbiter or the simulator):
//  1. Create with Make(name, config). Send Started once, then FunctionRegistered for each
//     function before any other event that names it.
//  2. Deliver every event in non-decreasing `now` order. After each Handle() call, execute the
//     returned actions in order, then call NextWakeup() and deliver a Timer event at (or soon
//     after) that time if nothing else arrives first. Timers may be delivered late or spuriously;
//     policies treat them as "look at the clock".
//  3. Every action that takes time is answered by exactly one completion event:
//       SwapIn, SwapOut, DeepEvict  ->  SwapDone (same function, same kind)
//       Grant                       ->  BurstEnd (the burst finished) or SliceExpired (the slice
//                                       ran out, or a Preempt was honoured, with work left)
//     ActivateGpu, ReleaseGpu, Preempt (answered through the grant's event) and KeepResident
//     take effect at once.
//  4. Bursts: a BurstStart means one request arrived for the function (one unit of work, served
//     in arrival order per function). The environment queues it until the policy grants the
//     function a GPU; one Grant runs the function's oldest outstanding burst.
//  5. Function ids: FunctionGone ends a function. From it on the policy keeps nothing of that
//     function (spec, predictors, statistics, queue entries, wakeups), so its memory is
//     bounded by the live functions — and by the largest id in use, since functions are kept
//     in a table indexed by id: an environment with registration churn reuses the ids of gone
//     functions (the live arbiter allocates them from a free list). A reused id is a fresh
//     function: after FunctionRegistered it is treated exactly as a never-used id would be.
//     Between FunctionGone and the id's next FunctionRegistered, the environment delivers no
//     event naming it (the completions of actions issued to the old owner are dropped: after
//     a reuse the policy could not tell them from the new owner's); the policy ignores events
//     naming an id that is not registered, and names no gone function in an action.
//
// Action preconditions the policy guarantees (an environment may check them and treat a
// violation as a policy bug):
//  - ActivateGpu, SwapIn, Grant name only GPUs that are available (no GpuUnavailable for them
//    since their last GpuAvailable).
//  - ActivateGpu g: g is inactive.  ReleaseGpu g: g is active and holds no function state.
//  - SwapIn f,g: g is active; f is not kResident and no transfer of f is in flight; after the
//    swap-in the footprints on g (counting transfers in flight) fit in g's memory. If f is
//    kParked on another GPU its context there is dropped (a migration).
//  - SwapOut f: f is kResident, not running, no transfer in flight; f becomes kParked on the
//    same GPU (weights freed at once: the host keeps a snapshot; takes no link time).
//  - DeepEvict f: f is kParked or kResident, not running, no transfer in flight; f becomes
//    kHost and its GPU memory is freed at once (the checkpoint copy occupies the link).
//  - Grant f,g,slice: f is kResident on g, has an outstanding burst, and g runs no other tenant.
//    slice = 0 means "until the burst ends".
//  - Grant f,g,slice with corun = true (co-running, spatial sharing under MPS): f is kResident
//    on g and has an outstanding burst; g is marked GpuSpec::corun; g is held by at least one
//    other function (the GPU's *holders*: every function granted on g whose BurstEnd or
//    SliceExpired has not come yet) and by fewer than GpuSpec::max_clients in all; every holder
//    is in f's fault domain (FunctionSpec::fault_domain) unless
//    PolicyConfig::corun_across_domains. f's kernels then run at the same time as the
//    holders', each process at the compute share it was started with (Policy::ShareFor). A
//    grant without corun never names a GPU that has holders, as before. The environment
//    answers a co-run grant as any grant (BurstEnd with corun = true, or SliceExpired).
//
// Co-running (issue 20). Only on GPUs marked GpuSpec::corun; elsewhere nothing changes.
//  - Share class: right after delivering FunctionRegistered f, the environment calls
//    ShareFor(f) once and starts (or keeps) f's process with that MPS share
//    (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = 100 * compute_share, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT
//    = memory_limit_bytes when non-zero). It never changes for the process's life. It matters
//    only on GPUs marked corun; elsewhere the environment may ignore it.
//  - Membership is what changes at run time: the policy adds a function to a GPU's running
//    set with Grant{corun = true} and the set shrinks as bursts end.
//  - Revocation: when a co-run burst's observed latency threatens its SLO (BurstEnd with
//    corun = true and a slowdown beyond the prediction's margin), the policy stops co-running
//    that pair (and, after repeated misses, that GPU) for a back-off period: it issues no
//    co-run grant for them, lets the bursts in flight finish (no preemption), and grants
//    exclusively (time slicing, the default and the fallback) until the back-off ends. Nothing
//    is asked of the environment: a revocation is the absence of co-run grants. Counted in
//    Policy::corun_stats().
//  - Preempt f,g: f currently holds g.
//  Memory counts at issue time; link transfers on one GPU are serialised in issue order, so a
//  swap-in issued after an eviction never overlaps the memory it frees.
//
// Thread-safety: a Policy is not thread-safe; drive it from one thread (the arbiter's event
// loop). Distinct Policy objects are independent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gshare/common/status.h"
#include "gshare/policy/types.h"

namespace gshare::policy {

// ---- Events (in) ---------------------------------------------------------------------------

struct Started {};  // the node starts; GPUs are as in PolicyConfig::gpus, all inactive
struct FunctionRegistered {
  FunctionId function;
  FunctionSpec spec;
  // Where the environment already keeps the function's state although the policy starts it on
  // the host (the live arbiter starts a fresh vGPU resident where it fits and keeps it as a
  // lazily evicted shadow until the policy places it): a placement hint, so that the first
  // placement does not move it for nothing. For a function with FunctionSpec::pinned it binds:
  // it is placed there only (at once when it fits, as a swap-in that moves nothing; the arbiter
  // sends an MPS client's GPU). kNoGpu: none.
  GpuId state_on = kNoGpu;
};
struct BurstStart {  // a request for `function` arrived (deadline = now + spec.slo)
  FunctionId function;
};
struct BurstEnd {  // the granted burst finished; the function has released the GPU
  FunctionId function;
  GpuId gpu;
  Duration gpu_time;  // GPU execution time of the whole burst (all of its slices)
  // Whether any of its slices ran co-run (granted with Grant corun = true, or a holder when a
  // co-run grant joined it). Then gpu_time is wall time holding the GPU, stretched by the
  // co-runners; the policy reads the slowdown as gpu_time / its solo prediction.
  bool corun = false;
};
struct SliceExpired {  // the grant's slice ran out (or a Preempt was honoured); work remains
  FunctionId function;
  GpuId gpu;
};
struct Idle {  // the function has had no work for the environment's idle threshold
  FunctionId function;
};
enum class SwapKind : uint8_t { kIn, kOut, kDeepEvict };
struct SwapDone {
  FunctionId function;
  GpuId gpu;  // the GPU swapped onto (kIn) or off (kOut, kDeepEvict)
  SwapKind kind;
  uint64_t bytes;  // bytes that crossed the link
  Duration took;   // time the transfer occupied the link (excluding waiting for it)
};
struct Timer {};  // the wakeup asked for through NextWakeup()
struct MemoryPressure {  // the environment needs `bytes` freed on `gpu` (e.g. a tenant grew)
  GpuId gpu;
  uint64_t bytes;
};
struct FunctionGone {  // the client died or deregistered; its state on GPUs is already gone
  FunctionId function;  // may be registered again afterwards (protocol item 5)
};
// The GPU must not be used until GpuAvailable (an operator's drain, a failing device). From
// this event on the policy issues no ActivateGpu, SwapIn or Grant on it; it asks the tenant
// running there to yield (Preempt) and moves every function with state there off it: each is
// deep-evicted (DeepEvict) as soon as it is neither running nor in transfer (a swap-in in
// flight onto the GPU completes first, with its SwapDone), then placed on another GPU when it
// has work, or held until some GPU is available. The GPU is released once empty. Each event
// is idempotent (a second GpuUnavailable for the same GPU changes nothing).
struct GpuUnavailable {
  GpuId gpu;
};
struct GpuAvailable {  // the GPU may be used again (it is inactive until the policy activates it)
  GpuId gpu;
};

using EventBody = std::variant<Started, FunctionRegistered, BurstStart, BurstEnd, SliceExpired,
                               Idle, SwapDone, Timer, MemoryPressure, FunctionGone,
                               GpuUnavailable, GpuAvailable>;
struct Event {
  Time now;
  EventBody body;
};

// ---- Actions (out) -------------------------------------------------------------------------

enum class ActionKind : uint8_t {
  kActivateGpu,   // gpu: power on / start accounting GPU time
  kReleaseGpu,    // gpu: power off / stop accounting GPU time
  kSwapIn,        // function -> gpu
  kSwapOut,       // function: weights off, context stays (kParked)
  kDeepEvict,     // function: everything off (kHost)
  kGrant,         // function may run its oldest burst on gpu for `slice` (0: to the end)
  kPreempt,       // ask function to yield gpu
  kKeepResident,  // function: `pin` says whether the environment must never evict it on its own
};
const char* ActionKindName(ActionKind kind);

struct Action {
  ActionKind kind;
  FunctionId function = kNoFunction;
  GpuId gpu = kNoGpu;
  Duration slice = 0;
  bool pin = false;
  // kGrant: run next to the GPU's current holders (co-running; see the preconditions above).
  bool corun = false;
};
using ActionList = std::vector<Action>;

// ---- Configuration and the factory ---------------------------------------------------------

struct PolicyConfig {
  std::vector<GpuSpec> gpus;  // the node's GPUs, indexed by GpuId; at least one
  // keepalive: a function keeps its dedicated GPU while it had a request this recently.
  Duration keepalive_ttl = 15 * 60 * kUsPerSecond;
  // dual-queue: predicted execution = learned p90 * (1 + padding).
  double padding = 0.40;
  // Slice length for time-shared grants (0: run each burst to its end).
  Duration slice = 0;
  // proxy-swap: size of its fixed pool (the first pool_gpus GPUs; 0: every GPU).
  int pool_gpus = 0;
  // Whether an eviction (SwapOut, DeepEvict) copies what it frees to the host over the GPU's
  // link before that memory can be reused, as the live arbiter's same-address swap does (a
  // reservation is freed when the swap-out is acknowledged). The policy then charges the copy
  // on the GPU's link (swap-ins issued after it start after it), counts the victims' copy-out
  // time in a placement's predicted start, and makes victims that take long to copy out cost
  // more. false: the host keeps a snapshot of the weights and an eviction copies only a
  // context (DeepEvictCost), gshare-sim's default. The arbiter sets it.
  bool swap_out_copies = false;
  // Co-running: functions of different fault domains may co-run (an operator's explicit trust
  // decision: MPS gives no isolation between them and one's fatal fault reaches all).
  bool corun_across_domains = false;
};

// A function's MPS share class, fixed when its process starts (see "Co-running" above).
struct ShareClass {
  double compute_share = 1.0;       // active-thread fraction, (0, 1]
  uint64_t memory_limit_bytes = 0;  // pinned device-memory limit; 0: none
};

// What a policy did with co-running (for reports and tests).
struct CorunStats {
  uint64_t grants = 0;       // co-run grants issued
  uint64_t revocations = 0;  // pairs (or GPUs) put in back-off after an observed slowdown
};

// A scheduling policy. See the protocol above.
class Policy {
 public:
  virtual ~Policy() = default;
  Policy(const Policy&) = delete;
  Policy& operator=(const Policy&) = delete;

  // The name it was made with (including any ablation suffixes).
  virtual std::string_view name() const = 0;

  // Handles one event and appends the resulting actions to `out` (not cleared). Cost: about a
  // microsecond on average at 1,000 functions (bench/policy); an event that places a function
  // scans the active GPUs and the functions on them, so its worst case grows with both.
  // REQUIRES: event.now >= the previous event's now; the protocol above.
  virtual void Handle(const Event& event, ActionList& out) = 0;

  // When the policy next wants a Timer event; kNever if it does not.
  virtual Time NextWakeup() const = 0;

  // Introspection for tests of protocol item 5: how many entries the policy keeps for
  // functions (table slots up to the largest id registered, pending wakeups, entries of its
  // internal queues). With ids reused after FunctionGone it stays bounded by a small multiple
  // of the live functions, however many have come and gone.
  virtual size_t tracked_entries() const = 0;

  // The share class of registered function f (protocol "Co-running"): called by the
  // environment right after FunctionRegistered. Default: the whole GPU, no memory limit.
  virtual ShareClass ShareFor(FunctionId /*f*/) const { return ShareClass{}; }
  // The share class a function described by `spec` would get if it registered now (the
  // environment asks before the function's process starts CUDA, so that it starts at that
  // share; docs/protocol.md, "Share query"). For a spec registered as f it equals ShareFor(f).
  // Default: the whole GPU, no memory limit.
  virtual ShareClass ShareForSpec(const FunctionSpec& /*spec*/) const { return ShareClass{}; }

  // Co-run grants and revocations so far (zero for policies that never co-run).
  virtual CorunStats corun_stats() const { return CorunStats{}; }

 protected:
  Policy() = default;
};

// Makes the policy called `name`:
//   "keepalive", "proxy-swap", "fifo", "dual-queue", "aggressive" (the default), and
//   aggressive with ideas turned off for ablations: "aggressive-no-<idea>[-no-<idea>...]" with
//   <idea> one of learned, residency, prefetch, deep-evict, release, scale, eager, interference,
//   edf, typical, collisions, cold, rescue, corun (docs/scheduling.md explains each; corun
//   acts only on GPUs marked GpuSpec::corun).
// Returns the policy (never null), or kInvalidArgument whose message names what was wrong: an
// unknown name or idea, or a config without GPUs.
Result<std::unique_ptr<Policy>> Make(std::string_view name, const PolicyConfig& config);

// The names Make() accepts without ablation suffixes, in a stable order.
const std::vector<std::string>& PolicyNames();

}  // namespace gshare::policy
