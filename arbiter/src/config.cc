// Parsing of the arbiter's configuration: TOML file (toml++) then command line (CLI11).
// Every value goes through one setter per key so the file and the flags validate identically
// and every error names the key (file) or the flag (command line).
#include "gshare/arbiter/config.h"

#include <CLI/CLI.hpp>
#include <toml++/toml.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "gshare/common/units.h"
#include "gshare/shm/wire.h"

namespace gshare::arbiter {
namespace {

// The error of a malformed value: every one is the caller's (the operator's) to fix.
Status Invalid(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

// Sets one key from its textual value; returns an error whose message lacks the key's name.
using Setter = std::function<Status(ArbiterConfig&, const std::string&)>;

Status SetDuration(std::chrono::nanoseconds& out, const std::string& v, bool allow_zero) {
  auto d = ParseDuration(v);
  if (!d.ok()) return d.status();
  if (!allow_zero && d->count() == 0) return Invalid("must be greater than zero");
  if (*d > std::chrono::hours(24)) return Invalid("must be at most 24h");
  out = *d;
  return {};
}

Status SetUnsigned(uint64_t& out, const std::string& v, uint64_t min, uint64_t max) {
  uint64_t x = 0;
  const auto* end = v.data() + v.size();
  auto [p, ec] = std::from_chars(v.data(), end, x);
  if (ec != std::errc() || p != end || v.empty())
    return Invalid("'" + v + "' is not a non-negative integer");
  if (x < min || x > max)
    return Invalid("must be between " + std::to_string(min) + " and " + std::to_string(max));
  out = x;
  return {};
}

Status SetUnsigned32(uint32_t& out, const std::string& v, uint64_t min, uint64_t max) {
  uint64_t n = 0;
  if (auto e = SetUnsigned(n, v, min, max); !e.ok()) return e;
  out = static_cast<uint32_t>(n);
  return {};
}

// A comma-separated list of distinct integers in [0, max]; `what` names one item in errors.
Status SetList(std::vector<uint32_t>& out, const std::string& v, uint64_t max,
               const std::string& what) {
  std::vector<uint32_t> items;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) {
    uint64_t x = 0;
    if (auto e = SetUnsigned(x, item, 0, max); !e.ok()) return Invalid(what + " " + e.message());
    for (uint32_t seen : items)
      if (seen == x) return Invalid(what + " " + item + " listed twice");
    items.push_back(static_cast<uint32_t>(x));
  }
  if (items.empty() && !v.empty())
    return Invalid("expected a comma-separated list of " + what + "s");
  out = std::move(items);
  return {};
}

// An MPS context size (mps_context_memory, mps_context_floor): a byte size of at most 64 GiB.
Status SetContextSize(uint64_t& out, const std::string& v) {
  auto b = ParseByteSize(v);
  if (!b.ok()) return b.status();
  if (*b > (64ull << 30)) return Invalid("must be at most 64GiB");
  out = *b;
  return {};
}

Status SetGpuList(std::vector<uint32_t>& out, const std::string& v) {
  return SetList(out, v, shm::kMaxGpus - 1, "GPU ordinal");
}

Status SetIdList(std::vector<uint32_t>& out, const std::string& v) {
  return SetList(out, v, 0xFFFFFFFEULL, "id");
}

// A permission mode as text, always octal: "0660", "660" or "0o660". (A TOML integer reaches
// here as octal text, see ModeText.)
Status SetMode(mode_t& out, const std::string& v) {
  const std::string digits = v.rfind("0o", 0) == 0 ? v.substr(2) : v;
  unsigned mode = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), mode, 8);
  if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size() || mode > 0777)
    return Invalid("'" + v + "' is not an octal permission mode such as 0666");
  out = static_cast<mode_t>(mode);
  return {};
}

// A mode key's TOML integer as the octal text SetMode takes. toml++ reads 0o660 as the number
// 432, so the text must be written in base 8 (the number means what it says); an integer not
// written in octal (660, 0x1b0) is refused, as it is almost always a mode meant in octal.
Result<std::string> ModeText(const toml::node& node) {
  const auto* i = node.as_integer();
  if (!i) return Invalid("unsupported value type");
  // The integer format is a two-bit field: binary 1, octal 2, hexadecimal 3 (mask).
  if ((i->flags() & toml::value_flags::format_as_hexadecimal) != toml::value_flags::format_as_octal) {
    const std::string n = std::to_string(i->get());
    return Invalid(
        (i->flags() & toml::value_flags::format_as_hexadecimal) == toml::value_flags::none
            ? "the TOML integer " + n + " is decimal (the mode " + n +
                  " in octal would be written 0o" + n + " or \"0" + n + "\")"
            : "the TOML integer " + n + " is not written in octal; write the mode as 0o660 "
              "or as a string \"0660\"");
  }
  if (i->get() < 0 || i->get() > 0777) return Invalid("must be between 0o0 and 0o777");
  char buf[8];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), i->get(), 8);
  (void)ec;
  return std::string(buf, end);
}

