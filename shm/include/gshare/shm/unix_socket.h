// Packet I/O on SOCK_SEQPACKET Unix sockets with file-descriptor passing (SCM_RIGHTS) and
// deadlines. Used by both sides of registration; sockets are expected to be non-blocking
// (waits use poll). Received fds are close-on-exec (MSG_CMSG_CLOEXEC). A packet larger than
// the receive buffer or carrying more fds than allowed is rejected (and its fds closed), never
// silently cut. Thread-safety: one thread per socket direction at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "gshare/shm/status.h"
#include "gshare/shm/unique_fd.h"

namespace gshare::shm {

inline constexpr size_t kMaxPacketBytes = 1024;
inline constexpr size_t kMaxPacketFds = 4;

struct Packet {
  std::vector<std::byte> bytes;
  std::vector<UniqueFd> fds;
};

// Sends one packet with `fds` attached. kTimeout if the socket stays full past `timeout`,
// kClosed if the peer is gone.
Status SendPacket(int socket_fd, std::span<const std::byte> bytes, std::span<const int> fds,
                  std::chrono::nanoseconds timeout);

// Receives one packet. kClosed on orderly EOF, kTimeout if nothing arrives in `timeout`
// (zero: do not wait), kMalformed if the packet is too long or carries too many fds.
// `carried`: when given, every descriptor the packet carried is moved there, on success and on
// every error alike, instead of being closed here — closing a descriptor a peer chose can block
// (a lingering TCP socket), so a server hands them to a thread that may block (the arbiter's
// FdReaper). Room is made for as many descriptors as the kernel lets one message carry, so none
// is ever dropped (and closed) inside recvmsg itself.
Result<Packet> ReceivePacket(int socket_fd, std::chrono::nanoseconds timeout,
                             std::vector<UniqueFd>* carried = nullptr);

// Makes the listening or connected Unix socket `fd` refuse descriptors: a peer's sendmsg with
// SCM_RIGHTS then fails (EPERM) and nothing it chose ever enters this process. Sockets accepted
// from a listener inherit it. SO_PASSRIGHTS needs Linux >= 6.16: kUnavailable on older kernels
// (ENOPROTOOPT), where received descriptors must be closed where blocking is harmless.
Status RefuseDescriptors(int fd);

// Waits until `fd` is ready for `events` (POLLIN/POLLOUT) or the timeout passes
// (kTimeout). EINTR restarts with the remaining time.
Status WaitFd(int fd, short events, std::chrono::nanoseconds timeout);

// Fills a sockaddr_un path; kInvalidArgument if empty or longer than sun_path allows.
Status CheckSocketPath(const std::string& path);

}  // namespace gshare::shm
