// The MPS client side of simcuda (see mps_client.h).
#include "mps_client.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "context.h"
#include "driver.h"
#include "gshare/common/units.h"
#include "log.h"
#include "mps_protocol.h"

namespace simcuda {
namespace {

struct MpsState {
  std::atomic<bool> active{false};
  std::vector<bool> served;         // by device ordinal; immutable after JoinMps
  unsigned share = 100;
  int max_clients = 48;
  double context_mib_per_sm = 2;
  double step_ns = 500e3;
  std::string refused;              // the daemon's reason, if it refused this process
  std::atomic<int> fd{-1};          // the connection to the daemon
  std::atomic<bool> terminated{false};
  std::atomic<bool> connection_lost{false};
};

MpsState& State() {
  static MpsState* state = new MpsState();  // never destroyed: calls may come during exit
  return *state;
}

// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: a whole number 1..100.
bool ParseShare(const char* text, unsigned* out) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < 1 || v > 100) return false;
  *out = static_cast<unsigned>(v);
  return true;
}

// A size as NVIDIA writes it ("1G", "512M", "64K", "2T": powers of 1024), or as simcuda's
// other settings do ("1GiB", "4096").
bool ParseLimit(std::string_view text, uint64_t* out) {
  if (!text.empty()) {
    const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
    const char* units = "KMGT";
    if (const char* at = std::strchr(units, unit); at != nullptr && unit != '\0') {
      std::string number(text.substr(0, text.size() - 1));
      char* end = nullptr;
      const double v = std::strtod(number.c_str(), &end);
      if (number.empty() || *end != '\0' || !(v > 0)) return false;
      *out = static_cast<uint64_t>(v * std::pow(1024.0, static_cast<double>(at - units + 1)));
      return true;
    }
  }
  const gshare::Result<uint64_t> v = gshare::ParseByteSize(text);
  if (!v.ok() || *v == 0) return false;
  *out = *v;
  return true;
}

// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: "0=1G,1=512M" (per ordinal) or "2G" (every device).
bool ParseLimits(const char* text, int devices, std::vector<uint64_t>* limits) {
  limits->assign(static_cast<size_t>(devices), 0);
  std::string_view rest(text);
  if (rest.find('=') == std::string_view::npos) {
    uint64_t all = 0;
    if (!ParseLimit(rest, &all)) return false;
    limits->assign(static_cast<size_t>(devices), all);
    return true;
  }
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) return false;
    std::string ordinal(item.substr(0, eq));
    char* end = nullptr;
    const long dev = std::strtol(ordinal.c_str(), &end, 10);
    if (*end != '\0' || dev < 0 || dev >= devices) return false;
    if (!ParseLimit(item.substr(eq + 1), &(*limits)[static_cast<size_t>(dev)])) return false;
  }
  return true;
}

// Reads the daemon's messages for the life of the process: "terminate" is acknowledged and
// makes every later call fail; the connection's end (the daemon died or quit) too.
void WatchDaemon(int fd) {
  std::string input;
  char buf[256];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    input.append(buf, static_cast<size_t>(n));
    for (size_t eol; (eol = input.find('\n')) != std::string::npos;) {
      const std::string line = input.substr(0, eol);
      input.erase(0, eol + 1);
      if (line == "terminate") {
        State().terminated.store(true);
        Log(LogLevel::kWarn, "this MPS client was terminated by the MPS control daemon "
            "(terminate_client): CUDA calls fail with CUDA_ERROR_MPS_CLIENT_TERMINATED");
        const char ack[] = "terminated\n";
        ssize_t ignored = write(fd, ack, sizeof ack - 1);
        (void)ignored;
      }
    }
  }
  if (State().fd.load() == fd) {  // not a forked child's closed copy
    State().connection_lost.store(true);
    Log(LogLevel::kWarn, "lost the connection to the MPS control daemon: CUDA calls fail with "
        "CUDA_ERROR_MPS_CONNECTION_FAILED");
  }
}

// "ok <server>" or "refused <reason>", read byte by byte (nothing after the line is consumed).
std::string ReadLine(int fd) {
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

}  // namespace