// `metrics`: "HOST:PORT", "unix:PATH" or "" (off).
Status SetMetricsAddress(MetricsConfig& m, const std::string& v) {
  if (v.rfind("unix:", 0) == 0) {
    const std::string path = v.substr(5);
    if (path.empty()) return Invalid("'unix:' needs a socket path");
    if (path.size() >= 108) return Invalid("path longer than a Unix socket allows (107 bytes)");
  } else if (!v.empty()) {
    const auto colon = v.rfind(':');
    uint64_t port = 0;
    if (colon == std::string::npos || colon == 0 ||
        !SetUnsigned(port, v.substr(colon + 1), 1, 65535).ok())
      return Invalid("'" + v + "' is neither HOST:PORT (port 1-65535) nor unix:PATH");
  }
  m.address = v;
  return {};
}

// `metrics_allow`: "any", or a comma-separated list of addresses / CIDR blocks.
Status SetIpNets(MetricsConfig& m, const std::string& v) {
  if (v == "any") {
    m.allow.clear();
    m.allow_any = true;
    return {};
  }
  std::vector<IpNet> nets;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto slash = item.find('/');
    const std::string host = item.substr(0, slash);
    IpNet net;
    if (::inet_pton(AF_INET, host.c_str(), net.bytes.data()) == 1) {
      net.family = AF_INET;
      net.prefix = 32;
    } else if (::inet_pton(AF_INET6, host.c_str(), net.bytes.data()) == 1) {
      net.family = AF_INET6;
      net.prefix = 128;
    } else {
      return Invalid("'" + item + "' is not an IP address or CIDR block (or 'any')");
    }
    if (slash != std::string::npos) {
      uint64_t prefix = 0;
      if (!SetUnsigned(prefix, item.substr(slash + 1), 0, static_cast<uint64_t>(net.prefix)).ok())
        return Invalid("'" + item + "': prefix length must be 0-" + std::to_string(net.prefix));
      net.prefix = static_cast<int>(prefix);
    }
    nets.push_back(net);
  }
  if (nets.empty()) return Invalid("expected 'any' or a comma-separated list of addresses");
  m.allow = std::move(nets);
  m.allow_any = false;
  return {};
}

// Whether the first `prefix` bits of `a` and `b` agree.
bool SamePrefix(const uint8_t* a, const uint8_t* b, int prefix) {
  for (int i = 0; prefix > 0; ++i, prefix -= 8) {
    const uint8_t mask = prefix >= 8 ? 0xFF : static_cast<uint8_t>(0xFF << (8 - prefix));
    if ((a[i] & mask) != (b[i] & mask)) return false;
  }
  return true;
}

// Every key: its setter, the kind of value (--help's placeholder) and its --help text with the
// default (kept next to the setter so that no key is added without help; docs/operating.md has
// the same table).
struct Key {
  Setter set;
  const char* kind;
  const char* help;
  bool is_mode = false;  // a permission mode: a TOML integer must be written in octal
};

