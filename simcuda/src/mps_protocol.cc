// The MPS daemon's state file and control socket, as both sides see them (see mps_protocol.h).
#include "mps_protocol.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <sstream>

namespace simcuda {
namespace {

std::string DirFromEnv(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  std::string dir = v != nullptr && *v != '\0' ? v : fallback;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

}  // namespace

std::string MpsPipeDirectory() { return DirFromEnv("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps"); }
std::string MpsLogDirectory() { return DirFromEnv("CUDA_MPS_LOG_DIRECTORY", "/var/log/nvidia-mps"); }

std::string FormatDaemonInfo(const MpsDaemonInfo& info) {
  std::ostringstream out;
  out << "simcuda-mps 1\n"
      << "pid " << info.pid << "\n"
      << "registry " << info.registry << "\n"
      << "devices";
  for (int d : info.devices) out << ' ' << d;
  out << "\nmax_clients " << info.max_clients << "\n"
      << "context_mib_per_sm " << info.context_mib_per_sm << "\n";
  return out.str();
}

bool ParseDaemonInfo(std::string_view text, MpsDaemonInfo* info, std::string* error) {
  std::istringstream in{std::string(text)};
  std::string line;
  bool header = false, registry = false;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key == "simcuda-mps") {
      int version = 0;
      fields >> version;
      if (version != 1) {
        *error = "state file version " + std::to_string(version) + ", not 1";
        return false;
      }
      header = true;
    } else if (key == "pid") {
      fields >> info->pid;
    } else if (key == "registry") {
      fields >> info->registry;
      registry = !info->registry.empty();
    } else if (key == "devices") {
      info->devices.clear();
      for (int d; fields >> d;) info->devices.push_back(d);
    } else if (key == "max_clients") {
      fields >> info->max_clients;
    } else if (key == "context_mib_per_sm") {
      fields >> info->context_mib_per_sm;
    }
  }
  if (!header || !registry) {
    *error = "not a simcuda-mps state file";
    return false;
  }
  return true;
}

std::optional<MpsDaemonInfo> FindLiveDaemon(const std::string& pipe_dir) {
  const std::string path = pipe_dir + "/" + kMpsStateFile;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  struct flock lock{};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = 0;
  lock.l_len = 1;
  const bool alive = fcntl(fd, F_OFD_GETLK, &lock) == 0 && lock.l_type != F_UNLCK;
  std::string text;
  char buf[1024];
  for (ssize_t n; alive && (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(fd);
  if (!alive) return std::nullopt;
  MpsDaemonInfo info;
  std::string error;
  if (!ParseDaemonInfo(text, &info, &error)) return std::nullopt;
  return info;
}

int ConnectToDaemon(const std::string& pipe_dir) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = pipe_dir + "/" + kMpsControlSocket;
  if (path.size() >= sizeof addr.sun_path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

}  // namespace simcuda
