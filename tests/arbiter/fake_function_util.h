// Helpers shared by the multi-process tests that run arbiter_fake_function against the real
// gshare-arbiter: the shared "someone is submitting" page, starting a fake function, reading
// the event ring the arbiter wrote.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gshare/shm/event_ring.h"
#include "test_util.h"

namespace gshare::arbiter::testing {

// A shared page holding the "someone is submitting" counter the fake functions check.
inline std::string MakeSharedFile(const TempDir& dir) {
  const std::string path = dir / "shared";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::ftruncate(fd, 4096), 0);
  ::close(fd);
  return path;
}

struct Function {
  pid_t pid = -1;
  std::string out;
};

// Spawns arbiter_fake_function (FAKE_FUNCTION_BIN) registered as `name` with `args`.
inline Function StartFunction(const TempDir& dir, const ArbiterProcess& arb,
                              const std::string& name, std::vector<std::string> args) {
  Function f;
  f.out = dir / (name + ".out");
  std::vector<std::string> argv = {FAKE_FUNCTION_BIN, "--socket", arb.socket(), "--name", name};
  argv.insert(argv.end(), args.begin(), args.end());
  f.pid = Spawn(argv, f.out, dir / (name + ".err"));
  return f;
}

// Reads every event of a ring file.
inline std::vector<shm::Event> ReadEvents(const std::string& path) {
  std::vector<shm::Event> all;
  auto reader = shm::EventRingReader::Open(path);
  if (!reader.ok()) return all;
  reader->SeekToOldest();
  shm::Event buf[256];
  for (;;) {
    const size_t n = reader->Read(buf);
    if (n == 0) break;
    all.insert(all.end(), buf, buf + n);
  }
  return all;
}

}  // namespace gshare::arbiter::testing
