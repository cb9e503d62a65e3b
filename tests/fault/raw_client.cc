// fault_raw_client: a misbehaving arbiter client built directly on shm/ (no shim), for the
// fault-injection tests. Each mode stops or misbehaves at one protocol step:
//
//   connect   --socket P               connects and never sends its request (stalled handshake)
//   no-reply  --socket P               sends a valid RegisterRequest, never reads the reply
//   deaf      --socket P --quota-mib Q registers, then never reads its channel again (orders are
//                                      never acknowledged)
//   hold      --socket P --quota-mib Q registers, takes the token and never yields it (ignores
//                                      preemption; it is no CUDA process, so the arbiter cannot
//                                      checkpoint it)
//   flood     --socket P --quota-mib Q --seconds S
//                                      registers and floods its channel with requests (token
//                                      requests and releases, swap-in requests, doorbell rings)
//                                      for S seconds, then writes a malformed value
//   flood-doorbell --socket P --quota-mib Q --seconds S
//                                      registers and writes its doorbell eventfd in a tight loop
//                                      (ignoring whether the arbiter armed it) until the arbiter
//                                      closes the connection or S seconds pass; prints
//                                      "flooded N" and then "closed" or "still connected"
//   stall-write --socket P --quota-mib Q --stall-ms M
//                                      registers, then stops inside a write of its burst report
//                                      (seqlock odd, as a writer descheduled there) for M ms
//                                      (M = 0: forever), completes the write and rings; prints
//                                      "stalled", then "completed", then after 1 s
//                                      "still connected" or "closed" (or only "closed" when the
//                                      arbiter disconnects it while stalled)
//   malformed --socket P --quota-mib Q [--again FILE]
//                                      registers, writes a malformed value into its channel and
//                                      lives on after the arbiter disconnects it ("closed"); with
//                                      --again, once FILE exists it registers again as a shim
//                                      that ran on fail-open does (re-registration, resident on
//                                      its GPU) and prints "registered again N"
//   register  --socket P --quota-mib Q registers and sleeps
//
// --cuda 1 (any mode that registers): before registering, the process initialises the CUDA
// driver found as libcuda.so.1 (simcuda in the tests), retains device 0's primary context and
// allocates Q MiB there, so the driver knows it as a CUDA process holding that memory (as a
// function under the shim is); without it, it is no CUDA process.
// Prints one line per step reached ("connected", "sent", "registered", "granted", "flooded N")
// and then sleeps until killed (except flood, which exits after the malformed write is seen).
#include <dlfcn.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>

#include "cuda_process.h"
#include "gshare/shm/atomic_word.h"
#include "gshare/shm/channel.h"
#include "gshare/shm/registration.h"
#include "gshare/shm/unix_socket.h"
#include "gshare/shm/wire.h"

namespace {

using namespace gshare::shm;
using std::chrono::seconds;

[[noreturn]] void SleepForever() {
  for (;;) std::this_thread::sleep_for(seconds(60));
}

void Say(const std::string& what) {
  std::printf("%s\n", what.c_str());
  std::fflush(stdout);
}

int Connect(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return -1;
  return fd;
}

RegisterRequest Request(uint64_t quota_mib, const std::string& name) {
  RegisterRequest r;
  r.quota_bytes = quota_mib << 20;
  r.slo_ms = 50;
  r.function_name = name;
  return r;
}

// Rings the doorbell as fast as it can (one write per ring), looking every 1024 rings whether
// the arbiter closed the connection.
int FloodDoorbell(const Registration& reg, const std::string& seconds_text) {
  const auto end = std::chrono::steady_clock::now() + seconds(std::atoi(seconds_text.c_str()));
  const uint64_t one = 1;
  uint64_t n = 0;
  bool closed = false;
  Say("flooding");
  while (!closed && std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 1024; ++i, ++n) {
      if (::write(reg.doorbell.get(), &one, sizeof one) != static_cast<ssize_t>(sizeof one)) break;
    }
    pollfd p{reg.connection.get(), POLLIN | POLLRDHUP, 0};
    closed = ::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR)) != 0;
  }
  Say("flooded " + std::to_string(n));
  Say(closed ? "closed" : "still connected");
  return 0;
}

bool Closed(int connection) {
  pollfd p{connection, POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR)) != 0;
}

