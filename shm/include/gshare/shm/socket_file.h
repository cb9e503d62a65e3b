// The file of a listening Unix socket (the arbiter's registration, control and metrics
// sockets): checks of the directory it lives in and of what is already at its path, and a
// bind that gives the file its mode without ever changing a path another uid could swap.
//
// Why: a root daemon that binds and then chmod()s the path follows whatever is there by then;
// in a directory another uid can write, a symlink renamed over the fresh socket turns any
// root-owned file world-writable. And a live socket at the path may be another uid's impostor.
// Thread-safety: pure functions of the filesystem; no state.
#pragma once

#include <sys/types.h>

#include <string>

#include "gshare/shm/status.h"

namespace gshare::shm {

// Identity of a socket file, to remove it later only if it is still ours.
struct SocketFileId {
  dev_t dev = 0;
  ino_t ino = 0;
};

// Refuses (kPermissionDenied, naming the directory and why) a directory of `path` in which
// another uid could replace our file: one owned by a uid other than root and this
// process's effective uid, or writable by its group or others without the sticky bit.
Status CheckSafeDirectory(const std::string& path);

// Makes `path` ready for bind: the path's length and its directory are checked
// (CheckSafeDirectory), a dead socket (connect refused) is removed. Something that is not a
// socket is kInvalidArgument; a live socket is kUnavailable with the owning uid of the file and,
// where the kernel tells, the pid and uid of the process listening there, saying whether that
// is another uid than this process's (an impostor's socket is never replaced). `type` is the
// socket type probed (SOCK_STREAM, SOCK_SEQPACKET).
Status PrepareSocketPath(const std::string& path, int type);

// Binds the unbound Unix socket `fd` to `path` so that its file is created with exactly `mode`:
// fchmod on the socket before bind (Linux creates the file with the socket inode's mode minus
// the umask), then SetSocketFileMode for the bits the umask removed. Returns the file's id.
Result<SocketFileId> BindSocketFile(int fd, const std::string& path, mode_t mode);

// After a bind of `path` by this process: opens the file without following a symlink, checks
// it is a socket owned by this process's effective uid, and sets its mode through that
// descriptor (/proc/self/fd) if it differs. Never changes anything a symlink points at.
Result<SocketFileId> SetSocketFileMode(const std::string& path, mode_t mode);

// Unlinks `path` if it is still the file `id` (not one that replaced it).
void RemoveSocketFile(const std::string& path, SocketFileId id);

}  // namespace gshare::shm