CUresult JoinMps(DriverState* d) {
  MpsState& s = State();
  const std::string pipe_dir = MpsPipeDirectory();
  std::optional<MpsDaemonInfo> daemon = FindLiveDaemon(pipe_dir);
  if (!daemon) {
    Log(LogLevel::kDebug, "no MPS control daemon in %s: running time-sliced", pipe_dir.c_str());
    return CUDA_SUCCESS;
  }
  if (daemon->registry != d->registry->path()) {
    Log(LogLevel::kInfo, "the MPS control daemon in %s serves registry %s, not %s: running time-sliced",
        pipe_dir.c_str(), daemon->registry.c_str(), d->registry->path().c_str());
    return CUDA_SUCCESS;
  }
  // The devices this process will see: those the daemon serves, renumbered from 0 in the
  // daemon's order (the MPS server remaps CUDA_VISIBLE_DEVICES of the daemon so).
  std::vector<int> visible;
  for (int dev : daemon->devices) {
    if (dev >= 0 && static_cast<size_t>(dev) < d->devices.size() &&
        std::find(visible.begin(), visible.end(), dev) == visible.end())
      visible.push_back(dev);
  }
  if (visible.empty()) {
    Log(LogLevel::kWarn, "the MPS control daemon in %s serves none of registry %s's devices: running "
        "time-sliced", pipe_dir.c_str(), d->registry->path().c_str());
    return CUDA_SUCCESS;
  }
  const int devices = static_cast<int>(visible.size());
  if (const char* share = std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"); share != nullptr) {
    if (!ParseShare(share, &s.share)) {
      Log(LogLevel::kError, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE='%s' is not a whole percentage 1..100",
          share);
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  std::vector<uint64_t> limits(static_cast<size_t>(devices), 0);
  if (const char* limit = std::getenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"); limit != nullptr) {
    if (!ParseLimits(limit, devices, &limits)) {
      Log(LogLevel::kError, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT='%s' is malformed: use a size (\"2G\") "
          "or ordinal=size pairs (\"0=1G,1=512M\") for ordinals 0..%d", limit, devices - 1);
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  const int fd = ConnectToDaemon(pipe_dir);
  const char hello[] = "hello\n";
  if (fd < 0 || write(fd, hello, sizeof hello - 1) != static_cast<ssize_t>(sizeof hello - 1)) {
    Log(LogLevel::kWarn, "cannot reach the MPS control daemon in %s (%s): running time-sliced",
        pipe_dir.c_str(), std::strerror(errno));
    if (fd >= 0) close(fd);
    return CUDA_SUCCESS;
  }
  const std::string reply = ReadLine(fd);
  if (reply.rfind("ok", 0) != 0) {
    s.refused = reply.empty() ? "the daemon closed the connection" : reply;
    Log(LogLevel::kWarn, "the MPS control daemon refused this process: %s", s.refused.c_str());
    close(fd);
  } else {
    s.fd.store(fd);
    std::thread(WatchDaemon, fd).detach();
  }
  // From here on the process sees only the served devices, as ordinals 0..n-1.
  std::vector<DeviceInfo> seen;
  for (int dev : visible) seen.push_back(d->devices[static_cast<size_t>(dev)]);
  d->devices = std::move(seen);
  d->primary.resize(d->devices.size());
  d->registry->SetVisibleDevices(visible);
  s.served.assign(static_cast<size_t>(devices), true);
  for (int dev = 0; dev < devices; ++dev) d->registry->SetMemoryLimit(dev, limits[static_cast<size_t>(dev)]);
  s.max_clients = daemon->max_clients;
  s.context_mib_per_sm = daemon->context_mib_per_sm;
  s.step_ns = d->config.mps_step_us * 1e3;
  s.active.store(true);
  std::string seen_as;
  for (size_t i = 0; i < visible.size(); ++i)
    seen_as += (i == 0 ? "" : ", ") + std::to_string(visible[i]) + " as " + std::to_string(i);
  Log(LogLevel::kInfo, "MPS client of daemon %d (%s; registry device %s), share %u%%", daemon->pid,
      pipe_dir.c_str(), seen_as.c_str(), s.share);
  return CUDA_SUCCESS;
}

bool MpsServes(int dev) {
  const MpsState& s = State();
  return s.active.load() && dev >= 0 && static_cast<size_t>(dev) < s.served.size() &&
         s.served[static_cast<size_t>(dev)];
}

unsigned MpsSharePercent() { return State().active.load() ? State().share : 100; }
double MpsStepNs() { return State().step_ns; }

CUresult MpsAttachContext(CUctx_st* ctx) {
  if (!MpsServes(ctx->device)) return CUDA_SUCCESS;
  MpsState& s = State();
  if (!s.refused.empty()) {
    Log(LogLevel::kError, "context on device %d: %s (CUDA_ERROR_MPS_SERVER_NOT_READY)", ctx->device,
        s.refused.c_str());
    return CUDA_ERROR_MPS_SERVER_NOT_READY;
  }
  if (s.terminated.load()) return CUDA_ERROR_MPS_CLIENT_TERMINATED;
  if (s.connection_lost.load()) return CUDA_ERROR_MPS_CONNECTION_FAILED;
  DriverState* d = Driver();
  const int sms = d->devices[static_cast<size_t>(ctx->device)].spec.sm_count;
  // SM counts round up (NVIDIA's execution-affinity rule).
  const double share_sms = std::ceil(sms * s.share / 100.0);
  const auto bytes = static_cast<uint64_t>(share_sms * s.context_mib_per_sm * (1 << 20)) / 4096 * 4096;
  int slot = -1;
  switch (d->registry->MpsAttach(ctx->device, s.share, s.max_clients, bytes, &slot)) {
    case MpsAttachResult::kOk: break;
    case MpsAttachResult::kMaxClients:
      Log(LogLevel::kError, "device %d already has %d MPS client contexts: CUDA_ERROR_MPS_MAX_CLIENTS_REACHED",
          ctx->device, s.max_clients);
      return CUDA_ERROR_MPS_MAX_CLIENTS_REACHED;
    case MpsAttachResult::kNotReady:
      Log(LogLevel::kError, "the MPS server of device %d recovers from a fatal fault until all its "
          "clients have exited: CUDA_ERROR_MPS_SERVER_NOT_READY", ctx->device);
      return CUDA_ERROR_MPS_SERVER_NOT_READY;
  }
  if (bytes != 0 && !d->registry->ReserveContextMemory(ctx->device, bytes)) {
    d->registry->MpsDetach(ctx->device, slot);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  ctx->mps_slot = slot;
  ctx->mps_context_bytes = bytes;
  return CUDA_SUCCESS;
}

void MpsDetachContext(CUctx_st* ctx) {
  if (ctx->mps_slot < 0) return;
  DriverState* d = Driver();
  if (ctx->mps_context_bytes != 0) d->registry->ReleaseContextMemory(ctx->device, ctx->mps_context_bytes);
  d->registry->MpsDetach(ctx->device, ctx->mps_slot);
  ctx->mps_slot = -1;
  ctx->mps_context_bytes = 0;
}

CUresult MpsCheck(const CUctx_st* ctx) {
  if (ctx == nullptr || ctx->mps_slot < 0) return CUDA_SUCCESS;
  const MpsState& s = State();
  if (s.terminated.load(std::memory_order_relaxed)) return CUDA_ERROR_MPS_CLIENT_TERMINATED;
  if (s.connection_lost.load(std::memory_order_relaxed)) return CUDA_ERROR_MPS_CONNECTION_FAILED;
  if (Driver()->registry->MpsFaulted(ctx->device, ctx->mps_slot)) return CUDA_ERROR_ILLEGAL_ADDRESS;
  return CUDA_SUCCESS;
}

void MpsFatalFault(const CUctx_st* ctx) {
  if (ctx->mps_slot < 0) return;
  Log(LogLevel::kError, "fatal fault in an MPS client of device %d: every client of its server fails "
      "with CUDA_ERROR_ILLEGAL_ADDRESS", ctx->device);
  Driver()->registry->MpsRaiseFault(ctx->device);
}

void MpsForgetAfterFork() {
  MpsState& s = State();
  s.active.store(false);
  const int fd = s.fd.exchange(-1);
  if (fd >= 0) close(fd);
}

}  // namespace simcuda
