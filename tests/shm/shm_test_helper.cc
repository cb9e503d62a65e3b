// Helper program for the shm tests: plays the client (or an intruder, or a trace reader) in a
// separate process. Usage: shm_test_helper [--uid N] <command> args...; prints one result
// line on stdout and exits 0 on success (codes per command below).
#include <fcntl.h>
#include <grp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "gshare/shm/channel.h"
#include "gshare/shm/event_ring.h"
#include "gshare/shm/futex.h"
#include "gshare/shm/registration.h"

using namespace gshare::shm;  // NOLINT

namespace {

uint64_t Num(const char* s) { return std::strtoull(s, nullptr, 0); }
std::chrono::milliseconds Ms(const char* s) { return std::chrono::milliseconds(Num(s)); }

UniqueFd Dup(const char* s) { return UniqueFd(::fcntl(static_cast<int>(Num(s)), F_DUPFD_CLOEXEC, 0)); }

int CountChannelFds() {
  int n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    std::error_code ec2;
    const auto target = std::filesystem::read_symlink(entry.path(), ec2).string();
    if (target.rfind("/memfd:gshare-channel", 0) == 0) ++n;
  }
  return n;
}

// register <socket> <quota> <slo> <name>: registers, attaches, writes a heartbeat, prints the
// assignment, then waits for the arbiter's goodbye. Exit 3 refused, 2 other error.
int Register(char** argv) {
  RegisterRequest req;
  req.quota_bytes = Num(argv[1]);
  req.slo_ms = static_cast<uint32_t>(Num(argv[2]));
  req.function_name = argv[3];
  auto reg = Register(argv[0], req, std::chrono::seconds(10));
  if (!reg.ok()) {
    std::printf("%s: %s\n", reg.status().code() == StatusCode::kRefused ? "refused" : "error",
                reg.status().ToString().c_str());
    return reg.status().code() == StatusCode::kRefused ? 3 : 2;
  }
  const uint32_t id = reg->reply.client_id;
  const uint32_t gpu = reg->reply.gpu;
  auto ch = ClientChannel::Attach(std::move(reg->channel), std::move(reg->doorbell));
  if (!ch.ok()) {
    std::printf("error: %s\n", ch.status().ToString().c_str());
    return 2;
  }
  ch->Heartbeat(MonotonicNowNs());
  ch->BumpGeneration();
  std::printf("accepted id=%u gpu=%u header_id=%u channels=%d pid=%d uid=%d\n", id, gpu,
              ch->header().client_id, CountChannelFds(), ::getpid(), ::getuid());
  std::fflush(stdout);
  auto bye = ReceiveGoodbye(reg->connection.get(), std::chrono::seconds(30));
  std::printf("goodbye: %s\n", bye.ok() ? bye->reason.c_str() : bye.status().ToString().c_str());
  return bye.ok() ? 0 : 2;
}

// wait-grant <channel fd> <doorbell fd> <timeout ms>. Exit 4 on timeout.
int WaitGrant(char** argv) {
  auto ch = ClientChannel::Attach(Dup(argv[0]), Dup(argv[1]));
  if (!ch.ok()) {
    std::printf("error: %s\n", ch.status().ToString().c_str());
    return 2;
  }
  if (Status s = ch->RequestToken(); !s.ok()) return 2;
  auto g = ch->WaitForGrant(Ms(argv[2]));
  if (!g.ok()) {
    std::printf("error: %s\n", g.status().ToString().c_str());
    return g.status().code() == StatusCode::kTimeout ? 4 : 2;
  }
  std::printf("granted seq=%u gpu=%u holds=%d\n", g->seq, g->gpu, ch->HoldsToken() ? 1 : 0);
  if (Status s = ch->Release(g->seq, false); !s.ok()) return 2;
  return 0;
}

