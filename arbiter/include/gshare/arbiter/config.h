// The arbiter's configuration: defaults, the TOML config file (toml++) and the command line
// (CLI11), command-line values overriding the file's. Every malformed value is reported as an
// error (a gshare::Status, kInvalidArgument) whose message names the key or flag; nothing here
// exits or throws into the caller.
// Pure functions of their inputs; thread-safe.
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gshare/common/status.h"

namespace gshare::arbiter {

enum class FailMode : uint8_t { kOpen, kClosed };

// One entry of `metrics_allow`: an IPv4 or IPv6 address with a prefix length (a CIDR block; a
// plain address is a /32 or /128).
struct IpNet {
  int family = 0;                   // AF_INET or AF_INET6
  std::array<uint8_t, 16> bytes{};  // network byte order; IPv4 uses the first 4
  int prefix = 0;
  // Whether `ip` (a numeric address, as cpp-httplib reports a peer; IPv4-mapped IPv6 addresses
  // count as IPv4) lies in this block.
  bool Contains(const std::string& ip) const;
};

// The Prometheus endpoint (docs/operating.md, "Metrics"; docs/security.md, "Metrics exposure").
struct MetricsConfig {
  // `metrics`: "HOST:PORT" (TCP), "unix:PATH" (a Unix socket) or "" (off, the default).
  std::string address;
  // `metrics_allow`: client addresses (CIDR blocks) that may scrape over TCP; others get 403.
  // Empty: anyone who can reach the address, which is allowed only for a loopback HOST.
  // "any" (allow_any) says so explicitly for a non-loopback bind.
  std::vector<IpNet> allow;
  bool allow_any = false;
  // `metrics_max_connections`: connections served at once; further ones wait in the kernel's
  // listen backlog (holding no fd of the arbiter). The endpoint holds at most this + 2 fds.
  uint32_t max_connections = 8;
  // `metrics_socket_mode`: permission bits of the "unix:PATH" socket file (default owner-only).
  mode_t socket_mode = 0600;
  bool empty() const { return address.empty(); }
  bool is_unix() const { return address.rfind("unix:", 0) == 0; }
};

// OK if `metrics` may be served as configured, else a kInvalidArgument error saying why not (a
// non-loopback TCP bind needs `metrics_allow`: the page names every tenant's functions and
// their load).
Status CheckMetricsExposure(const MetricsConfig& metrics);

// Whether HOST (of `metrics`'s HOST:PORT) names the loopback interface: "localhost",
// 127.0.0.0/8, ::1.
bool IsLoopbackHost(const std::string& host);

// The default layout (docs/operating.md, "Directories"): the tenant-facing directory
// /run/gshare holds only the registration socket, so that it can be given to tenants (a
// container's bind mount); the control socket and the event ring live in the operator-only
// /run/gshare-operator, never given to tenants.
inline constexpr const char* kDefaultSocketPath = "/run/gshare/arbiter.sock";
inline constexpr const char* kDefaultControlSocketPath = "/run/gshare-operator/control.sock";
inline constexpr const char* kDefaultEventRingPath = "/run/gshare-operator/events";

// Which co-runners may share a GPU's set (`corun_fault_domain`): a fatal fault of one MPS client
// reaches every client on that GPU, so a set is one fault domain. kUid (the default): one user's
// functions; kGid: one group's; kAny: everyone's (an operator's explicit trust decision: any
// tenant's fault, or a hostile kernel, takes down every co-runner; docs/arbiter.md).
enum class CorunFaultDomain : uint8_t { kUid, kGid, kAny };
const char* CorunFaultDomainName(CorunFaultDomain d);

// Co-running (docs/arbiter.md, "Co-running"). Off unless `gpus` names GPUs.
struct CorunConfig {
  // GPU ordinals marked for co-running (`corun_gpus`); empty: none, every GPU time-sliced.
  std::vector<uint32_t> gpus;
  CorunFaultDomain fault_domain = CorunFaultDomain::kUid;
  // Most members of one set (`corun_max_members`, 2-48: MPS serves at most 48 clients a GPU).
  uint32_t max_members = 4;
  // After a revocation, how long the GPU serves exclusive slices and the pair stays apart
  // (`corun_backoff`).
  std::chrono::nanoseconds backoff{std::chrono::seconds(30)};
  // A member's burst whose latency exceeds this percentage of its SLO revokes the set
  // (`corun_threat`, 10-100).
  uint32_t threat_percent = 90;
  // The MPS control program started per co-run GPU in the foreground (`mps_control`, e.g.
  // nvidia-cuda-mps-control or simcuda-mps-control); "": none is started (an operator runs one).
  std::string mps_control;
  // Root of each co-run GPU's private MPS directories (`mps_dir`): <mps_dir>/gpu<ordinal>/pipe
  // (CUDA_MPS_PIPE_DIRECTORY of its clients) and .../log.
  std::string mps_dir = "/run/gshare-mps";
  // The operator has checked on this node's GPUs (tests/gpu/mps-check.sh) that the same-address
  // swap works for MPS clients (`mps_swaps_verified`, true|false, default false): then an MPS
  // client may be swapped out and back in on its own GPU like any vGPU (memory pressure there,
  // gshare-ctl evict). Moves to another GPU, deep eviction (checkpoint) and drains' evacuation
  // of MPS clients stay refused either way (docs/arbiter.md, "Co-running").
  bool mps_swaps_verified = false;
  // Device memory an MPS client's context holds on its GPU beside its vGPU, which the arbiter
  // counts from its registration until its process exits (docs/arbiter.md, "MPS context
  // memory"): `mps_context_floor` + (`mps_context_memory` - floor) x share / 100, rounded up to
  // a MiB. The defaults are at or above every share measured on an H200 (2026-12-04: 145 / 275
  // / 391 / 517 MiB at 25 / 50 / 75 / 100%); both 0: not counted.
  uint64_t mps_context_bytes = 526ull << 20;
  uint64_t mps_context_floor_bytes = 24ull << 20;
};

struct ArbiterConfig {
  // Registration socket (`socket`, --socket). Its directory must exist.
  std::string socket_path = kDefaultSocketPath;
  // Permission bits of the socket file (`socket_mode`: an octal string "0666"/"666", or a TOML
  // integer written in octal, 0o666; other integers are refused).
  mode_t socket_mode = 0666;
  // GPU ordinals to manage (`gpus`, --gpus 0,1); empty = every visible GPU.
  std::vector<uint32_t> gpus;
  // Memory of each managed GPU (`gpu_memory`, --gpu-memory). Unset: asked from the driver.
  std::optional<uint64_t> gpu_memory_bytes;
  // How many GPUs exist when gpu_memory is set and the driver is not asked (`gpu_count`).
  uint32_t gpu_count = 1;
  // Memory kept free on every GPU (`memory_reserve`, --memory-reserve), default 0.
  uint64_t memory_reserve_bytes = 0;
  // Default time slice (`slice`, --slice), default 20 ms.
  std::chrono::nanoseconds slice{std::chrono::milliseconds(20)};
  // A client that has not submitted for this long is reported idle to the policy
  // (`idle_release`, --idle-release), default 300 us. Clients use GSHARE_IDLE_RELEASE_US.
  std::chrono::nanoseconds idle_release{std::chrono::microseconds(300)};
  // After a preemption request, how long a holder may take to yield before it is enforced on
  // (locked and checkpointed) (`preempt_grace`, --preempt-grace), default 200 ms.
  std::chrono::nanoseconds preempt_grace{std::chrono::milliseconds(200)};
  // A swap order's client that shows no sign of progress for this long (plus its quota at
  // 128 MiB/s for the first window) is taken for one that stopped reading its channel and is
  // disconnected; progress it reports (copies completing) extends it, up to its quota at
  // 8 MiB/s (`swap_order_timeout`, --swap-order-timeout), default 10 s.
  std::chrono::nanoseconds swap_order_timeout{std::chrono::seconds(10)};
  // Sole-tenant leases (`lease`, --lease on|off), default on: a client that releases at the end
  // of a burst while nobody else wants its GPU is offered its next grant in advance, which its
  // next request takes with one CAS, without a round trip (docs/arbiter.md, "The lease").
  bool lease = true;
  // Idle vGPUs are deep-evicted (checkpointed) after this long; 0 = never (`deep_evict_after`).
  std::chrono::nanoseconds deep_evict_after{0};
  // Scheduling policy (`policy`, --policy), default "aggressive".
  std::string policy = "aggressive";
  // Prometheus metrics endpoint (`metrics`, --metrics, and the `metrics_*` keys); off when its
  // address is "". (Named metrics_address for the arbiter's `MetricsServer::Start` call.)
  MetricsConfig metrics_address;
  // What clients do while the arbiter is away (`fail_mode`, --fail-mode open|closed).
  FailMode fail_mode = FailMode::kOpen;
  // The node event ring file (`event_ring`, --event-ring); "" = none. And its capacity in
  // records (`event_ring_capacity`, a power of two).
  std::string event_ring_path;
  uint64_t event_ring_capacity = 1 << 16;
  // Who may read the ring (`event_ring_mode`, default 0600, and `event_ring_group`, a numeric
  // gid, default the arbiter's): it names every tenant's functions, pids and uids.
  mode_t event_ring_mode = 0600;
  std::optional<gid_t> event_ring_gid;
  // Doorbell flooding (docs/security.md): wake-ups per second one client's doorbell may cause
  // (`doorbell_rate`, --doorbell-rate; bursts of a tenth of a second's worth), beyond which its
  // doorbell is ignored for a while (it is still served when the arbiter wakes for anything
  // else); 0 = unlimited. A client over the rate for `doorbell_flood_disconnect` (a duration;
  // 0 = never) is disconnected.
  uint64_t doorbell_rate = 10000;
  std::chrono::nanoseconds doorbell_flood_disconnect{std::chrono::seconds(10)};
  // Most clients served at once (`max_clients`).
  uint32_t max_clients = 4096;
  // Tenants' limits (docs/arbiter.md, "Limits per tenant"; 0 = no limit): clients of one uid
  // (`max_clients_per_uid`) and of one process (`max_clients_per_pid`; a shim registers once);
  // registrations a second one uid may make (`registration_rate_per_uid`, bursts of twice as
  // many); connections of one uid (`max_pending_registrations_per_uid`) and of all
  // (`max_pending_registrations`) waiting for their request, which must come within
  // `registration_timeout`. Beyond a limit a registration is refused with a reason.
  uint32_t max_clients_per_uid = 1024;
  uint32_t max_clients_per_pid = 64;
  uint32_t registration_rate_per_uid = 100;
  uint32_t max_pending_registrations_per_uid = 8;
  uint32_t max_pending_registrations = 256;
  std::chrono::nanoseconds registration_timeout{std::chrono::seconds(1)};
  // MPS terminations (terminate_client through a co-run GPU's daemon, for an MPS client that
  // ignored preemption) one uid's clients may cause within `mps_termination_window`
  // (`mps_terminations_per_uid`, 0 = no cap); past it the uid's next such client is disconnected
  // as unenforceable without a daemon command (docs/arbiter.md, "Co-running").
  uint32_t mps_terminations_per_uid = 4;
  std::chrono::nanoseconds mps_termination_window{std::chrono::seconds(60)};
  // A re-registration claiming to be resident is believed only within this long of the
  // arbiter's start (its previous instance's tenants coming back), once per process, or from a
  // process with an orphan here, and never beyond the GPU (`resident_claim_window`).
  std::chrono::nanoseconds resident_claim_window{std::chrono::seconds(30)};
  // Check the arbiter's invariants after every loop iteration (`check_invariants`; on in debug
  // builds): a violation is logged and counted (stats invariant_violations).
#ifdef NDEBUG
  bool check_invariants = false;
#else
  bool check_invariants = true;
#endif
  // Driver library the arbiter dlopens for GPU discovery and enforcement (`libcuda`).
  std::string libcuda = "libcuda.so.1";
  // spdlog level name (`log_level`, --log-level), default "info".
  std::string log_level = "info";
  // Who may register (`allowed_uids`, `allowed_gids`: comma-separated numeric ids, e.g.
  // --allowed-uids 0,1000). Both empty (the default): every process that can connect to the
  // socket (see socket_mode). Otherwise a client must have a listed uid (SO_PEERCRED), primary
  // gid or supplementary group (SO_PEERGROUPS); others are refused with a reason naming their
  // uid (docs/security.md).
  std::vector<uint32_t> allowed_uids;
  std::vector<uint32_t> allowed_gids;
  // Control socket for gshare-ctl / gshare-top (`control_socket`, --control-socket); "" = the
  // default: kDefaultControlSocketPath with the default registration socket, else control.sock
  // beside a registration socket configured elsewhere; "off" = no control socket.
  std::string control_socket;
  // Permission bits of the control socket file (`control_socket_mode`); access is decided by
  // the peer's uid and groups below, so the default lets anyone connect and be refused.
  mode_t control_socket_mode = 0666;
  // Who may use the control socket besides root and the arbiter's own uid (always admins):
  // read-only commands (status, clients) for `control_read_uids` / `control_read_gids`,
  // everything for `control_admin_uids` / `control_admin_gids` (lists of numeric ids).
  std::vector<uint32_t> control_read_uids;
  std::vector<uint32_t> control_read_gids;
  std::vector<uint32_t> control_admin_uids;
  std::vector<uint32_t> control_admin_gids;
  // Co-running on the GPUs marked for it (the corun_* and mps_* keys).
  CorunConfig corun;
  // Command line only: write a JSON summary here on exit (tests and operators' post-mortems).
  std::string summary_path;
};

// Applies the TOML document `text` on top of `base`: the resulting config, or a
// kInvalidArgument error. Unknown keys are errors, and so are top-level keys beside an
// [arbiter] table (which would otherwise be ignored) and any other table; the message names
// the key and its line.
Result<ArbiterConfig> ParseConfigToml(std::string_view text, const ArbiterConfig& base);

// What a valid command line asks for. --help is not an error: it is a CommandLine whose `help`
// holds the help text, which the caller prints to stdout before exiting 0 (`config` is then
// not to be run with).
struct CommandLine {
  ArbiterConfig config;
  std::optional<std::string> help;  // set: --help was given
};

// Parses the command line: defaults, then the --config FILE (if given), then the flags. A bad
// flag or value, or an unreadable or invalid --config file, is a kInvalidArgument error whose
// message names the flag (for the file's errors: the key or line, and the file).
Result<CommandLine> ParseCommandLine(int argc, const char* const* argv);

// The control socket's path for `config` ("" when it is off).
std::string ControlSocketPath(const ArbiterConfig& config);

// Name of a fail mode ("open" / "closed").
const char* FailModeName(FailMode mode);

}  // namespace gshare::arbiter