const std::map<std::string, Key>& Keys() {
  static const auto* keys = new std::map<std::string, Key>{
      {"socket",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           if (v.empty()) return Invalid("must not be empty");
           if (v.size() >= 108) return Invalid("path longer than a Unix socket allows (107 bytes)");
           c.socket_path = v;
           return {};
         },
        "PATH",
        "registration socket; its directory must exist (default /run/gshare/arbiter.sock)"}},
      {"socket_mode",
       {[](ArbiterConfig& c, const std::string& v) { return SetMode(c.socket_mode, v); },
        "MODE", "permissions of the registration socket file, octal (default 0666)", true}},
      {"control_socket",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           if (v.size() >= 108) return Invalid("path longer than a Unix socket allows (107 bytes)");
           c.control_socket = v;
           return {};
         },
        "PATH",
        "control socket for gshare-ctl and gshare-top, in a directory tenants are not given; 'off' "
        "disables it (default /run/gshare-operator/control.sock; control.sock next to a "
        "registration socket configured elsewhere)"}},
      {"control_socket_mode",
       {[](ArbiterConfig& c, const std::string& v) { return SetMode(c.control_socket_mode, v); },
        "MODE",
        "permissions of the control socket file; access is decided by uid and groups (default "
        "0666)",
        true}},
      {"control_read_uids",
       {[](ArbiterConfig& c, const std::string& v) { return SetIdList(c.control_read_uids, v); },
        "IDS",
        "uids that may use the read-only control commands, besides root and the arbiter's uid "
        "(default none)"}},
      {"control_read_gids",
       {[](ArbiterConfig& c, const std::string& v) { return SetIdList(c.control_read_gids, v); },
        "IDS", "gids that may use the read-only control commands (default none)"}},
      {"control_admin_uids",
       {[](ArbiterConfig& c, const std::string& v) { return SetIdList(c.control_admin_uids, v); },
        "IDS", "uids that may also drain, undrain, evict and set-slo (default none)"}},
      {"control_admin_gids",
       {[](ArbiterConfig& c, const std::string& v) { return SetIdList(c.control_admin_gids, v); },
        "IDS", "gids that may also drain, undrain, evict and set-slo (default none)"}},
      {"gpus",
       {[](ArbiterConfig& c, const std::string& v) { return SetGpuList(c.gpus, v); },
        "IDS", "GPU ordinals to manage (default: every visible GPU)"}},
      {"allowed_uids",
       {[](ArbiterConfig& c, const std::string& v) { return SetIdList(c.allowed_uids, v); },
        "IDS", "uids allowed to register (default: anyone who can connect)"}},
      {"allowed_gids",
       {[](ArbiterConfig& c, const std::string& v) { return SetIdList(c.allowed_gids, v); },
        "IDS",
        "gids allowed to register, primary or supplementary (default: anyone who can connect)"}},
      {"gpu_memory",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           auto b = ParseByteSize(v);
           if (!b.ok()) return b.status();
           if (*b < (1u << 20) || *b > shm::kMaxQuotaBytes)
             return Invalid("must be between 1MiB and 16TiB");
           c.gpu_memory_bytes = *b;
           return {};
         },
        "SIZE",
        "memory of each GPU; set it to run without asking the driver (default: from the driver)"}},
      {"gpu_count",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           uint64_t n = 0;
           if (auto e = SetUnsigned(n, v, 1, shm::kMaxGpus); !e.ok()) return e;
           c.gpu_count = static_cast<uint32_t>(n);
           return {};
         },
        "N", "GPUs assumed when --gpu-memory is set (default 1)"}},
      {"memory_reserve",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           auto b = ParseByteSize(v);
           if (!b.ok()) return b.status();
           c.memory_reserve_bytes = *b;
           return {};
         },
        "SIZE", "memory kept free on every GPU (default 0)"}},
      {"slice",
       {[](ArbiterConfig& c, const std::string& v) { return SetDuration(c.slice, v, false); },
        "DURATION", "time slice; a holder yields at its end when someone waits (default 20ms)"}},
      {"idle_release",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetDuration(c.idle_release, v, false);
         },
        "DURATION",
        "the arbiter's idle threshold; clients use GSHARE_IDLE_RELEASE_US (default 300us)"}},
      {"preempt_grace",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetDuration(c.preempt_grace, v, false);
         },
        "DURATION",
        "after a preemption, how long a holder may take before it is locked and checkpointed "
        "(default 200ms)"}},
      {"swap_order_timeout",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetDuration(c.swap_order_timeout, v, false);
         },
        "DURATION",
        "a swap order whose client shows no progress this long (first window: plus its quota "
        "at 128 MiB/s) disconnects it (default 10s)"}},
      {"lease",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           if (v != "on" && v != "off") return Invalid("'" + v + "' is neither 'on' nor 'off'");
           c.lease = v == "on";
           return {};
         },
        "on|off",
        "offer a sole tenant its next grant in advance, taken without a round trip (default on)"}},
      {"deep_evict_after",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetDuration(c.deep_evict_after, v, true);
         },
        "DURATION", "checkpoint vGPUs idle this long; 0 = never (default 0)"}},
      {"policy",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           if (v.empty()) return Invalid("must name a policy");
           c.policy = v;  // checked against the policy factory when the arbiter starts
           return {};
         },
        "NAME",
        "scheduling policy: aggressive, dual-queue, fifo, keepalive, proxy-swap, "
        "aggressive-no-<idea> (default aggressive)"}},
      {"metrics",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetMetricsAddress(c.metrics_address, v);
         },
        "ADDRESS",
        "serve Prometheus text at http://HOST:PORT/metrics or on the Unix socket unix:PATH; a "
        "non-loopback HOST needs --metrics-allow (default off)"}},
      {"metrics_allow",
       {[](ArbiterConfig& c, const std::string& v) { return SetIpNets(c.metrics_address, v); },
        "NETS",
        "client addresses or CIDR blocks that may scrape over TCP, or 'any'; others get 403 "
        "(default: anyone who reaches a loopback address)"}},
      {"metrics_max_connections",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           uint64_t n = 0;
           if (auto e = SetUnsigned(n, v, 1, 1024); !e.ok()) return e;
           c.metrics_address.max_connections = static_cast<uint32_t>(n);
           return {};
         },
        "N", "metrics connections served at once; more wait in the listen backlog (default 8)"}},
      {"metrics_socket_mode",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetMode(c.metrics_address.socket_mode, v);
         },
        "MODE", "permissions of the unix:PATH metrics socket file, octal (default 0600)", true}},
      {"fail_mode",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           if (v == "open") {
             c.fail_mode = FailMode::kOpen;
           } else if (v == "closed") {
             c.fail_mode = FailMode::kClosed;
           } else {
             return Invalid("'" + v + "' is neither 'open' nor 'closed'");
           }
           return {};
         },
        "open|closed",
        "what clients do while the arbiter is away, announced at registration (default open)"}},
      {"event_ring",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           c.event_ring_path = v;
           return {};
         },
        "PATH",
        "file of the node event ring, for gshare-trace, in a directory tenants are not given "
        "(default none; the example configuration: /run/gshare-operator/events)"}},
      {"event_ring_capacity",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           uint64_t n = 0;
           if (auto e = SetUnsigned(n, v, 16, uint64_t{1} << 24); !e.ok()) return e;
           if ((n & (n - 1)) != 0) return Invalid("must be a power of two");
           c.event_ring_capacity = n;
           return {};
         },
        "N", "records in the event ring, a power of two (default 65536)"}},
      {"event_ring_mode",
       {[](ArbiterConfig& c, const std::string& v) { return SetMode(c.event_ring_mode, v); },
        "MODE",
        "permissions of the event ring file, which names every tenant's functions, pids and uids "
        "(default 0600)",
        true}},
      {"event_ring_group",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           uint64_t gid = 0;
           if (auto e = SetUnsigned(gid, v, 0, 0xFFFFFFFEULL); !e.ok()) return e;
           c.event_ring_gid = static_cast<gid_t>(gid);
           return {};
         },
        "GID", "numeric group of the event ring file, for event_ring_mode's group bits (default: "
        "the arbiter's group)"}},
      {"doorbell_rate",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetUnsigned(c.doorbell_rate, v, 0, 100'000'000);
         },
        "N", "wake-ups per second one client's doorbell may cause; 0 = unlimited (default 10000)"}},
      {"doorbell_flood_disconnect",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetDuration(c.doorbell_flood_disconnect, v, true);
         },
        "DURATION",
        "disconnect a client that stays over --doorbell-rate this long; 0 = never (default 10s)"}},
      {"max_clients",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           uint64_t n = 0;
           if (auto e = SetUnsigned(n, v, 1, 1u << 20); !e.ok()) return e;
           c.max_clients = static_cast<uint32_t>(n);
           return {};
         },
        "N", "registrations are refused beyond this many clients (default 4096)"}},
      {"max_clients_per_uid",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetUnsigned32(c.max_clients_per_uid, v, 0, 1u << 20);
         },
        "N", "clients one uid may have at once; 0 = no limit (default 1024)"}},
      {"max_clients_per_pid",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetUnsigned32(c.max_clients_per_pid, v, 0, 1u << 20);
         },
        "N", "clients one process may have at once; 0 = no limit (default 64)"}},
      {"registration_rate_per_uid",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetUnsigned32(c.registration_rate_per_uid, v, 0, 1'000'000);
         },
        "N", "registrations a second one uid may make (bursts of 2N); 0 = no limit (default 100)"}},
      {"max_pending_registrations_per_uid",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetUnsigned32(c.max_pending_registrations_per_uid, v, 1, 1u << 16);
         },
        "N", "connections of one uid waiting for their registration request (default 8)"}},
      {"max_pending_registrations",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetUnsigned32(c.max_pending_registrations, v, 1, 1u << 20);
         },
        "N", "connections waiting for their registration request, in all (default 256)"}},
      {"mps_terminations_per_uid",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetUnsigned32(c.mps_terminations_per_uid, v, 0, 10'000);
         },
        "N", "MPS terminations one uid's clients may cause per mps_termination_window; past it a "
        "client ignoring preemption is disconnected without a daemon command; 0 = no cap "
        "(default 4)"}},
      {"mps_termination_window",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetDuration(c.mps_termination_window, v, false);
         },
        "DURATION", "the window of mps_terminations_per_uid, > 0, at most 24h (default 60s)"}},
      {"registration_timeout",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetDuration(c.registration_timeout, v, false);
         },
        "DURATION", "a connection must send its registration request within this (default 1s)"}},
      {"resident_claim_window",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetDuration(c.resident_claim_window, v, true);
         },
        "DURATION",
        "resident re-registrations are believed this long after the start (default 30s)"}},
      {"check_invariants",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           if (v != "on" && v != "off") return Invalid("'" + v + "' is neither 'on' nor 'off'");
           c.check_invariants = v == "on";
           return {};
         },
        "on|off",
        "check the arbiter's invariants after every loop iteration (default: on in debug builds)"}},
      {"libcuda",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           if (v.empty()) return Invalid("must not be empty");
           c.libcuda = v;
           return {};
         },
        "PATH",
        "driver library dlopened for GPU discovery and enforcement (default libcuda.so.1)"}},
      {"corun_gpus",
       {[](ArbiterConfig& c, const std::string& v) { return SetGpuList(c.corun.gpus, v); },
        "LIST", "GPU ordinals whose token is granted to co-run sets (default none: time slices only)"}},
      {"corun_fault_domain",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           if (v == "uid") c.corun.fault_domain = CorunFaultDomain::kUid;
           else if (v == "gid") c.corun.fault_domain = CorunFaultDomain::kGid;
           else if (v == "any") c.corun.fault_domain = CorunFaultDomain::kAny;
           else return Invalid("'" + v + "' is not one of uid, gid, any");
           return {};
         },
        "uid|gid|any",
        "who may co-run on one GPU: one uid's functions (default), one gid's, or anyone's "
        "(any: a fault of one tenant reaches every co-runner)"}},
      {"corun_max_members",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetUnsigned32(c.corun.max_members, v, 2, 48);
         },
        "N", "most functions co-running on one GPU, 2-48 (default 4)"}},
      {"corun_backoff",
       {[](ArbiterConfig& c, const std::string& v) { return SetDuration(c.corun.backoff, v, true); },
        "DURATION", "after a revocation, exclusive slices on the GPU and the pair apart this long (default 30s)"}},
      {"corun_threat",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetUnsigned32(c.corun.threat_percent, v, 10, 100);
         },
        "PERCENT", "a co-runner's burst over this percentage of its SLO revokes the set, 10-100 (default 90)"}},
      {"mps_control",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           if (!v.empty() && v.find('\0') != std::string::npos)
             return Invalid("contains a NUL byte");
           c.corun.mps_control = v;
           return {};
         },
        "PATH", "MPS control program started per co-run GPU in the foreground (default none)"}},
      {"mps_dir",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           if (v.empty() || v.front() != '/') return Invalid("must be an absolute path");
           // <mps_dir>/gpuNNNN/pipe/control must fit a Unix socket path.
           if (v.size() > 64) return Invalid("longer than 64 bytes (its MPS sockets must fit 107)");
           // Each GPU's pipe directory below it travels in share answers (wire.h).
           if (std::string why = shm::MpsPipeDirectoryProblem(v); !why.empty()) return Invalid(why);
           c.corun.mps_dir = v;
           return {};
         },
        "DIR", "root of the co-run GPUs' private MPS pipe and log directories (default /run/gshare-mps)"}},
      {"mps_swaps_verified",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           if (v != "true" && v != "false")
             return Invalid("'" + v + "' is neither 'true' nor 'false'");
           c.corun.mps_swaps_verified = v == "true";
           return {};
         },
        "true|false",
        "the same-address swap was verified under MPS here (tests/gpu/mps-check.sh): MPS "
        "clients may be swapped out and in on their own GPU; never moved (default false)"}},
      {"mps_context_memory",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetContextSize(c.corun.mps_context_bytes, v);
         },
        "SIZE",
        "device memory of an MPS client's context at a 100% share, counted beside its quota "
        "(default 526MiB: an H200's)"}},
      {"mps_context_floor",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetContextSize(c.corun.mps_context_floor_bytes, v);
         },
        "SIZE",
        "the part of an MPS client's context memory that does not shrink with its share, at "
        "most mps_context_memory (default 24MiB)"}},
      {"log_level",
       {[](ArbiterConfig& c, const std::string& v) -> Status {
           static const char* const kLevels[] = {"trace", "debug", "info", "warn",
                                                 "error", "critical", "off"};
           for (const char* l : kLevels)
             if (v == l) {
               c.log_level = v;
               return {};
             }
           return Invalid("'" + v +
                          "' is not one of trace, debug, info, warn, error, critical, off");
         },
        "LEVEL", "trace, debug, info, warn, error, critical or off (default info)"}},
  };
  return *keys;
}

