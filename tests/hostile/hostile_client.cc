// hostile_client: the attacks of the hostile-tenant review of the arbiter (issue 16,
// docs/security.md "Hostile tenants"), one per mode, built on shm/ without the shim. Each prints
// one line per step reached and a final result line, then exits (or sleeps where noted).
//
//   linger-fd --socket P [--linger-s N] [--control 0|1]
//        sends a RegisterRequest (or, --control 1, a control request line to P as a stream
//        socket) carrying, over SCM_RIGHTS, a loopback TCP socket with unsent data and SO_LINGER
//        N s, then closes its own copy; prints "fd refused <errno>" when the kernel refused to
//        send the descriptor, else "fd sent", then "reply" or "no reply"; sleeps (its TCP peer
//        must stay).
//   half-open --socket P --count N --seconds S
//        keeps N connections that never send their request, opening a new one as soon as the
//        arbiter drops one; prints "reconnects R".
//   drain-ring --socket P --seconds S --rate R
//        registers, takes the token, marks itself draining and never releases, ringing its
//        doorbell R times a second; prints "rings N" and "closed" or "still connected".
//   fork-hold --socket P
//        registers, takes the token, forks a child that keeps the connection and the channel
//        (and sleeps), prints "child PID" and exits.
//   resident-lie --socket P --quota-mib Q --count K
//        sends K re-registrations that claim to be resident with Q MiB on GPU 0, never
//        acknowledging any order; prints "accepted A of K"; sleeps.
//   unenforceable-loop --socket P --seconds S
//        for S seconds: registers, takes the token and holds it (ignoring preemption; no CUDA
//        state, so it cannot be checkpointed) until disconnected, then registers again at once;
//        prints "holds H refusals R".
//   register-many --socket P --count K
//        registers K times from this one process, keeping every connection; prints
//        "accepted A refused R" and the last refusal's reason ("last <reason>"); sleeps.
//   resident-lie ... --cuda 1: the liar is a CUDA process (libcuda.so.1 initialised first).
//   churn --socket P --count K
//        registers and leaves (closes the connection) K times, one after another; prints
//        "churned A refused R".
//   stopped-registrant --socket P --count K
//        (a CUDA process: initialises libcuda.so.1 first) sends K re-registrations on K
//        connections without waiting for replies, prints "sent K", then stops itself (SIGSTOP).
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "cuda_process.h"
#include "gshare/shm/channel.h"
#include "gshare/shm/registration.h"
#include "gshare/shm/unix_socket.h"
#include "gshare/shm/wire.h"

namespace {

using namespace gshare::shm;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

void Say(const std::string& what) {
  std::printf("%s\n", what.c_str());
  std::fflush(stdout);
}

[[noreturn]] void SleepForever() {
  for (;;) std::this_thread::sleep_for(seconds(60));
}

int ConnectUnix(const std::string& path, int type) {
  const int fd = ::socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

bool Closed(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR)) != 0;
}

RegisterRequest Request(uint64_t quota_mib, const std::string& name) {
  RegisterRequest r;
  r.quota_bytes = quota_mib << 20;
  r.slo_ms = 50;
  r.function_name = name;
  return r;
}

