// The event ring: ordering, wrap-around, loss detection, header checks, and a concurrent
// reader/writer in threads and in separate processes (records are never returned torn).
#include "gshare/shm/event_ring.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <thread>

#include "test_util.h"

namespace gshare::shm {
namespace {

// Record i carries a pattern a reader can check (as shm_test_helper ring-read does).
Event Pattern(uint64_t i) {
  Event e;
  e.timestamp_ns = i * 7;
  e.type = EventType::kGrant;
  e.client_id = static_cast<uint32_t>(i);
  e.gpu = 1;
  e.args = {i, ~i, 0, 0};
  return e;
}

bool Consistent(const Event& e) {
  return e.type == EventType::kGrant && e.args[0] == e.index && e.args[1] == ~e.index &&
         e.timestamp_ns == e.index * 7 && e.client_id == static_cast<uint32_t>(e.index);
}

UniqueFd DupFd(int fd) { return UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 0)); }

TEST(EventRingTest, ReadsInOrder) {
  auto w = EventRingWriter::CreateAnonymous(16, 3);
  ASSERT_TRUE(w.ok());
  auto r = EventRingReader::Attach(DupFd(w->fd()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->capacity(), 16U);
  EXPECT_EQ(r->writer_epoch(), 3U);
  std::vector<Event> out(32);
  EXPECT_EQ(r->Read(out), 0U);
  for (uint64_t i = 0; i < 5; ++i) w->Append(Pattern(i));
  ASSERT_EQ(r->Read(out), 5U);
  for (uint64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(out[i].index, i);
    EXPECT_TRUE(Consistent(out[i]));
  }
  EXPECT_EQ(r->Read(out), 0U);
  EXPECT_EQ(r->stats().lost, 0U);
  // A small output buffer reads in pieces.
  for (uint64_t i = 5; i < 9; ++i) w->Append(Pattern(i));
  std::vector<Event> two(2);
  EXPECT_EQ(r->Read(two), 2U);
  EXPECT_EQ(two[1].index, 6U);
  EXPECT_EQ(r->Read(out), 2U);
}

TEST(EventRingTest, WrapAroundAndLossDetection) {
  auto w = EventRingWriter::CreateAnonymous(8, 1);
  ASSERT_TRUE(w.ok());
  auto r = EventRingReader::Attach(DupFd(w->fd()));
  ASSERT_TRUE(r.ok());
  std::vector<Event> out(64);
  for (uint64_t i = 0; i < 3; ++i) w->Append(Pattern(i));
  ASSERT_EQ(r->Read(out), 3U);
  for (uint64_t i = 3; i < 23; ++i) w->Append(Pattern(i));  // 20 more into 8 slots
  const size_t n = r->Read(out);
  ASSERT_EQ(n, 8U);
  EXPECT_EQ(r->stats().lost, 12U);  // records 3..14 were overwritten
  EXPECT_EQ(out[0].index, 15U);
  EXPECT_EQ(out[7].index, 22U);
  for (size_t i = 0; i < n; ++i) EXPECT_TRUE(Consistent(out[i]));
  EXPECT_EQ(r->stats().read + r->stats().lost, 23U);

  // A late reader starts at the oldest record still present; SeekToNewest skips everything.
  auto late = EventRingReader::Attach(DupFd(w->fd()));
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(late->Read(out), 8U);
  EXPECT_EQ(out[0].index, 15U);
  late->SeekToNewest();
  EXPECT_EQ(late->Read(out), 0U);
}

TEST(EventRingTest, HeaderChecks) {
  EXPECT_EQ(EventRingWriter::CreateAnonymous(12, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EventRingWriter::CreateAnonymous(0, 1).status().code(), StatusCode::kInvalidArgument);
  testing::TempDir dir;
  const std::string path = dir.File("events");
  {
    auto w = EventRingWriter::CreateFile(path, 64, 9, 0640);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    w->Append(Pattern(0));
    struct stat st{};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0640U);
    auto r = EventRingReader::Open(path);
    ASSERT_TRUE(r.ok());
    std::vector<Event> out(4);
    EXPECT_EQ(r->Read(out), 1U);
  }
  // Corrupt copies: bad magic, bad version, size mismatch.
  const auto corrupt = [&](off_t offset, uint32_t value) {
    const std::string copy = dir.File("copy");
    std::filesystem::copy_file(path, copy, std::filesystem::copy_options::overwrite_existing);
    UniqueFd fd(::open(copy.c_str(), O_RDWR | O_CLOEXEC));
    EXPECT_EQ(::pwrite(fd.get(), &value, sizeof(value), offset), 4);
    return EventRingReader::Open(copy).status();
  };
  EXPECT_EQ(corrupt(0, 1).code(), StatusCode::kMalformed);
  EXPECT_EQ(corrupt(8, kEventRingAbiVersion + 1).code(), StatusCode::kVersionMismatch);
  EXPECT_EQ(corrupt(16, 128).code(), StatusCode::kMalformed);  // capacity vs file size
  EXPECT_EQ(EventRingReader::Open(dir.File("missing")).status().code(), StatusCode::kUnavailable);
}

TEST(EventRingTest, ConcurrentReaderThread) {
  constexpr uint64_t kCount = 200000;
  auto w = EventRingWriter::CreateAnonymous(64, 1);
  ASSERT_TRUE(w.ok());
  auto r = EventRingReader::Attach(DupFd(w->fd()));
  ASSERT_TRUE(r.ok());
  std::atomic<bool> stop{false};
  uint64_t bad = 0, last = 0, seen = 0;
  std::thread reader([&] {
    std::vector<Event> out(16);
    while (r->stats().read + r->stats().lost < kCount) {
      const size_t n = r->Read(out);
      for (size_t i = 0; i < n; ++i) {
        if (!Consistent(out[i]) || (seen > 0 && out[i].index <= last)) ++bad;
        last = out[i].index;
        ++seen;
      }
      if (stop.load() && n == 0 && r->stats().read + r->stats().lost < kCount) {
        // Writer done: anything not read yet is still there or was counted as lost.
        if (r->Read(out) == 0) break;
      }
    }
  });
  for (uint64_t i = 0; i < kCount; ++i) w->Append(Pattern(i));
  stop = true;
  reader.join();
  EXPECT_EQ(bad, 0U);
  EXPECT_EQ(r->stats().read + r->stats().lost, kCount);
  EXPECT_GT(r->stats().read, 0U);
}

TEST(EventRingTest, ConcurrentReaderProcess) {
  constexpr uint64_t kCount = 2'000'000;
  auto w = EventRingWriter::CreateAnonymous(128, 1);
  ASSERT_TRUE(w.ok());
  const int fd = w->fd();
  auto child = testing::SpawnHelper({"ring-read", std::to_string(fd), std::to_string(kCount), "60000"}, {fd});
  std::string out;
  char c = 0;
  while (out.find("ready\n") == std::string::npos && ::read(child.stdout_fd, &c, 1) == 1) out += c;
  for (uint64_t i = 0; i < kCount; ++i) w->Append(Pattern(i));
  out += testing::ReadAll(child.stdout_fd);
  ::close(child.stdout_fd);
  EXPECT_EQ(testing::WaitChild(child.pid), 0) << out;
  EXPECT_NE(out.find("bad=0"), std::string::npos) << out;
}

}  // namespace
}  // namespace gshare::shm