// A TOML value as the text a setter takes; lists of integers or strings become "0,1". Other
// values (floats, dates, tables, other arrays) are an "unsupported value type".
Result<std::string> TomlText(const toml::node& node) {
  if (auto s = node.value<std::string>(); s && node.is_string()) return *s;
  if (node.is_integer()) return std::to_string(*node.value<int64_t>());
  if (node.is_boolean()) return std::string(*node.value<bool>() ? "true" : "false");
  if (const auto* arr = node.as_array()) {
    std::string out;
    for (const auto& el : *arr) {
      if (!el.is_integer() && !el.is_string()) return Invalid("unsupported value type");
      if (!out.empty()) out += ',';
      out += el.is_string() ? *el.value<std::string>() : std::to_string(*el.value<int64_t>());
    }
    return out;
  }
  return Invalid("unsupported value type");
}

// The error "config key 'NAME' (line L): " + what.
Status KeyError(const std::string& name, const toml::node& node, const std::string& what) {
  return Invalid("config key '" + name + "' (line " + std::to_string(node.source().begin.line) +
                 "): " + what);
}

// Applies one key of the file; OK or the error naming the key and its line.
Status ApplyTomlKey(ArbiterConfig& config, const std::string& name, const toml::node& node) {
  const auto it = Keys().find(name);
  if (it == Keys().end())
    return KeyError(name, node, node.is_table() ? "unknown table" : "unknown key");
  Result<std::string> text =
      it->second.is_mode && node.is_integer() ? ModeText(node) : TomlText(node);
  if (!text.ok()) return KeyError(name, node, text.status().message());
  if (auto s = it->second.set(config, *text); !s.ok()) return KeyError(name, node, s.message());
  return {};
}

