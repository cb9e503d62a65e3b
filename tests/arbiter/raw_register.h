// A registration written by hand: `bytes` sent as one packet on a fresh connection to the
// arbiter's socket, and its reply decoded — what a tenant that skips the shim can send.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "gshare/shm/unix_socket.h"
#include "gshare/shm/wire.h"

namespace gshare::arbiter::testing {

inline shm::Result<shm::RegisterReply> RawRegister(const std::string& socket,
                                                   const std::vector<std::byte>& bytes) {
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket.c_str(), sizeof(addr.sun_path) - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return shm::Status(shm::StatusCode::kUnavailable, "connect");
  }
  shm::UniqueFd owned(fd);
  if (auto s = shm::SendPacket(fd, bytes, {}, std::chrono::seconds(5)); !s.ok()) return s;
  auto packet = shm::ReceivePacket(fd, std::chrono::seconds(5));
  if (!packet.ok()) return packet.status();
  return shm::DecodeReply(packet->bytes);
}

}  // namespace gshare::arbiter::testing
