// Listening Unix socket files: the directory check, the live/stale/impostor check of what is
// at the path, and the bind that creates the file with its mode (socket_file.h).
#include "gshare/shm/socket_file.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "gshare/shm/unique_fd.h"
#include "gshare/shm/unix_socket.h"

namespace gshare::shm {
namespace {

std::string DirectoryOf(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string Octal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// What the listener at `path` is, for the message: "owned by uid U, listened on by pid P
// (uid V)". `probe` is the connected probe (or -1 when the connect did not complete).
std::string DescribeListener(const struct stat& st, int probe) {
  std::string s = "a live socket owned by uid " + std::to_string(st.st_uid);
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (probe >= 0 && ::getsockopt(probe, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
      len == sizeof(cred) && cred.pid > 0)
    s += ", listened on by pid " + std::to_string(cred.pid) + " (uid " + std::to_string(cred.uid) + ")";
  return s;
}

}  // namespace

Status CheckSafeDirectory(const std::string& path) {
  const std::string dir = DirectoryOf(path);
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0) return Status::FromErrno("directory '" + dir + "'", errno);
  if (!S_ISDIR(st.st_mode))
    return Status(StatusCode::kInvalidArgument, "'" + dir + "' is not a directory");
  const uid_t self = ::geteuid();
  if (st.st_uid != 0 && st.st_uid != self) {
    return Status(StatusCode::kPermissionDenied,
                  "directory '" + dir + "' is owned by uid " + std::to_string(st.st_uid) +
                      ", who could replace files there; use a directory owned by root or "
                      "uid " + std::to_string(self));
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    const char* who = (st.st_mode & S_IWOTH) != 0 ? "every uid" : "its group";
    return Status(StatusCode::kPermissionDenied,
                  "directory '" + dir + "' (mode " + Octal(st.st_mode) + ") is writable by " + who +
                      " without the sticky bit, so another uid could rename its own file over "
                      "ours; remove the write bit (chmod go-w) or set the sticky bit");
  }
  return {};
}

Status PrepareSocketPath(const std::string& path, int type) {
  if (Status s = CheckSocketPath(path); !s.ok()) return s;
  if (Status s = CheckSafeDirectory(path); !s.ok()) return s;
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};
    return Status::FromErrno("stat '" + path + "'", errno);
  }
  if (!S_ISSOCK(st.st_mode))
    return Status(StatusCode::kInvalidArgument, "'" + path + "' exists and is not a socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  // Non-blocking: a listener that never accepts (full backlog) must not stall the start.
  UniqueFd probe(::socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!probe) return Status::FromErrno("socket", errno);
  const int rc = ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  if (rc != 0 && (errno == ECONNREFUSED || errno == ENOENT)) {
    // Nobody listens: the stale socket of a process that died. Removed, not reused.
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return Status::FromErrno("remove stale socket '" + path + "'", errno);
    return {};
  }
  // Connected, or a listener that could not take us (EAGAIN: backlog full; EPROTOTYPE: another
  // socket type): someone is there either way.
  const std::string what = DescribeListener(st, rc == 0 ? probe.get() : -1);
  const uid_t self = ::geteuid();
  if (st.st_uid == self) {
    return Status(StatusCode::kUnavailable,
                  "'" + path + "' is already in use: " + what +
                      " (this process's uid); another arbiter runs there; stop it or give "
                      "this one another path");
  }
  return Status(StatusCode::kUnavailable,
                "'" + path + "' is " + what + ", not this process's uid " + std::to_string(self) +
                    ": another user's program listens at this path (possibly an impostor "
                    "serving tenants in the arbiter's place); it was not replaced: stop that "
                    "program, remove the file and restrict the directory");
}

Result<SocketFileId> BindSocketFile(int fd, const std::string& path, mode_t mode) {
  if (::fchmod(fd, mode) != 0) return Status::FromErrno("fchmod socket for '" + path + "'", errno);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (Status s = CheckSocketPath(path); !s.ok()) return s;
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0)
    return Status::FromErrno("bind '" + path + "'", errno);
  auto id = SetSocketFileMode(path, mode);
  if (!id.ok()) ::unlink(path.c_str());
  return id;
}

Result<SocketFileId> SetSocketFileMode(const std::string& path, mode_t mode) {
  // O_PATH | O_NOFOLLOW: a symlink put there is opened as the link itself (refused below),
  // never followed; the checks and the chmod then act on this one inode.
  UniqueFd file(::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!file) return Status::FromErrno("open '" + path + "' after bind", errno);
  struct stat st{};
  if (::fstat(file.get(), &st) != 0) return Status::FromErrno("fstat '" + path + "'", errno);
  if (!S_ISSOCK(st.st_mode) || st.st_uid != ::geteuid()) {
    return Status(StatusCode::kPermissionDenied,
                  "'" + path + "' is no longer the socket this process bound (replaced by uid " +
                      std::to_string(st.st_uid) + "); refusing to serve it");
  }
  if ((st.st_mode & 07777) != (mode & 07777)) {
    // Only the umask narrowed it; chmod through the descriptor (fchmod refuses O_PATH ones).
    const std::string self = "/proc/self/fd/" + std::to_string(file.get());
    if (::chmod(self.c_str(), mode) != 0 || ::fstat(file.get(), &st) != 0)
      return Status::FromErrno("chmod '" + path + "' to " + Octal(mode), errno);
  }
  return SocketFileId{st.st_dev, st.st_ino};
}

void RemoveSocketFile(const std::string& path, SocketFileId id) {
  struct stat st{};
  if (!path.empty() && ::lstat(path.c_str(), &st) == 0 && st.st_dev == id.dev && st.st_ino == id.ino)
    ::unlink(path.c_str());
}

}  // namespace gshare::shm