std::string FlagName(const std::string& key) {
  std::string flag = "--" + key;
  for (char& ch : flag)
    if (ch == '_') ch = '-';
  return flag;
}

}  // namespace

std::string ControlSocketPath(const ArbiterConfig& config) {
  if (config.control_socket == "off") return {};
  if (!config.control_socket.empty()) return config.control_socket;
  if (config.socket_path == kDefaultSocketPath) return kDefaultControlSocketPath;
  const auto slash = config.socket_path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : config.socket_path.substr(0, slash);
  return (dir.empty() ? std::string("/") : dir + "/") + "control.sock";
}

const char* FailModeName(FailMode mode) { return mode == FailMode::kOpen ? "open" : "closed"; }

const char* CorunFaultDomainName(CorunFaultDomain d) {
  switch (d) {
    case CorunFaultDomain::kUid: return "uid";
    case CorunFaultDomain::kGid: return "gid";
    case CorunFaultDomain::kAny: return "any";
  }
  return "?";
}

bool IpNet::Contains(const std::string& ip) const {
  std::array<uint8_t, 16> b{};
  if (::inet_pton(AF_INET6, ip.c_str(), b.data()) == 1) {
    static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    if (family == AF_INET6) return SamePrefix(bytes.data(), b.data(), prefix);
    if (std::memcmp(b.data(), kMapped, sizeof(kMapped)) != 0) return false;
    return SamePrefix(bytes.data(), b.data() + 12, prefix);
  }
  if (family != AF_INET || ::inet_pton(AF_INET, ip.c_str(), b.data()) != 1) return false;
  return SamePrefix(bytes.data(), b.data(), prefix);
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  std::array<uint8_t, 16> b{};
  if (::inet_pton(AF_INET, host.c_str(), b.data()) == 1) return b[0] == 127;
  const std::string bare = host.size() > 2 && host.front() == '[' && host.back() == ']'
                               ? host.substr(1, host.size() - 2)
                               : host;
  in6_addr a{};
  return ::inet_pton(AF_INET6, bare.c_str(), &a) == 1 && IN6_IS_ADDR_LOOPBACK(&a);
}

