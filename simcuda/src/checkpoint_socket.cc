// Where the process checkpoint sockets are and what they are called (see checkpoint.h): the
// name a process serves, the name a caller derives from the pid it was given (in whatever pid
// namespace the target runs), and socket addresses of any directory length.
#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "checkpoint.h"
#include "registry.h"

namespace simcuda {

std::string CheckpointSocketName(uint64_t pid_ns, int ns_pid, uint64_t start) {
  char name[96];
  std::snprintf(name, sizeof name, "simcuda-ckpt-%llu-%d-%llu", static_cast<unsigned long long>(pid_ns),
                ns_pid, static_cast<unsigned long long>(start));
  return name;
}

int InnermostPid(int pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/status", pid);
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return 0;
  int inner = pid;
  char line[256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "NSpid:", 6) != 0) continue;
    // "NSpid:\t<in this namespace>\t...\t<in its own>": the last one names it inside.
    char* save = nullptr;
    for (char* tok = strtok_r(line + 6, " \t\n", &save); tok != nullptr;
         tok = strtok_r(nullptr, " \t\n", &save)) {
      inner = std::atoi(tok);
    }
    break;
  }
  std::fclose(f);
  return inner;
}

std::string CheckpointSocketNameOf(int pid) {
  const uint64_t start = ProcessStartTime(pid);
  char ns_link[64];
  std::snprintf(ns_link, sizeof ns_link, "/proc/%d/ns/pid", pid);
  const uint64_t pid_ns = PidNamespaceOf(ns_link);
  const int inner = InnermostPid(pid);
  if (start == 0 || pid_ns == 0 || inner <= 0) return "";
  return CheckpointSocketName(pid_ns, inner, start);
}

std::string CheckpointDir() { return kCheckpointSocketDir; }

bool SocketAddress(int dir_fd, const std::string& name, sockaddr_un* addr, socklen_t* len) {
  *addr = sockaddr_un{};
  addr->sun_family = AF_UNIX;
  const int n = std::snprintf(addr->sun_path, sizeof addr->sun_path, "/proc/self/fd/%d/%s", dir_fd,
                              name.c_str());
  if (n <= 0 || static_cast<size_t>(n) >= sizeof addr->sun_path) return false;
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + static_cast<size_t>(n) + 1);
  return true;
}

}  // namespace simcuda
