// Isolation of channels: a registered client receives only its own channel fd; a process of
// another uid cannot reach the arbiter's channel memfd through /proc/<arbiter>/fd or
// /proc/<arbiter>/map_files, nor a trace ring file created owner-only.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gshare/shm/channel.h"
#include "gshare/shm/event_ring.h"
#include "gshare/shm/registration.h"
#include "test_util.h"

namespace gshare::shm {
namespace {

using namespace std::chrono_literals;

// Two clients register with one arbiter; each sees exactly one channel fd, its own.
TEST(SecurityTest, EachClientReceivesOnlyItsOwnChannel) {
  testing::TempDir dir;
  const std::string path = dir.File("arbiter.sock");
  auto listener = RegistrationListener::Listen(path, 0666);
  ASSERT_TRUE(listener.ok());
  std::vector<testing::Child> children;
  std::vector<RegistrationConnection> conns;
  std::vector<ArbiterChannel> channels;  // the arbiter keeps both channels open meanwhile
  for (uint32_t id = 1; id <= 2; ++id) {
    children.push_back(testing::SpawnHelper({"register", path, "1048576", "10", "fn" + std::to_string(id)}));
    auto conn = listener->Accept(30s);
    ASSERT_TRUE(conn.ok());
    auto req = conn->ReceiveRequest(30s);
    ASSERT_TRUE(req.ok());
    auto ch = ArbiterChannel::Create(ChannelInit{id, 0, 1, req->quota_bytes, 20'000'000, 10});
    ASSERT_TRUE(ch.ok());
    const RegisterReply reply = testing::AcceptReply(id, 0, req->quota_bytes, 1);
    ASSERT_TRUE(conn->Accept(reply, ch->channel_fd(), ch->doorbell_fd(), 5s).ok());
    conns.push_back(std::move(conn).value());
    channels.push_back(std::move(ch).value());
  }
  for (size_t i = 0; i < 2; ++i) {
    // Wait for each client's heartbeat before saying goodbye (it has counted its fds by then).
    ASSERT_TRUE(testing::WaitUntil([&] { return channels[i].ReadClient(MonotonicNowNs())->generation == 1; }));
    ASSERT_TRUE(conns[i].SendGoodbye("done", 5s).ok());
    const std::string out = testing::ReadAll(children[i].stdout_fd);
    ::close(children[i].stdout_fd);
    EXPECT_EQ(testing::WaitChild(children[i].pid), 0) << out;
    const std::string id = std::to_string(i + 1);
    EXPECT_NE(out.find("accepted id=" + id + " gpu=0 header_id=" + id + " channels=1"), std::string::npos) << out;
  }
}

TEST(SecurityTest, OtherUidCannotOpenChannelThroughProc) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root to start a child of another uid";
  auto ch = ArbiterChannel::Create(ChannelInit{1, 0, 1, 1 << 20, 20'000'000, 10});
  ASSERT_TRUE(ch.ok());
  const std::string self = std::to_string(::getpid());
  const std::string fd_path = "/proc/" + self + "/fd/" + std::to_string(ch->channel_fd());
  // Sanity: the path works for us (so a refusal below is the uid check, not a wrong path).
  {
    UniqueFd mine(::open(fd_path.c_str(), O_RDWR | O_CLOEXEC));
    ASSERT_TRUE(mine.valid()) << fd_path;
  }
  auto [code, out] = testing::RunHelper({"--uid", "65534", "try-open", fd_path});
  EXPECT_EQ(code, 0) << out;
  // The mapping's map_files entry (needs CAP_SYS_ADMIN) is closed to it as well.
  char name[64];
  const auto addr = reinterpret_cast<uintptr_t>(ch->layout());
  std::snprintf(name, sizeof(name), "%lx-%lx", static_cast<unsigned long>(addr),
                static_cast<unsigned long>(addr + kChannelSegmentSize));
  const std::string map_path = "/proc/" + self + "/map_files/" + name;
  ASSERT_EQ(::access(map_path.c_str(), F_OK), 0) << map_path;
  auto [code2, out2] = testing::RunHelper({"--uid", "65534", "try-open", map_path});
  EXPECT_EQ(code2, 0) << out2;
  // And the same uid as the arbiter could: run the arbiter as its own uid (docs/protocol.md).
  auto [code3, out3] = testing::RunHelper({"try-open", fd_path});
  EXPECT_EQ(code3, 1) << out3;
}

TEST(SecurityTest, TraceRingFileIsOwnerOnly) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root to start a child of another uid";
  testing::TempDir dir;
  const std::string path = dir.File("events");
  auto w = EventRingWriter::CreateFile(path, 16, 1, 0600);
  ASSERT_TRUE(w.ok());
  auto [code, out] = testing::RunHelper({"--uid", "65534", "try-open", path});
  EXPECT_EQ(code, 0) << out;
}

}  // namespace
}  // namespace gshare::shm