Status CheckMetricsExposure(const MetricsConfig& metrics) {
  if (metrics.empty() || metrics.is_unix() || metrics.allow_any || !metrics.allow.empty())
    return {};
  const std::string host = metrics.address.substr(0, metrics.address.rfind(':'));
  if (IsLoopbackHost(host)) return {};
  return Invalid("metrics: '" + host +
                 "' is not a loopback address, and /metrics names every tenant's functions and "
                 "load: set metrics_allow to the scrapers' addresses (or 'any' to serve everyone "
                 "who can reach it)");
}

Result<ArbiterConfig> ParseConfigToml(std::string_view text, const ArbiterConfig& base) {
  ArbiterConfig config = base;
  toml::table root;
  try {
    root = toml::parse(text);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << "config file: " << e.description() << " (line " << e.source().begin.line << ")";
    return Invalid(os.str());
  }
  // Keys at the top level or all of them in an [arbiter] table, never both: a top-level key
  // beside [arbiter] would otherwise be silently ignored (allowed_uids, socket_mode...).
  const toml::table* table = &root;
  if (const auto* arbiter = root.get("arbiter")) {
    if (!arbiter->is_table()) return KeyError("arbiter", *arbiter, "must be a table ([arbiter])");
    for (const auto& [key, node] : root) {
      if (key.str() == "arbiter") continue;
      return KeyError(std::string(key.str()), node,
                      "outside the [arbiter] table, where it would be ignored: put every key "
                      "under [arbiter] (or drop [arbiter])");
    }
    table = arbiter->as_table();
  }
  for (const auto& [key, node] : *table) {
    if (auto s = ApplyTomlKey(config, std::string(key.str()), node); !s.ok()) return s;
  }
  return config;
}

