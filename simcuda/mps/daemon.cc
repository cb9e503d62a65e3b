// simcuda-mps-control's daemon (see daemon.h).
#include "daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "config.h"
#include "log.h"

namespace simcuda::mps {
namespace {

volatile sig_atomic_t g_stop = 0;
void OnStopSignal(int) { g_stop = 1; }

bool MakeDirectory(const std::string& dir, const char* variable, std::string* error) {
  if (mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) {
    struct stat st{};
    if (stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return true;
  }
  *error = std::string(variable) + " '" + dir + "': cannot create the directory: " + std::strerror(errno);
  return false;
}

// CUDA_VISIBLE_DEVICES as ordinals of the registry's devices (default: all of them).
bool VisibleDevices(int count, std::vector<int>* out, std::string* error) {
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  out->clear();
  if (env == nullptr) {
    for (int i = 0; i < count; ++i) out->push_back(i);
    return true;
  }
  std::stringstream in(env);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0 || v >= count) {
      *error = "CUDA_VISIBLE_DEVICES='" + std::string(env) + "': '" + item +
               "' is not an ordinal of the " + std::to_string(count) + " simulated devices";
      return false;
    }
    out->push_back(static_cast<int>(v));
  }
  return true;
}

bool WriteAll(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t n = write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

bool MpsDaemon::Start(std::string* error) {
  std::optional<Config> config = LoadConfigFromEnvironment(error);
  if (!config) return false;
  pipe_dir_ = MpsPipeDirectory();
  log_dir_ = MpsLogDirectory();
  if (!MakeDirectory(pipe_dir_, "CUDA_MPS_PIPE_DIRECTORY", error) ||
      !MakeDirectory(log_dir_, "CUDA_MPS_LOG_DIRECTORY", error)) {
    return false;
  }
  const std::string log_path = log_dir_ + "/control.log";
  log_fd_ = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd_ < 0) {
    *error = "CUDA_MPS_LOG_DIRECTORY: cannot open " + log_path + ": " + std::strerror(errno);
    return false;
  }
  LogAlsoTo(log_fd_, LogLevel::kInfo);
  if (std::optional<MpsDaemonInfo> other = FindLiveDaemon(pipe_dir_)) {
    *error = "an MPS control daemon (pid " + std::to_string(other->pid) + ") already serves " + pipe_dir_;
    return false;
  }
  info_.pid = static_cast<int>(getpid());
  info_.registry = config->dir + config->registry_name;
  info_.max_clients = config->mps_max_clients;
  info_.context_mib_per_sm = config->mps_context_mib_per_sm;
  if (!VisibleDevices(static_cast<int>(config->devices.size()), &info_.devices, error)) return false;

  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string socket_path = pipe_dir_ + "/" + kMpsControlSocket;
  if (socket_path.size() >= sizeof addr.sun_path) {
    *error = "CUDA_MPS_PIPE_DIRECTORY '" + pipe_dir_ + "' is too long for a socket path";
    return false;
  }
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  unlink(socket_path.c_str());  // a dead daemon's (no live daemon holds the state lock)
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listen_fd_, 128) != 0) {
    *error = "cannot serve " + socket_path + ": " + std::strerror(errno);
    return false;
  }
  // The state file: written and locked under a temporary name, then renamed into place, so a
  // client that opens the name finds a complete file and a lock.
  const std::string state_path = pipe_dir_ + "/" + kMpsStateFile;
  const std::string temp_path = state_path + "." + std::to_string(info_.pid);
  state_fd_ = open(temp_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  struct flock lock{};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = 0;
  lock.l_len = 1;
  if (state_fd_ < 0 || fcntl(state_fd_, F_OFD_SETLK, &lock) != 0 ||
      !WriteAll(state_fd_, FormatDaemonInfo(info_)) || rename(temp_path.c_str(), state_path.c_str()) != 0) {
    *error = "cannot publish " + state_path + ": " + std::strerror(errno);
    unlink(temp_path.c_str());
    return false;
  }
  std::string devices;
  for (int d : info_.devices) devices += (devices.empty() ? "" : ",") + std::to_string(d);
  Log(LogLevel::kInfo, "MPS control daemon %d started: pipe directory %s, registry %s, devices %s, "
      "%d clients per device", info_.pid, pipe_dir_.c_str(), info_.registry.c_str(), devices.c_str(),
      info_.max_clients);
  return true;
}

void MpsDaemon::Run() {
  struct sigaction sa{};
  sa.sa_handler = OnStopSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  while (!quit_ && g_stop == 0) {
    std::vector<pollfd> fds;
    fds.push_back({listen_fd_, POLLIN, 0});
    for (const Connection& c : connections_) fds.push_back({c.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), 1000) < 0) {
      if (errno == EINTR) continue;
      Log(LogLevel::kError, "poll: %s", std::strerror(errno));
      break;
    }
    for (size_t i = fds.size(); i-- > 1;) {
      if (fds[i].revents != 0 && !Serve(connections_[i - 1])) Drop(i - 1);
      if (quit_) break;
    }
    if (!quit_ && (fds[0].revents & POLLIN) != 0) Accept();
  }
  Log(LogLevel::kInfo, "MPS control daemon %d exiting", info_.pid);
  Cleanup();
}

void MpsDaemon::Accept() {
  while (true) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    Connection c;
    c.fd = fd;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      c.uid = cred.uid;
      c.pid = cred.pid;
    }
    connections_.push_back(std::move(c));
  }
}