// wait-order <channel fd> <doorbell fd> <last seq> <timeout ms>: waits for a swap order and
// acknowledges it (12345 bytes, 678 ns, swapped out). Exit 4 on timeout.
int WaitOrder(char** argv) {
  auto ch = ClientChannel::Attach(Dup(argv[0]), Dup(argv[1]));
  if (!ch.ok()) return 2;
  auto o = ch->WaitForSwapOrder(static_cast<uint32_t>(Num(argv[2])), Ms(argv[3]));
  if (!o.ok()) return o.status().code() == StatusCode::kTimeout ? 4 : 2;
  std::printf("order seq=%u op=%u gpu=%u\n", o->seq, static_cast<unsigned>(o->op), o->target_gpu);
  if (Status s = ch->AckSwap(o->seq, SwapAckStatus::kOk, 12345, 678, Residency::kSwappedOut, kNoGpu, 0);
      !s.ok()) {
    return 2;
  }
  return 0;
}

// try-open <path>: exit 0 if opening it (read-write and read-only) is refused with
// EACCES/EPERM, 1 if it opened, 2 on another error.
int TryOpen(char** argv) {
  int result = 0;
  for (int flags : {O_RDWR, O_RDONLY}) {
    const int fd = ::open(argv[0], flags | O_CLOEXEC);
    if (fd >= 0) {
      ::close(fd);
      std::printf("opened %s\n", argv[0]);
      return 1;
    }
    std::printf("open: %s\n", std::strerror(errno));
    if (errno != EACCES && errno != EPERM) result = 2;
  }
  return result;
}

// ring-read <ring fd> <expected count> <timeout ms>: reads until read + lost == expected and
// checks every record's pattern. Prints "ready" once attached (written by EventRingTest). Exit 0 if all consistent.
int RingRead(char** argv) {
  auto r = EventRingReader::Attach(Dup(argv[0]));
  if (!r.ok()) {
    std::printf("error: %s\n", r.status().ToString().c_str());
    return 2;
  }
  const uint64_t expected = Num(argv[1]);
  const uint64_t start = r->position();  // records before this were written before we came
  std::printf("ready\n");
  std::fflush(stdout);
  const uint64_t deadline = MonotonicNowNs() + static_cast<uint64_t>(Ms(argv[2]).count()) * 1'000'000;
  std::vector<Event> buf(64);
  uint64_t bad = 0, last = 0;
  bool first = true;
  while (start + r->stats().read + r->stats().lost < expected && MonotonicNowNs() < deadline) {
    const size_t n = r->Read(buf);
    for (size_t i = 0; i < n; ++i) {
      const Event& e = buf[i];
      const bool ok = e.type == EventType::kGrant && e.args[0] == e.index && e.args[1] == ~e.index &&
                      e.timestamp_ns == e.index * 7 && e.client_id == static_cast<uint32_t>(e.index) &&
                      (first || e.index > last);
      if (!ok) ++bad;
      last = e.index;
      first = false;
    }
  }
  std::printf("read=%llu lost=%llu bad=%llu\n", static_cast<unsigned long long>(r->stats().read),
              static_cast<unsigned long long>(r->stats().lost), static_cast<unsigned long long>(bad));
  return (bad == 0 && start + r->stats().read + r->stats().lost == expected) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int i = 1;
  if (argc > 2 && std::strcmp(argv[1], "--uid") == 0) {
    const auto id = static_cast<uid_t>(Num(argv[2]));
    if (::setgroups(0, nullptr) != 0 || ::setresgid(id, id, id) != 0 || ::setresuid(id, id, id) != 0) {
      std::printf("error: cannot drop to uid %u: %s\n", id, std::strerror(errno));
      return 2;
    }
    i = 3;
  }
  if (argc <= i) return 64;
  const std::string cmd = argv[i];
  char** args = argv + i + 1;
  const int nargs = argc - i - 1;
  if (cmd == "register" && nargs == 4) return Register(args);
  if (cmd == "wait-grant" && nargs == 3) return WaitGrant(args);
  if (cmd == "wait-order" && nargs == 4) return WaitOrder(args);
  if (cmd == "try-open" && nargs == 1) return TryOpen(args);
  if (cmd == "ring-read" && nargs == 3) return RingRead(args);
  std::printf("usage error\n");
  return 64;
}