Result<CommandLine> ParseCommandLine(int argc, const char* const* argv) {
  CommandLine result;
  CLI::App app{"gshare-arbiter: the node daemon that lets GPU functions share a node's GPUs"};
  std::string config_file;
  app.add_option("--config", config_file, "TOML config file (keys as the long flags, '_' for '-')")
      ->type_name("FILE");
  std::map<std::string, std::string> values;
  for (const auto& [key, k] : Keys())
    app.add_option(FlagName(key), values[key], k.help)->type_name(k.kind);
  app.add_option("--summary", result.config.summary_path, "write a JSON summary here on exit")
      ->type_name("FILE");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    result.help = app.help();
    return result;
  } catch (const CLI::ParseError& e) {
    return Invalid(std::string("command line: ") + e.what());
  }
  const std::string summary = result.config.summary_path;
  if (!config_file.empty()) {
    std::ifstream in(config_file);
    if (!in) return Invalid("--config: cannot read '" + config_file + "'");
    std::stringstream buf;
    buf << in.rdbuf();
    Result<ArbiterConfig> file = ParseConfigToml(buf.str(), result.config);
    if (!file.ok()) return Invalid(file.status().message() + " in " + config_file);
    result.config = std::move(file).value();
    result.config.summary_path = summary;
  }
  for (const auto& [key, k] : Keys()) {
    if (app.count(FlagName(key)) == 0) continue;
    if (auto s = k.set(result.config, values[key]); !s.ok())
      return Invalid(FlagName(key) + ": " + s.message());
  }
  if (auto s = CheckMetricsExposure(result.config.metrics_address); !s.ok()) return s;
  if (result.config.corun.mps_context_floor_bytes > result.config.corun.mps_context_bytes)
    return Invalid("mps_context_floor: " +
                   FormatByteSize(result.config.corun.mps_context_floor_bytes) +
                   " exceeds mps_context_memory (" +
                   FormatByteSize(result.config.corun.mps_context_bytes) + ")");
  return result;
}

}  // namespace gshare::arbiter