bool MpsDaemon::Serve(Connection& c) {
  char buf[512];
  const ssize_t n = read(c.fd, buf, sizeof buf);
  if (n <= 0) {
    if (c.client) Log(LogLevel::kInfo, "MPS client %d (uid %u) disconnected", c.pid, c.uid);
    if (n == 0 && !c.client && !c.input.empty()) {  // a command without its final newline
      WriteAll(c.fd, Execute(c.input));
    }
    return false;
  }
  c.input.append(buf, static_cast<size_t>(n));
  for (size_t eol; (eol = c.input.find('\n')) != std::string::npos;) {
    std::string line = c.input.substr(0, eol);
    c.input.erase(0, eol + 1);
    if (c.client) continue;  // clients say nothing after hello but answers to terminate
    if (line == "hello") {
      const std::string reply = Hello(c);
      WriteAll(c.fd, reply);
      if (reply.rfind("ok", 0) != 0) return false;
      continue;
    }
    WriteAll(c.fd, Execute(line));
    return false;  // one command per connection
  }
  return true;
}

std::string MpsDaemon::Hello(Connection& c) {
  for (const Connection& o : connections_) {
    if (o.client && o.uid != c.uid) {
      Log(LogLevel::kWarn, "MPS client %d of uid %u refused: the server of uid %u is active (clients of "
          "another user are served one after another; retry when it has no clients)", c.pid, c.uid, o.uid);
      return "refused the MPS server of uid " + std::to_string(o.uid) + " is active\n";
    }
  }
  c.client = true;
  const int server = ServerIdOf(c.uid);
  Log(LogLevel::kInfo, "MPS client %d (uid %u) connected to server %d", c.pid, c.uid, server);
  return "ok " + std::to_string(server) + "\n";
}

int MpsDaemon::ServerIdOf(uid_t uid) {
  auto it = server_ids_.find(uid);
  if (it != server_ids_.end()) return it->second;
  const int id = info_.pid + 1 + static_cast<int>(server_ids_.size());
  server_ids_[uid] = id;
  return id;
}

std::string MpsDaemon::Execute(const std::string& command) {
  std::istringstream in(command);
  std::string verb;
  in >> verb;
  if (verb.empty()) return "";
  Log(LogLevel::kInfo, "command: %s", command.c_str());
  if (verb == "quit") {
    quit_ = true;
    return "";
  }
  if (verb == "get_server_list") {
    std::string out;
    for (const auto& [uid, id] : server_ids_) {
      for (const Connection& c : connections_) {
        if (c.client && c.uid == uid) {
          out += std::to_string(id) + "\n";
          break;
        }
      }
    }
    return out;
  }
  long server = 0, pid = 0;
  if (verb == "get_client_list") {
    if (!(in >> server)) return "ERROR: usage: get_client_list <server pid>\n";
    std::string out;
    for (const Connection& c : connections_) {
      if (c.client && ServerIdOf(c.uid) == server) out += std::to_string(c.pid) + "\n";
    }
    return out;
  }
  if (verb == "terminate_client") {
    if (!(in >> server >> pid)) return "ERROR: usage: terminate_client <server pid> <client pid>\n";
    return TerminateClient(server, pid);
  }
  return "ERROR: unknown command '" + verb + "'\n";
}

std::string MpsDaemon::TerminateClient(long server, long pid) {
  bool found = false;
  for (Connection& c : connections_) {
    if (!c.client || c.pid != pid || ServerIdOf(c.uid) != server) continue;
    found = true;
    WriteAll(c.fd, "terminate\n");
    // Wait (bounded) for the client's acknowledgement, so that its later calls fail once the
    // command returns.
    for (int waited = 0; waited < 2000 && c.input.find("terminated\n") == std::string::npos; waited += 50) {
      pollfd p{c.fd, POLLIN, 0};
      if (poll(&p, 1, 50) > 0) {
        char buf[128];
        const ssize_t n = read(c.fd, buf, sizeof buf);
        if (n <= 0) break;
        c.input.append(buf, static_cast<size_t>(n));
      }
    }
    c.input.clear();
    Log(LogLevel::kInfo, "terminated MPS client %ld of server %ld", pid, server);
  }
  if (!found) {
    return "ERROR: no client " + std::to_string(pid) + " of server " + std::to_string(server) + "\n";
  }
  return "";
}

void MpsDaemon::Drop(size_t index) {
  close(connections_[index].fd);
  connections_.erase(connections_.begin() + static_cast<std::ptrdiff_t>(index));
}

void MpsDaemon::Cleanup() {
  for (Connection& c : connections_) close(c.fd);
  connections_.clear();
  // Remove the names only while they are still ours (a new daemon may have replaced them).
  const std::string state_path = pipe_dir_ + "/" + kMpsStateFile;
  struct stat mine{}, there{};
  if (state_fd_ >= 0 && fstat(state_fd_, &mine) == 0 && stat(state_path.c_str(), &there) == 0 &&
      mine.st_ino == there.st_ino && mine.st_dev == there.st_dev) {
    unlink(state_path.c_str());
    unlink((pipe_dir_ + "/" + kMpsControlSocket).c_str());
  }
  if (listen_fd_ >= 0) close(listen_fd_);
  if (state_fd_ >= 0) close(state_fd_);
}

}  // namespace simcuda::mps
