// isolation_helper: the processes of tests/isolation (tenants and attackers). Usage:
//   isolation_helper [--uid N [--groups G,G...]] COMMAND ARGS...
// --uid N drops every privilege first (setgroups(the --groups list, else none), setresgid(N),
// setresuid(N)), so the test (root) can start a process of another uid, with supplementary
// groups if asked. Commands:
//   register SOCKET            registers with the arbiter; exit 0 accepted, 3 refused,
//                              4 unavailable (no arbiter), 6 permission denied, 5 other error
//   hold-registration SOCKET   registers, prints "fd=<channel fd> seals=<F_GET_SEALS>
//                              truncate_errno=<errno of ftruncate on the channel>" and waits
//                              for stdin to close
//   try-open PATH...           exit 0 if every open(O_RDONLY) fails, 1 if any succeeds
//   device-write MIB PATTERN   allocates MIB MiB of device memory, fills it with the 32-bit
//                              PATTERN (hex), synchronises, frees it and exits
//   device-read MIB PATTERN    allocates MIB MiB, copies it to the host, prints
//                              "pattern_words=N nonzero_bytes=M"; exit 0 iff N == 0
//   hold-device MIB PATTERN    allocates and fills like device-write, prints "ready", then
//                              waits for stdin to close (the test swaps it out meanwhile)
//   control SOCKET LINE        sends LINE to a shim's control socket and prints the reply line;
//                              exit 0 replied, 6 connect: permission denied, 5 other error
//   listen SOCKET stream|seqpacket
//                              binds and listens at SOCKET (an impostor of the arbiter's
//                              sockets), prints "listening", waits for stdin to close
// Every failure prints one line on stderr saying what failed.
#include <cuda.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "gshare/shm/registration.h"

namespace {

using namespace std::chrono_literals;

int DropTo(unsigned uid, const std::vector<gid_t>& groups) {
  if (::setgroups(groups.size(), groups.data()) != 0 || ::setresgid(uid, uid, uid) != 0 ||
      ::setresuid(uid, uid, uid) != 0) {
    std::fprintf(stderr, "cannot become uid %u: %s\n", uid, std::strerror(errno));
    return 1;
  }
  return 0;
}

void WaitForStdinClose() {
  char buf[64];
  while (::read(0, buf, sizeof buf) > 0) {
  }
}

gshare::shm::RegisterRequest Request() {
  gshare::shm::RegisterRequest r;
  r.quota_bytes = 64ULL << 20;
  r.slo_ms = 100;
  r.function_name = "isolation";
  return r;
}

int Register(const std::string& socket, bool hold) {
  auto reg = gshare::shm::Register(socket, Request(), 20s);
  if (!reg.ok()) {
    std::printf("%s\n", reg.status().ToString().c_str());
    std::fflush(stdout);
    switch (reg.status().code()) {
      case gshare::shm::StatusCode::kRefused: return 3;
      case gshare::shm::StatusCode::kUnavailable: return 4;
      case gshare::shm::StatusCode::kPermissionDenied: return 6;
      default: return 5;
    }
  }
  if (!hold) {
    std::printf("accepted id=%u\n", reg->reply.client_id);
    return 0;
  }
  const int fd = reg->channel.get();
  const int seals = ::fcntl(fd, F_GET_SEALS);
  const int truncated = ::ftruncate(fd, 1 << 20);
  std::printf("fd=%d seals=%d truncate_errno=%d\n", fd, seals, truncated == 0 ? 0 : errno);
  std::fflush(stdout);
  WaitForStdinClose();
  return 0;
}

int TryOpen(int argc, char** argv) {
  int opened = 0;
  for (int i = 0; i < argc; ++i) {
    const int fd = ::open(argv[i], O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      std::printf("OPENED %s\n", argv[i]);
      ::close(fd);
      ++opened;
    } else {
      std::printf("denied %s: %s\n", argv[i], std::strerror(errno));
    }
  }
  return opened == 0 ? 0 : 1;
}

// "G,G,..." -> gids.
std::vector<gid_t> ParseGroups(const std::string& list) {
  std::vector<gid_t> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(static_cast<gid_t>(std::stoul(item)));
  return out;
}

int Control(const std::string& path, const std::string& line) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    std::printf("connect: %s\n", std::strerror(err));
    ::close(fd);
    return err == EACCES ? 6 : 5;
  }
  const std::string request = line + "\n";
  std::string reply;
  // A server that refuses us may reply and close before reading: no SIGPIPE, read the reply.
  (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  char ch = 0;
  while (::read(fd, &ch, 1) == 1 && ch != '\n') reply.push_back(ch);
  ::close(fd);
  std::printf("reply: %s\n", reply.c_str());
  return reply.empty() ? 5 : 0;
}