// Holds the burst seqlock odd for `stall_ms` (0: until the arbiter closes the connection),
// then finishes the write as ClientChannel::ReportBurstStart would and rings the doorbell.
int StallWrite(ClientChannel& ch, int connection, int stall_ms) {
  ChannelLayout* l = ch.layout();
  const uint32_t v = LoadRelaxed(&l->burst.version);
  StoreRelease(&l->burst.version, v + 1);  // odd: inside the write section
  (void)ch.NotifyArbiter();
  Say("stalled");
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(stall_ms);
  while (stall_ms == 0 || std::chrono::steady_clock::now() < until) {
    if (Closed(connection)) {
      Say("closed");
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  StoreRelease(&l->burst.version, v + 2);
  (void)ch.NotifyArbiter();
  Say("completed");
  std::this_thread::sleep_for(seconds(1));
  Say(Closed(connection) ? "closed" : "still connected");
  return 0;
}

// Disconnected as malformed, alive: waits for `again` (if any) and registers once more the way
// a shim on fail-open does after losing its arbiter (resident on the GPU it had).
[[noreturn]] void LiveOnAfterDisconnect(const std::string& socket, uint64_t quota_mib,
                                        const RegisterReply& first, const std::string& again) {
  if (again.empty()) SleepForever();
  while (::access(again.c_str(), F_OK) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  RegisterRequest r = Request(quota_mib, "malformed");
  r.flags = kFlagReRegister | kFlagResident;
  r.previous_client_id = first.client_id;
  r.current_gpu = first.gpu;
  r.resident_bytes = quota_mib << 20;
  auto reg = Register(socket, r, seconds(10));
  Say(reg.ok() ? "registered again " + std::to_string(reg->reply.client_id)
               : "refused again " + reg.status().ToString());
  SleepForever();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  std::map<std::string, std::string> f;
  for (int i = 2; i + 1 < argc; i += 2) f[argv[i]] = argv[i + 1];
  const std::string socket = f["--socket"];
  const uint64_t quota_mib = f.count("--quota-mib") ? std::strtoull(f["--quota-mib"].c_str(), nullptr, 10) : 64;

  if (mode == "connect") {
    if (Connect(socket) < 0) return 1;
    Say("connected");
    SleepForever();
  }
  if (mode == "no-reply") {
    const int fd = Connect(socket);
    auto bytes = EncodeRequest(Request(quota_mib, "no-reply"));
    if (fd < 0 || !bytes.ok()) return 1;
    if (!SendPacket(fd, *bytes, {}, seconds(5)).ok()) return 1;
    Say("sent");
    SleepForever();
  }

  if (f["--cuda"] == "1") {
    if (!gshare::fault::BecomeCudaProcess(quota_mib)) {
      Say("no CUDA");
      return 1;
    }
    Say("cuda");
  }
  auto reg = Register(socket, Request(quota_mib, mode), seconds(10));
  if (!reg.ok()) {
    Say("refused " + reg.status().ToString());
    return 1;
  }
  if (mode == "flood-doorbell") return FloodDoorbell(*reg, f["--seconds"]);
  auto ch = ClientChannel::Attach(std::move(reg->channel), std::move(reg->doorbell));
  if (!ch.ok()) return 1;
  Say("registered " + std::to_string(reg->reply.client_id));
  if (mode == "deaf" || mode == "register") SleepForever();
  if (mode == "malformed") {
    StoreRelease(&ch->layout()->client_token.state, 77u);  // a value out of range
    (void)ch->NotifyArbiter();
    while (!Closed(reg->connection.get())) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    Say("closed");
    LiveOnAfterDisconnect(socket, quota_mib, reg->reply, f["--again"]);
  }
  if (mode == "stall-write") return StallWrite(*ch, reg->connection.get(), std::atoi(f["--stall-ms"].c_str()));
  if (mode == "hold") {
    if (!ch->RequestToken().ok()) return 1;
    auto g = ch->WaitForGrant(seconds(30));
    if (!g.ok()) return 1;
    Say("granted");
    SleepForever();
  }
  if (mode == "flood") {
    const auto end = std::chrono::steady_clock::now() + seconds(std::atoi(f["--seconds"].c_str()));
    uint64_t n = 0;
    uint32_t last_seq = 0;
    while (std::chrono::steady_clock::now() < end) {
      (void)ch->RequestToken();
      (void)ch->RequestSwapIn();
      (void)ch->NotifyArbiter();
      const GrantInfo g = ch->ReadGrant();
      if (ch->HoldsToken() && g.seq != last_seq) {
        last_seq = g.seq;
        (void)ch->BeginDraining();
        (void)ch->Release(g.seq, true);
      }
      ++n;
    }
    Say("flooded " + std::to_string(n));
    // A value out of range: the arbiter must disconnect this client (and close the socket).
    StoreRelease(&ch->layout()->client_token.state, 77u);
    (void)ch->NotifyArbiter();
    auto bye = ReceiveGoodbye(reg->connection.get(), seconds(30));
    Say(bye.ok() ? "goodbye" : "closed " + bye.status().ToString());
    return 0;
  }
  return 2;
}