// A loopback TCP connection whose send queue is full (the peer never reads, its listener never
// accepts) with SO_LINGER `linger_s`: closing its last reference blocks that long.
int LingeringTcpSocket(int linger_s) {
  const int lst = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (lst < 0 || ::bind(lst, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::listen(lst, 1) != 0 || ::getsockname(lst, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return -1;
  const int small = 4096;
  (void)::setsockopt(lst, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0 || ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return -1;
  (void)::fcntl(s, F_SETFL, O_NONBLOCK);
  std::vector<char> junk(1 << 16, 'x');
  for (int i = 0; i < 4096; ++i)
    if (::send(s, junk.data(), junk.size(), MSG_NOSIGNAL) < 0) break;  // full: EAGAIN
  linger l{1, linger_s};
  (void)::setsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  (void)::fcntl(s, F_SETFL, 0);  // a blocking close waits for the linger
  return s;  // the listener stays open (leaked on purpose: the connection must not be reset)
}

int LingerFd(const std::string& socket, int linger_s, bool control) {
  const int tcp = LingeringTcpSocket(linger_s);
  if (tcp < 0) {
    Say("no tcp socket");
    return 1;
  }
  const int conn = ConnectUnix(socket, control ? SOCK_STREAM : SOCK_SEQPACKET);
  if (conn < 0) {
    Say("no connection");
    return 1;
  }
  std::vector<std::byte> bytes;
  if (control) {
    const std::string line = "{\"cmd\":\"status\"}\n";
    for (char ch : line) bytes.push_back(static_cast<std::byte>(ch));
  } else {
    auto encoded = EncodeRequest(Request(64, "linger"));
    if (!encoded.ok()) return 1;
    bytes = *encoded;
  }
  iovec iov{bytes.data(), bytes.size()};
  alignas(cmsghdr) unsigned char cmsg_buf[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = cmsg_buf;
  msg.msg_controllen = sizeof(cmsg_buf);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &tcp, sizeof(int));
  if (::sendmsg(conn, &msg, MSG_NOSIGNAL) < 0) {
    const int err = errno;
    // Refused: ours is the last reference, and closing it blocks for the linger (a thread's).
    std::thread([tcp] { ::close(tcp); }).detach();
    Say("fd refused " + std::to_string(err));
    // Without the descriptor, the request itself still goes (the arbiter answers it).
    (void)::send(conn, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  } else {
    // Sent: the copy in flight is a reference, so ours closes at once and the arbiter's close
    // of what it received is the last one, which blocks for the linger.
    ::close(tcp);
    Say("fd sent");
  }
  pollfd p{conn, POLLIN, 0};
  Say(::poll(&p, 1, 60'000) > 0 ? "reply" : "no reply");
  // Alive until killed: the TCP peer (our listener) must not reset the connection.
  SleepForever();
}

int HalfOpen(const std::string& socket, int count, int secs) {
  std::vector<int> conns;
  uint64_t reconnects = 0;
  const auto end = Clock::now() + seconds(secs);
  while (Clock::now() < end) {
    for (int& fd : conns) {
      if (Closed(fd)) {
        ::close(fd);
        fd = ConnectUnix(socket, SOCK_SEQPACKET);
        ++reconnects;
      }
    }
    while (static_cast<int>(conns.size()) < count) conns.push_back(ConnectUnix(socket, SOCK_SEQPACKET));
    std::this_thread::sleep_for(milliseconds(2));
  }
  Say("reconnects " + std::to_string(reconnects));
  return 0;
}

int DrainRing(const std::string& socket, int secs, int rate) {
  auto reg = Register(socket, Request(64, "drain-ring"), seconds(10));
  if (!reg.ok()) {
    Say("refused " + reg.status().ToString());
    return 1;
  }
  const int conn = reg->connection.get();
  const int doorbell = reg->doorbell.get();
  auto ch = ClientChannel::Attach(std::move(reg->channel), std::move(reg->doorbell));
  if (!ch.ok() || !ch->RequestToken().ok() || !ch->WaitForGrant(seconds(30)).ok()) return 1;
  (void)ch->BeginDraining();
  Say("draining");
  const auto end = Clock::now() + seconds(secs);
  const auto period = std::chrono::nanoseconds(1'000'000'000 / std::max(rate, 1));
  auto next = Clock::now();
  uint64_t rings = 0;
  const uint64_t one = 1;
  while (Clock::now() < end && !Closed(conn)) {
    if (::write(doorbell, &one, sizeof(one)) == sizeof(one)) ++rings;
    next += period;
    std::this_thread::sleep_until(next);
  }
  Say("rings " + std::to_string(rings));
  Say(Closed(conn) ? "closed" : "still connected");
  return 0;
}

int ForkHold(const std::string& socket) {
  auto reg = Register(socket, Request(64, "fork-hold"), seconds(10));
  if (!reg.ok()) {
    Say("refused " + reg.status().ToString());
    return 1;
  }
  auto ch = ClientChannel::Attach(std::move(reg->channel), std::move(reg->doorbell));
  if (!ch.ok() || !ch->RequestToken().ok() || !ch->WaitForGrant(seconds(30)).ok()) return 1;
  Say("granted");
  const pid_t child = ::fork();
  if (child == 0) {  // keeps the connection and the channel, holds the token, ignores everything
    for (;;) {
      ch->Heartbeat(MonotonicNowNs());
      std::this_thread::sleep_for(milliseconds(50));
    }
  }
  Say("child " + std::to_string(child));
  return 0;  // the parent exits: the registering process is gone
}

int RegisterMany(const std::string& socket, int count) {
  std::vector<Registration> kept;
  int refused = 0;
  std::string last;
  for (int i = 0; i < count; ++i) {
    auto reg = Register(socket, Request(16, "many" + std::to_string(i)), seconds(10));
    if (reg.ok()) {
      kept.push_back(std::move(*reg));
    } else {
      ++refused;
      last = reg.status().ToString();
    }
  }
  Say("accepted " + std::to_string(kept.size()) + " refused " + std::to_string(refused));
  Say("last " + last);
  SleepForever();
}

int Churn(const std::string& socket, int count) {
  int accepted = 0;
  int refused = 0;
  for (int i = 0; i < count; ++i) {
    auto reg = Register(socket, Request(16, "churn" + std::to_string(i)), seconds(10));
    if (!reg.ok()) {
      ++refused;
      continue;
    }
    ++accepted;
    (void)SendClientGoodbye(reg->connection.get(), "churn", seconds(1));
  }
  Say("churned " + std::to_string(accepted) + " refused " + std::to_string(refused));
  return 0;
}

int ResidentLie(const std::string& socket, uint64_t quota_mib, int count) {
  std::vector<Registration> kept;
  int accepted = 0;
  for (int i = 0; i < count; ++i) {
    RegisterRequest r = Request(quota_mib, "liar" + std::to_string(i));
    r.flags = kFlagReRegister | kFlagResident;
    r.previous_client_id = static_cast<uint32_t>(100 + i);
    r.current_gpu = 0;
    r.resident_bytes = quota_mib << 20;
    auto reg = Register(socket, r, seconds(10));
    if (reg.ok()) {
      ++accepted;
      kept.push_back(std::move(*reg));  // kept open, never read: orders are never acknowledged
    }
  }
  Say("accepted " + std::to_string(accepted) + " of " + std::to_string(count));
  SleepForever();
}

int UnenforceableLoop(const std::string& socket, int secs) {
  const auto end = Clock::now() + seconds(secs);
  uint64_t holds = 0;
  uint64_t refusals = 0;
  while (Clock::now() < end) {
    auto reg = Register(socket, Request(64, "unenforceable"), seconds(2));
    if (!reg.ok()) {
      ++refusals;
      std::this_thread::sleep_for(milliseconds(20));  // a shim's reconnect interval is 50 ms
      continue;
    }
    const int conn = reg->connection.get();
    auto ch = ClientChannel::Attach(std::move(reg->channel), std::move(reg->doorbell));
    if (!ch.ok() || !ch->RequestToken().ok()) continue;
    if (!ch->WaitForGrant(seconds(10)).ok()) continue;
    ++holds;
    while (!Closed(conn) && Clock::now() < end) std::this_thread::sleep_for(milliseconds(2));
  }
  Say("holds " + std::to_string(holds) + " refusals " + std::to_string(refusals));
  return 0;
}

int StoppedRegistrant(const std::string& socket, int count) {
  if (!gshare::fault::BecomeCudaProcess(0)) {
    Say("no CUDA");
    return 1;
  }
  std::vector<int> conns;
  for (int i = 0; i < count; ++i) {
    const int fd = ConnectUnix(socket, SOCK_SEQPACKET);
    RegisterRequest r = Request(64, "stopped" + std::to_string(i));
    r.flags = kFlagReRegister;
    r.previous_client_id = static_cast<uint32_t>(200 + i);
    auto bytes = EncodeRequest(r);
    if (fd < 0 || !bytes.ok() || !SendPacket(fd, *bytes, {}, seconds(5)).ok()) return 1;
    conns.push_back(fd);
  }
  Say("sent " + std::to_string(count));
  ::raise(SIGSTOP);
  SleepForever();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  std::map<std::string, std::string> f;
  for (int i = 2; i + 1 < argc; i += 2) f[argv[i]] = argv[i + 1];
  const std::string socket = f["--socket"];
  auto num = [&](const char* key, int def) {
    return f.count(key) != 0 ? std::atoi(f[key].c_str()) : def;
  };
  if (mode == "linger-fd") return LingerFd(socket, num("--linger-s", 30), num("--control", 0) == 1);
  if (mode == "half-open") return HalfOpen(socket, num("--count", 16), num("--seconds", 5));
  if (mode == "drain-ring") return DrainRing(socket, num("--seconds", 5), num("--rate", 5000));
  if (mode == "fork-hold") return ForkHold(socket);
  if (mode == "register-many") return RegisterMany(socket, num("--count", 10));
  if (mode == "churn") return Churn(socket, num("--count", 100));
  if (mode == "resident-lie" && num("--cuda", 0) == 1 && !gshare::fault::BecomeCudaProcess(0)) {
    Say("no CUDA");
    return 1;
  }
  if (mode == "resident-lie")
    return ResidentLie(socket, static_cast<uint64_t>(num("--quota-mib", 256)), num("--count", 3));
  if (mode == "unenforceable-loop") return UnenforceableLoop(socket, num("--seconds", 5));
  if (mode == "stopped-registrant") return StoppedRegistrant(socket, num("--count", 5));
  std::fprintf(stderr, "hostile_client: unknown mode '%s'\n", mode.c_str());
  return 2;
}