#define CU_OR_FAIL(call)                                                  \
  do {                                                                    \
    if (CUresult r_ = (call); r_ != CUDA_SUCCESS) {                       \
      std::fprintf(stderr, "%s failed: CUresult %d\n", #call, int{r_});   \
      return 2;                                                           \
    }                                                                     \
  } while (0)

int Device(const std::string& command, size_t mib, uint32_t pattern) {
  CU_OR_FAIL(cuInit(0));
  CUdevice dev = 0;
  CU_OR_FAIL(cuDeviceGet(&dev, 0));
  CUcontext ctx = nullptr;
  CU_OR_FAIL(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU_OR_FAIL(cuCtxSetCurrent(ctx));
  const size_t bytes = mib << 20;
  CUdeviceptr ptr = 0;
  CU_OR_FAIL(cuMemAlloc(&ptr, bytes));
  if (command == "device-read") {
    std::vector<uint32_t> host(bytes / 4);
    CU_OR_FAIL(cuMemcpyDtoH(host.data(), ptr, bytes));
    size_t pattern_words = 0;
    size_t nonzero = 0;
    for (uint32_t w : host) {
      pattern_words += w == pattern;
      for (int b = 0; b < 4; ++b) nonzero += ((w >> (8 * b)) & 0xFF) != 0;
    }
    std::printf("pattern_words=%zu nonzero_bytes=%zu\n", pattern_words, nonzero);
    CU_OR_FAIL(cuMemFree(ptr));
    return pattern_words == 0 ? 0 : 1;
  }
  CU_OR_FAIL(cuMemsetD32(ptr, pattern, bytes / 4));
  CU_OR_FAIL(cuCtxSynchronize());
  if (command == "hold-device") {
    std::printf("ready\n");
    std::fflush(stdout);
    WaitForStdinClose();
    // Touch the data again (a swapped-out vGPU swaps back in) and check it survived.
    std::vector<uint32_t> host(bytes / 4);
    CU_OR_FAIL(cuMemcpyDtoH(host.data(), ptr, bytes));
    for (uint32_t w : host)
      if (w != pattern) {
        std::fprintf(stderr, "data changed across the swap\n");
        return 1;
      }
  }
  CU_OR_FAIL(cuMemFree(ptr));
  return 0;
}

int Listen(const std::string& path, const std::string& type) {
  const int fd = ::socket(AF_UNIX, (type == "stream" ? SOCK_STREAM : SOCK_SEQPACKET) | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd, 8) != 0) {
    std::fprintf(stderr, "listen %s: %s\n", path.c_str(), std::strerror(errno));
    return 5;
  }
  std::printf("listening\n");
  std::fflush(stdout);
  WaitForStdinClose();
  ::unlink(path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int i = 1;
  if (i + 1 < argc && std::strcmp(argv[i], "--uid") == 0) {
    const auto uid = static_cast<unsigned>(std::strtoul(argv[i + 1], nullptr, 10));
    i += 2;
    std::vector<gid_t> groups;
    if (i + 1 < argc && std::strcmp(argv[i], "--groups") == 0) {
      groups = ParseGroups(argv[i + 1]);
      i += 2;
    }
    if (DropTo(uid, groups) != 0) return 2;
  }
  if (i >= argc) {
    std::fprintf(stderr, "usage: isolation_helper [--uid N] COMMAND ARGS...\n");
    return 2;
  }
  const std::string command = argv[i];
  const int rest = argc - i - 1;
  char** args = argv + i + 1;
  if (command == "register" && rest == 1) return Register(args[0], false);
  if (command == "hold-registration" && rest == 1) return Register(args[0], true);
  if (command == "try-open" && rest >= 1) return TryOpen(rest, args);
  if (command == "control" && rest == 2) return Control(args[0], args[1]);
  if (command == "listen" && rest == 2) return Listen(args[0], args[1]);
  if ((command == "device-write" || command == "device-read" || command == "hold-device") &&
      rest == 2) {
    return Device(command, std::strtoul(args[0], nullptr, 10),
                  static_cast<uint32_t>(std::strtoul(args[1], nullptr, 16)));
  }
  std::fprintf(stderr, "isolation_helper: unknown command or arguments: %s\n", command.c_str());
  return 2;
}
