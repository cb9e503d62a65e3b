// NextAction, RegisterWithKubelet and KubeletLink (kubelet_link.h).
#include "kubelet_link.h"

#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "deviceplugin.grpc.pb.h"

namespace gshare::deviceplugin {
namespace {

uint64_t SocketInode(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return 0;
  return st.st_ino;
}

}  // namespace

LinkAction NextAction(const Observed& seen, const LinkState& state) {
  if (!seen.dir_exists)
    return state.served_inode != 0 ? LinkAction::kStopServing : LinkAction::kWaitDirectory;
  if (state.served_inode == 0 || seen.plugin_inode != state.served_inode) return LinkAction::kServe;
  if (seen.kubelet_inode == 0) return LinkAction::kWaitKubelet;
  if (seen.kubelet_inode != state.registered_inode) return LinkAction::kRegister;
  return LinkAction::kNone;
}

const char* LinkActionName(LinkAction a) {
  switch (a) {
    case LinkAction::kNone: return "none";
    case LinkAction::kStopServing: return "stop-serving";
    case LinkAction::kWaitDirectory: return "wait-directory";
    case LinkAction::kServe: return "serve";
    case LinkAction::kWaitKubelet: return "wait-kubelet";
    case LinkAction::kRegister: return "register";
  }
  return "?";
}

shm::Status RegisterWithKubelet(const PluginConfig& config, std::chrono::milliseconds timeout) {
  auto channel = grpc::CreateChannel("unix:" + config.kubelet_socket,
                                     grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest req;
  req.set_version("v1beta1");
  req.set_endpoint(config.plugin_socket);
  req.set_resource_name(config.resource_name);
  *req.mutable_options() = PluginOptions();
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  v1beta1::Empty resp;
  const grpc::Status s = stub->Register(&ctx, req, &resp);
  if (s.ok()) return {};
  const std::string what = "kubelet at " + config.kubelet_socket + " refused or failed Register (" +
                           std::to_string(static_cast<int>(s.error_code())) +
                           "): " + s.error_message();
  return shm::Status(s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                             s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
                         ? shm::StatusCode::kUnavailable
                         : shm::StatusCode::kRefused,
                     what);
}

KubeletLink::KubeletLink(const PluginConfig& config, PluginServer& server)
    : config_(config), server_(server) {
  inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0)
    spdlog::warn("inotify unavailable ({}): kubelet restarts are noticed within a second",
                 std::strerror(errno));
}

KubeletLink::~KubeletLink() {
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
}

void KubeletLink::Report(const std::string& what) {
  if (what == last_report_) return;
  last_report_ = what;
  spdlog::warn("{}", what);
}

Observed KubeletLink::Look() const {
  Observed o;
  struct stat st{};
  o.dir_exists = ::stat(config_.socket_dir().c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  if (!o.dir_exists) return o;
  o.kubelet_inode = SocketInode(config_.kubelet_socket);
  o.plugin_inode = SocketInode(config_.plugin_socket_path());
  return o;
}

void KubeletLink::Watch() {
  if (inotify_fd_ < 0 || watch_ >= 0) return;
  watch_ = ::inotify_add_watch(inotify_fd_, config_.socket_dir().c_str(),
                               IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                                   IN_DELETE_SELF | IN_MOVE_SELF | IN_ATTRIB);
}

void KubeletLink::Step() {
  for (int guard = 0; guard < 8; ++guard) {
    const LinkAction action = NextAction(Look(), state_);
    switch (action) {
      case LinkAction::kNone:
        return;
      case LinkAction::kWaitDirectory:
        Report("kubelet's device plugin directory " + config_.socket_dir() +
               " does not exist: waiting for it (is kubelet running on this node, and is its "
               "directory mounted into this container?)");
        return;
      case LinkAction::kStopServing:
        spdlog::warn("{} was removed: stopped serving until it is back", config_.socket_dir());
        server_.Stop();
        state_ = {};
        continue;
      case LinkAction::kServe: {
        if (state_.served_inode != 0)
          spdlog::warn("the plugin socket {} was removed (kubelet restarted?): serving again",
                       config_.plugin_socket_path());
        if (auto s = server_.Start(); !s.ok()) {
          Report(s.message());
          return;
        }
        state_.served_inode = server_.inode();
        state_.registered_inode = 0;
        register_backoff_ = std::chrono::milliseconds(250);
        next_register_ = {};
        continue;
      }
      case LinkAction::kWaitKubelet:
        state_.registered_inode = 0;
        Report("kubelet's socket " + config_.kubelet_socket +
               " does not exist: serving, and waiting for kubelet to register with it");
        return;
      case LinkAction::kRegister: {
        const auto now = std::chrono::steady_clock::now();
        if (now < next_register_) return;
        const uint64_t inode = Look().kubelet_inode;
        if (auto s = RegisterWithKubelet(config_, std::chrono::seconds(5)); !s.ok()) {
          Report(s.message() + " (retrying)");
          next_register_ = now + register_backoff_;
          register_backoff_ = std::min(register_backoff_ * 2, std::chrono::milliseconds(10000));
          return;
        }
        state_.registered_inode = inode;
        register_backoff_ = std::chrono::milliseconds(250);
        last_report_.clear();
        spdlog::info("registered {} with kubelet at {} (endpoint {})", config_.resource_name,
                     config_.kubelet_socket, config_.plugin_socket);
        continue;
      }
    }
  }
}

int KubeletLink::Run() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  const int sfd = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  for (;;) {
    Watch();
    Step();
    pollfd fds[2] = {{sfd, POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
    const int n = ::poll(fds, inotify_fd_ >= 0 ? 2 : 1, 250);
    if (n < 0 && errno != EINTR) spdlog::warn("poll: {}", std::strerror(errno));
    if (n > 0 && (fds[0].revents & POLLIN) != 0) {
      signalfd_siginfo info{};
      const ssize_t r = ::read(sfd, &info, sizeof(info));
      if (r == static_cast<ssize_t>(sizeof(info))) {
        ::close(sfd);
        return static_cast<int>(info.ssi_signo);
      }
    }
    if (n > 0 && inotify_fd_ >= 0 && (fds[1].revents & POLLIN) != 0) {
      alignas(inotify_event) char buf[4096];
      ssize_t r;
      while ((r = ::read(inotify_fd_, buf, sizeof(buf))) > 0) {
        for (char* p = buf; p < buf + r;) {
          const auto* ev = reinterpret_cast<const inotify_event*>(p);
          if ((ev->mask & IN_IGNORED) != 0) watch_ = -1;  // the directory went: watch it again
          if ((ev->mask & IN_MOVE_SELF) != 0 && watch_ >= 0) {
            ::inotify_rm_watch(inotify_fd_, watch_);  // moved away: watch the path's new one
            watch_ = -1;
          }
          p += sizeof(inotify_event) + ev->len;
        }
      }
    }
  }
}

}  // namespace gshare::deviceplugin
