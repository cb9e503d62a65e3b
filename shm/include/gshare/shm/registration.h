// Registration over the arbiter's Unix socket (SOCK_SEQPACKET), both sides.
//
// Client (the shim): Register() connects, sends a RegisterRequest and waits for the reply; if
// accepted it returns the connection (kept open for the client's whole life: it is how the
// arbiter sees the client die, and how the client sees the arbiter die) plus the channel memfd
// and the doorbell eventfd passed with SCM_RIGHTS.
//
// Server (the arbiter): RegistrationListener binds and listens; Accept() yields a
// RegistrationConnection whose peer pid/uid/gid come from the kernel (SO_PEERCRED) and, where
// the kernel supports SO_PEERPIDFD, a pidfd that stays bound to that process (so PID reuse
// cannot confuse the arbiter). ReceiveRequest() decodes strictly; Accept()/Refuse() reply.
//
// All sockets are non-blocking and close-on-exec. Thread-safety: each object is used by one
// thread at a time. Nothing here logs: errors come back as Status.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "gshare/shm/status.h"
#include "gshare/shm/unique_fd.h"
#include "gshare/shm/wire.h"

namespace gshare::shm {

inline constexpr char kDefaultArbiterSocket[] = "/run/gshare/arbiter.sock";
inline constexpr char kArbiterSocketEnv[] = "GSHARE_ARBITER_SOCKET";

// $GSHARE_ARBITER_SOCKET if set and non-empty, else kDefaultArbiterSocket.
std::string ArbiterSocketPath();

// ---- client side ----

struct Registration {
  RegisterReply reply;  // accepted == true
  UniqueFd connection;  // the registration socket; keep it open (liveness)
  UniqueFd channel;     // memfd of this client's channel (ChannelSegment::Attach)
  UniqueFd doorbell;    // eventfd to ring the arbiter (Doorbell)
};

// Connects to `socket_path`, registers and waits for the reply, all within `timeout`.
// Errors: kUnavailable (no arbiter there), kRefused (message = the arbiter's reason),
// kVersionMismatch, kMalformed (bad reply), kTimeout, kClosed.
Result<Registration> Register(const std::string& socket_path, const RegisterRequest& request,
                              std::chrono::nanoseconds timeout);

// Asks the arbiter at `socket_path` which MPS share a function described by `query` would get
// (docs/protocol.md, "Share query"): connect, query, answer, close, all within `timeout`.
// Errors: kUnavailable (no arbiter there, or it is shutting down), kRefused (its intake refused
// the connection; message = the reason), kVersionMismatch, kMalformed (a bad answer, naming the
// problem), kTimeout, kClosed.
Result<ShareAnswer> QueryShare(const std::string& socket_path, const ShareQuery& query,
                               std::chrono::nanoseconds timeout);

// Waits up to `timeout` for a message from the arbiter on a registered connection. Returns the
// Goodbye the arbiter sent (e.g. on SIGTERM); kClosed when the arbiter died; kTimeout if
// nothing came.
Result<Goodbye> ReceiveGoodbye(int connection_fd, std::chrono::nanoseconds timeout);

// Tells the arbiter this client is leaving cleanly (the process exits normally): the arbiter
// unregisters it with reason 0 instead of counting a client death. Waits at most `timeout` for
// the socket to take the message. `reason`: printable, < kReasonSize bytes.
Status SendClientGoodbye(int connection_fd, const std::string& reason,
                         std::chrono::nanoseconds timeout);

// ---- server side ----

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

class RegistrationConnection {
 public:
  RegistrationConnection() = default;
  RegistrationConnection(UniqueFd fd, PeerCredentials peer, UniqueFd pidfd)
      : fd_(std::move(fd)), pidfd_(std::move(pidfd)), peer_(peer) {}

  // The kernel's view of the peer at connect() time; never taken from a message.
  const PeerCredentials& peer() const { return peer_; }
  // pidfd of the peer (SO_PEERPIDFD), or -1 where the kernel lacks it.
  int pidfd() const { return pidfd_.get(); }
  // The connection socket: poll it for EPOLLIN/EPOLLHUP to see the client die.
  int fd() const { return fd_.get(); }

  // Waits for and strictly decodes the client's RegisterRequest. A packet carrying fds is
  // malformed (clients never send fds); with `carried`, those fds are moved there instead of
  // closed here (closing a peer's descriptor can block: see ReceivePacket).
  Result<RegisterRequest> ReceiveRequest(std::chrono::nanoseconds timeout,
                                         std::vector<UniqueFd>* carried = nullptr) const;
  // The connection's first message: a RegisterRequest or a ShareQuery (exactly one is set),
  // strictly decoded; the same rules on descriptors as ReceiveRequest.
  struct Opening {
    std::optional<RegisterRequest> request;
    std::optional<ShareQuery> query;
  };
  Result<Opening> ReceiveOpening(std::chrono::nanoseconds timeout,
                                 std::vector<UniqueFd>* carried = nullptr) const;
  // Answers a share query (no descriptors).
  Status Answer(const ShareAnswer& answer, std::chrono::nanoseconds timeout) const;
  // Sends an accepting reply with the channel memfd and doorbell eventfd attached (the fds stay
  // owned by the caller; the kernel duplicates them into the client). REQUIRES: reply.accepted.
  Status Accept(const RegisterReply& reply, int channel_fd, int doorbell_fd,
                std::chrono::nanoseconds timeout) const;
  // Sends a refusal with `reason` (non-empty, printable, < kReasonSize bytes).
  Status Refuse(const std::string& reason, uint64_t arbiter_epoch,
                std::chrono::nanoseconds timeout) const;
  Status SendGoodbye(const std::string& reason, std::chrono::nanoseconds timeout) const;

 private:
  UniqueFd fd_;
  UniqueFd pidfd_;
  PeerCredentials peer_;
};

class RegistrationListener {
 public:
  RegistrationListener() = default;
  ~RegistrationListener();
  RegistrationListener(RegistrationListener&&) noexcept;
  RegistrationListener& operator=(RegistrationListener&&) noexcept;
  RegistrationListener(const RegistrationListener&) = delete;
  RegistrationListener& operator=(const RegistrationListener&) = delete;

  // Binds `path` (its directory must exist, and be one no other uid can swap files in) and
  // listens. A stale socket file nobody listens on is replaced; a live one is kUnavailable,
  // naming the uid that owns it (another uid's is reported as such and never replaced). The
  // socket file is created with `mode` (e.g. 0666 so functions of every uid can register),
  // set before bind, never by chmod on the path (shm/socket_file.h). The file is unlinked on
  // destruction if it is still the one this listener created.
  static Result<RegistrationListener> Listen(const std::string& path, mode_t mode);

  // Accepts one pending connection, waiting up to `timeout` (0: do not wait; kTimeout if
  // none is pending).
  Result<RegistrationConnection> Accept(std::chrono::nanoseconds timeout) const;

  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }
  // Whether the kernel refuses descriptors sent to this socket and its connections
  // (RefuseDescriptors: SO_PASSRIGHTS, Linux >= 6.16).
  bool refuses_descriptors() const { return refuses_descriptors_; }

 private:
  UniqueFd fd_;
  std::string path_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  bool refuses_descriptors_ = false;
};

}  // namespace gshare::shm
