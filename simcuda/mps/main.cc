// simcuda-mps-control: simcuda's stand-in for nvidia-cuda-mps-control (docs/simcuda.md
// "MPS mode"). -d starts the daemon in the background, -f in the foreground (for a supervisor);
// without options it is the control client of a running daemon (commands on stdin).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "control_client.h"
#include "daemon.h"

namespace {

void Usage() {
  std::fprintf(stderr,
               "usage: simcuda-mps-control [-d | -f]\n"
               "  -d  start the MPS control daemon in the background\n"
               "  -f  start it in the foreground\n"
               "  (no option) send the commands read from stdin to the running daemon:\n"
               "      get_server_list, get_client_list <server pid>,\n"
               "      terminate_client <server pid> <client pid>, quit\n");
}

// Starts the daemon and serves; reports the start on `ready_fd` (if >= 0), then points stderr
// at `quiet_fd` (if >= 0).
int Serve(int ready_fd, int quiet_fd) {
  simcuda::mps::MpsDaemon daemon;
  std::string error;
  const bool ok = daemon.Start(&error);
  if (!ok) std::fprintf(stderr, "simcuda-mps-control: %s\n", error.c_str());
  if (ready_fd >= 0) {
    const char status = ok ? '1' : '0';
    ssize_t ignored = write(ready_fd, &status, 1);
    (void)ignored;
    close(ready_fd);
  }
  if (quiet_fd >= 0) dup2(quiet_fd, STDERR_FILENO);
  if (!ok) return 1;
  daemon.Run();
  return 0;
}

// Forks twice (the daemon is nobody's child and leads no terminal), and returns in the parent
// once the daemon is serving.
int Daemonise() {
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) return 1;
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    close(ready[0]);
    setsid();
    if (fork() != 0) _exit(0);
    const int null_fd = open("/dev/null", O_RDWR);
    dup2(null_fd, STDIN_FILENO);
    dup2(null_fd, STDOUT_FILENO);
    if (chdir("/") != 0) _exit(1);
    // stderr stays until Start reported (its errors reach the caller), then goes too.
    const int rc = Serve(ready[1], null_fd);
    _exit(rc);
  }
  close(ready[1]);
  waitpid(child, nullptr, 0);
  char status = '0';
  const bool ok = read(ready[0], &status, 1) == 1 && status == '1';
  close(ready[0]);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 1) return simcuda::mps::RunControlClient();
  const std::string option = argv[1];
  if (argc == 2 && option == "-f") return Serve(-1, -1);
  if (argc == 2 && option == "-d") return Daemonise();
  Usage();
  return option == "-h" || option == "--help" ? 0 : 2;
}
