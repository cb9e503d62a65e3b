// The control client of simcuda-mps-control (see control_client.h).
#include "control_client.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "mps_protocol.h"

namespace simcuda::mps {

int RunControlClient() {
  const std::string pipe_dir = MpsPipeDirectory();
  int rc = 0;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const int fd = ConnectToDaemon(pipe_dir);
    if (fd < 0) {
      std::fprintf(stderr, "Cannot find MPS control daemon process (CUDA_MPS_PIPE_DIRECTORY=%s): %s\n",
                   pipe_dir.c_str(), std::strerror(errno));
      return 1;
    }
    line += '\n';
    if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) rc = 1;
    shutdown(fd, SHUT_WR);
    std::string reply;
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) reply.append(buf, static_cast<size_t>(n));
    close(fd);
    std::fwrite(reply.data(), 1, reply.size(), stdout);
    std::fflush(stdout);
    if (reply.rfind("ERROR", 0) == 0) rc = 1;
  }
  return rc;
}

}  // namespace simcuda::mps
