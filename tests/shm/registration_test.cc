// Registration over a real Unix socket between two processes: fd passing, SO_PEERCRED,
// refusals, malformed requests, stale/live socket files, and the socket-path variable.
#include "gshare/shm/registration.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <csignal>
#include <cstring>

#include "gshare/shm/channel.h"
#include "gshare/shm/unix_socket.h"
#include "test_util.h"

namespace gshare::shm {
namespace {

using testing::ReadAll;
using testing::SpawnHelper;
using testing::TempDir;
using testing::WaitChild;
using namespace std::chrono_literals;

constexpr uint64_t kEpoch = 99;

// Serves one registration on `listener`: accepts, checks, replies with a fresh channel.
struct Served {
  RegistrationConnection conn;
  RegisterRequest request;
  ArbiterChannel channel;
};

Served ServeOne(const RegistrationListener& listener, uint32_t client_id) {
  Served s;
  auto conn = listener.Accept(30s);
  EXPECT_TRUE(conn.ok()) << conn.status().ToString();
  if (!conn.ok()) return s;
  s.conn = std::move(conn).value();
  auto req = s.conn.ReceiveRequest(30s);
  EXPECT_TRUE(req.ok()) << req.status().ToString();
  if (!req.ok()) return s;
  s.request = *req;
  auto ch = ArbiterChannel::Create(ChannelInit{client_id, 1, kEpoch, req->quota_bytes, 20'000'000, req->slo_ms});
  EXPECT_TRUE(ch.ok());
  s.channel = std::move(ch).value();
  const RegisterReply reply = testing::AcceptReply(client_id, 1, req->quota_bytes, kEpoch);
  EXPECT_TRUE(s.conn.Accept(reply, s.channel.channel_fd(), s.channel.doorbell_fd(), 5s).ok());
  s.channel.CloseChannelFd();
  return s;
}

TEST(RegistrationTest, TwoProcessesWithFdPassingAndPeerCred) {
  TempDir dir;
  const std::string path = dir.File("arbiter.sock");
  auto listener = RegistrationListener::Listen(path, 0666);
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();

  auto child = SpawnHelper({"register", path, "268435456", "50", "fn-a"});
  Served s = ServeOne(*listener, 7);
  ASSERT_TRUE(s.channel.layout() != nullptr);
  EXPECT_EQ(s.conn.peer().pid, child.pid);  // from the kernel, never from the message
  EXPECT_EQ(s.conn.peer().uid, ::getuid());
  EXPECT_EQ(s.conn.peer().gid, ::getgid());
  ASSERT_GE(s.conn.pidfd(), 0) << "SO_PEERPIDFD unavailable on this kernel";
  // The pidfd names the very process that connected.
  UniqueFd fdinfo(::open(("/proc/self/fdinfo/" + std::to_string(s.conn.pidfd())).c_str(), O_RDONLY | O_CLOEXEC));
  const std::string fdinfo_text = ReadAll(fdinfo.get());
  EXPECT_NE(fdinfo_text.find("Pid:\t" + std::to_string(child.pid) + "\n"), std::string::npos) << fdinfo_text;
  EXPECT_EQ(s.request.function_name, "fn-a");
  EXPECT_EQ(s.request.quota_bytes, 268435456U);

  // The child writes into the channel it received: the arbiter sees it through its mapping.
  ASSERT_TRUE(testing::WaitUntil([&] {
    auto v = s.channel.ReadClient(MonotonicNowNs());
    return v.ok() && v->generation == 1 && v->heartbeat_ns != 0;
  }));
  ASSERT_TRUE(s.conn.SendGoodbye("test over", 5s).ok());
  const std::string out = ReadAll(child.stdout_fd);
  ::close(child.stdout_fd);
  EXPECT_EQ(WaitChild(child.pid), 0) << out;
  EXPECT_NE(out.find("accepted id=7 gpu=1 header_id=7 channels=1"), std::string::npos) << out;
  EXPECT_NE(out.find("goodbye: test over"), std::string::npos) << out;
}

TEST(RegistrationTest, PeerCredentialsOfAnotherUid) {
  TempDir dir;
  const std::string path = dir.File("arbiter.sock");
  auto listener = RegistrationListener::Listen(path, 0666);
  ASSERT_TRUE(listener.ok());
  if (::getuid() != 0) GTEST_SKIP() << "needs root to start a child of another uid";
  auto child = SpawnHelper({"--uid", "65534", "register", path, "1048576", "10", "nobody-fn"});
  Served s = ServeOne(*listener, 8);
  EXPECT_EQ(s.conn.peer().uid, 65534U);
  EXPECT_EQ(s.conn.peer().pid, child.pid);
  ASSERT_TRUE(s.conn.SendGoodbye("bye", 5s).ok());
  const std::string out = ReadAll(child.stdout_fd);
  ::close(child.stdout_fd);
  EXPECT_EQ(WaitChild(child.pid), 0) << out;
  EXPECT_NE(out.find("uid=65534"), std::string::npos) << out;
}

// Liveness: the connection shows either side's death at once, with no timeout involved.
TEST(RegistrationTest, DeathOfEitherSideIsSeenThroughTheSocket) {
  TempDir dir;
  const std::string path = dir.File("arbiter.sock");
  auto listener = RegistrationListener::Listen(path, 0666);
  ASSERT_TRUE(listener.ok());
  {  // The client is killed: the arbiter's connection reports it closed.
    auto child = SpawnHelper({"register", path, "1048576", "10", "victim"});
    Served s = ServeOne(*listener, 1);
    ASSERT_TRUE(testing::WaitUntil([&] { return s.channel.ReadClient(MonotonicNowNs())->generation == 1; }));
    ::kill(child.pid, SIGKILL);
    EXPECT_EQ(WaitChild(child.pid), 128 + SIGKILL);
    ::close(child.stdout_fd);
    auto r = ReceivePacket(s.conn.fd(), 30s);
    EXPECT_EQ(r.status().code(), StatusCode::kClosed) << r.status().ToString();
  }
  {  // The arbiter goes away (its end of the connection closes): the client sees it.
    auto child = SpawnHelper({"register", path, "1048576", "10", "survivor"});
    {
      Served s = ServeOne(*listener, 2);
      ASSERT_TRUE(testing::WaitUntil([&] { return s.channel.ReadClient(MonotonicNowNs())->generation == 1; }));
    }  // connection and channel destroyed here
    const std::string out = ReadAll(child.stdout_fd);
    ::close(child.stdout_fd);
    EXPECT_EQ(WaitChild(child.pid), 2) << out;
    EXPECT_NE(out.find("goodbye: closed: peer closed the connection"), std::string::npos) << out;
  }
}

TEST(RegistrationTest, RefusalCarriesReason) {
  TempDir dir;
  const std::string path = dir.File("arbiter.sock");
  auto listener = RegistrationListener::Listen(path, 0666);
  ASSERT_TRUE(listener.ok());
  auto child = SpawnHelper({"register", path, "1048576", "10", "too-big"});
  auto conn = listener->Accept(30s);
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(conn->ReceiveRequest(30s).ok());
  ASSERT_TRUE(conn->Refuse("no GPU has 1 MiB free", kEpoch, 5s).ok());
  const std::string out = ReadAll(child.stdout_fd);
  ::close(child.stdout_fd);
  EXPECT_EQ(WaitChild(child.pid), 3) << out;
  EXPECT_NE(out.find("arbiter refused registration: no GPU has 1 MiB free"), std::string::npos) << out;
}

// Raw client socket that can send anything.
UniqueFd RawConnect(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

TEST(RegistrationTest, MalformedRequestsAreRejectedAndServingContinues) {
  TempDir dir;
  const std::string path = dir.File("arbiter.sock");
  auto listener = RegistrationListener::Listen(path, 0600);
  ASSERT_TRUE(listener.ok());

  auto good_bytes = *EncodeRequest(testing::SmallRequest());

  struct Case {
    std::vector<std::byte> bytes;
    StatusCode code;
  };
  std::vector<Case> cases;
  cases.push_back({std::vector<std::byte>(50, std::byte{0x41}), StatusCode::kMalformed});  // garbage
  auto v2 = good_bytes;
  v2[4] = std::byte{9};  // ABI version 9
  cases.push_back({v2, StatusCode::kVersionMismatch});
  auto absurd = good_bytes;
  std::memset(absurd.data() + offsetof(RegisterRequestWire, quota_bytes), 0xff, 8);
  cases.push_back({absurd, StatusCode::kMalformed});
  cases.push_back({std::vector<std::byte>(2000, std::byte{0}), StatusCode::kMalformed});  // too long
  for (const Case& c : cases) {
    UniqueFd raw = RawConnect(path);
    ASSERT_TRUE(SendPacket(raw.get(), c.bytes, {}, 5s).ok() ||
                c.bytes.size() > kMaxPacketBytes);  // oversize: SendPacket refuses; use send()
    if (c.bytes.size() > kMaxPacketBytes) {
      ASSERT_EQ(::send(raw.get(), c.bytes.data(), c.bytes.size(), 0), static_cast<ssize_t>(c.bytes.size()));
    }
    auto conn = listener->Accept(5s);
    ASSERT_TRUE(conn.ok());
    auto req = conn->ReceiveRequest(5s);
    EXPECT_EQ(req.status().code(), c.code) << req.status().ToString();
  }
  // A request with an fd attached: the kernel refuses to send it where the listener refuses
  // descriptors (SO_PASSRIGHTS, Linux >= 6.16); elsewhere it arrives and is malformed.
  {
    UniqueFd raw = RawConnect(path);
    const int fds[1] = {raw.get()};
    const Status sent = SendPacket(raw.get(), good_bytes, fds, 5s);
    if (listener->refuses_descriptors()) {
      EXPECT_FALSE(sent.ok());
      EXPECT_EQ(sent.sys_errno(), EPERM) << sent.ToString();
      auto conn = listener->Accept(5s);  // the connection itself was made: nothing arrived
      ASSERT_TRUE(conn.ok());
      raw.Reset();
      EXPECT_EQ(conn->ReceiveRequest(5s).status().code(), StatusCode::kClosed);
    } else {
      ASSERT_TRUE(sent.ok());
      auto conn = listener->Accept(5s);
      ASSERT_TRUE(conn.ok());
      std::vector<UniqueFd> carried;
      EXPECT_EQ(conn->ReceiveRequest(5s, &carried).status().code(), StatusCode::kMalformed);
      EXPECT_EQ(carried.size(), 1u);  // handed to the caller, not closed inside
    }
  }
  // A client that connects and dies is seen as closed at once.
  {
    UniqueFd raw = RawConnect(path);
    auto conn = listener->Accept(5s);
    ASSERT_TRUE(conn.ok());
    raw.Reset();
    EXPECT_EQ(conn->ReceiveRequest(5s).status().code(), StatusCode::kClosed);
  }
  // And the listener still serves a well-formed request.
  UniqueFd raw = RawConnect(path);
  ASSERT_TRUE(SendPacket(raw.get(), good_bytes, {}, 5s).ok());
  auto conn = listener->Accept(5s);
  ASSERT_TRUE(conn.ok());
  EXPECT_TRUE(conn->ReceiveRequest(5s).ok());
}

TEST(RegistrationTest, ClientSeesVersionMismatchAndMissingFds) {
  TempDir dir;
  const std::string path = dir.File("arbiter.sock");
  auto listener = RegistrationListener::Listen(path, 0600);
  ASSERT_TRUE(listener.ok());
  const RegisterRequest req = testing::SmallRequest();
  std::thread server([&] {
    for (int i = 0; i < 2; ++i) {
      auto conn = listener->Accept(30s);
      if (!conn.ok()) return;
      (void)conn->ReceiveRequest(30s);
      auto bytes = *EncodeReply(testing::AcceptReply(1, 0, 1 << 20, 1));
      if (i == 0) bytes[4] = std::byte{kWireAbiVersion + 1};  // arbiter speaks another ABI
      (void)SendPacket(conn->fd(), bytes, {}, 5s);  // and never attaches the fds
    }
  });
  auto r1 = Register(path, req, 30s);
  EXPECT_EQ(r1.status().code(), StatusCode::kVersionMismatch) << r1.status().ToString();
  auto r2 = Register(path, req, 30s);
  EXPECT_EQ(r2.status().code(), StatusCode::kMalformed) << r2.status().ToString();
  EXPECT_NE(r2.status().message().find("instead of 2"), std::string::npos);
  server.join();
}

TEST(RegistrationTest, SocketFileHandling) {
  TempDir dir;
  const std::string path = dir.File("arbiter.sock");
  const RegisterRequest req = testing::SmallRequest();
  // No arbiter: unavailable, quickly.
  EXPECT_EQ(Register(path, req, 5s).status().code(), StatusCode::kUnavailable);
  {
    auto l1 = RegistrationListener::Listen(path, 0600);
    ASSERT_TRUE(l1.ok());
    auto l2 = RegistrationListener::Listen(path, 0600);  // live one: refused
    EXPECT_EQ(l2.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(l2.status().message().find("already in use"), std::string::npos);
    // A connection nobody answers times out.
    EXPECT_EQ(Register(path, req, 50ms).status().code(), StatusCode::kTimeout);
  }
  EXPECT_FALSE(std::filesystem::exists(path));  // unlinked by the destructor
  // A stale socket file (its listener died without cleanup) is replaced.
  {
    UniqueFd stale(::socket(AF_UNIX, SOCK_SEQPACKET, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size());
    ASSERT_EQ(::bind(stale.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  }
  EXPECT_TRUE(RegistrationListener::Listen(path, 0600).ok());
  EXPECT_EQ(RegistrationListener::Listen(std::string(200, 'x'), 0600).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(RegistrationTest, SocketPathFromEnvironment) {
  ::unsetenv(kArbiterSocketEnv);
  EXPECT_EQ(ArbiterSocketPath(), "/run/gshare/arbiter.sock");
  ::setenv(kArbiterSocketEnv, "/tmp/x.sock", 1);
  EXPECT_EQ(ArbiterSocketPath(), "/tmp/x.sock");
  ::setenv(kArbiterSocketEnv, "", 1);
  EXPECT_EQ(ArbiterSocketPath(), "/run/gshare/arbiter.sock");
  ::unsetenv(kArbiterSocketEnv);
}

// ReceivePacket with `carried`: every descriptor a packet carries — also one that makes it
// malformed (too many) — is handed to the caller instead of being closed in the receiving call
// (closing a peer's descriptor can block: the arbiter closes them on its FdReaper's thread).
TEST(RegistrationTest, CarriedDescriptorsAreHandedToTheCaller) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd a(sv[0]);
  UniqueFd b(sv[1]);
  const std::vector<std::byte> bytes(8, std::byte{1});
  const int two[2] = {a.get(), b.get()};
  ASSERT_TRUE(SendPacket(a.get(), bytes, two, 5s).ok());
  std::vector<UniqueFd> carried;
  auto ok = ReceivePacket(b.get(), 5s, &carried);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE(ok->fds.empty());
  EXPECT_EQ(carried.size(), 2u);
  // Six descriptors (more than kMaxPacketFds): malformed, and all six are still handed over.
  std::vector<int> six(6, a.get());
  alignas(cmsghdr) unsigned char control[CMSG_SPACE(sizeof(int) * 6)] = {};
  iovec iov{const_cast<std::byte*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * 6);
  std::memcpy(CMSG_DATA(c), six.data(), sizeof(int) * 6);
  ASSERT_EQ(::sendmsg(a.get(), &msg, 0), static_cast<ssize_t>(bytes.size()));
  carried.clear();
  auto bad = ReceivePacket(b.get(), 5s, &carried);
  EXPECT_EQ(bad.status().code(), StatusCode::kMalformed);
  EXPECT_EQ(carried.size(), 6u);
}

// A listener that refuses descriptors makes the kernel refuse them in the sender, accepted
// connections included (SO_PASSRIGHTS; skipped on kernels without it).
TEST(RegistrationTest, ListenerRefusesDescriptorsWhereTheKernelCan) {
  TempDir dir;
  auto listener = RegistrationListener::Listen(dir.File("arbiter.sock"), 0600);
  ASSERT_TRUE(listener.ok());
  if (!listener->refuses_descriptors()) GTEST_SKIP() << "kernel without SO_PASSRIGHTS (< 6.16)";
  UniqueFd raw = RawConnect(dir.File("arbiter.sock"));
  auto conn = listener->Accept(5s);
  ASSERT_TRUE(conn.ok());
  const std::vector<std::byte> bytes(8, std::byte{1});
  const int one[1] = {raw.get()};
  const Status s = SendPacket(raw.get(), bytes, one, 5s);
  EXPECT_EQ(s.sys_errno(), EPERM) << s.ToString();
  EXPECT_TRUE(SendPacket(raw.get(), bytes, {}, 5s).ok());  // without one, served as ever
}

}  // namespace
}  // namespace gshare::shm
