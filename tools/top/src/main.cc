// gshare-top: a live terminal view of a gshare-arbiter (like nvidia-smi + htop), refreshed
// every second from its control socket: per GPU who holds it, utilisation by tenant over the
// last seconds, memory resident/swapped, queue; the functions; recent SLO misses.
// --snapshot prints one frame and exits (scripts, tests). Keys: q quits. Plain ANSI.
// Exit status: 0; 2 bad usage; 3 (snapshot) the arbiter is not running; 4 other errors.
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>

#include "frame.h"
#include "gshare/arbiter/control_client.h"
#include "gshare/common/status.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

// Puts the terminal in non-canonical, no-echo mode (for 'q') and restores it on destruction.
class RawTerminal {
 public:
  RawTerminal() {
    if (::isatty(STDIN_FILENO) == 0 || ::tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    active_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) (void)::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  termios saved_{};
  bool active_ = false;
};

int TerminalWidth() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 200;
}

// One frame, or why not: the control call's error (kUnavailable: the arbiter is not running),
// or kRefused with the error the arbiter answered.
gshare::Result<std::string> Fetch(const std::string& socket, const gshare::top::FrameStyle& style) {
  using gshare::arbiter::ControlCall;
  const auto timeout = std::chrono::milliseconds(2000);
  auto status = ControlCall(socket, {{"cmd", "status"}}, timeout);
  if (status.ok() && status->value("ok", false)) {
    auto clients = ControlCall(socket, {{"cmd", "clients"}}, timeout);
    if (clients.ok() && clients->value("ok", false)) {
      return gshare::top::RenderFrame(*status, *clients, style);
    }
    status = std::move(clients);
  }
  if (!status.ok()) return status.status();
  return gshare::Status(gshare::StatusCode::kRefused,
                        status->value("error", std::string("the arbiter reported an error")));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gshare-top: live view of a gshare-arbiter"};
  std::string socket = gshare::arbiter::kDefaultControlSocket;
  bool snapshot = false;
  bool no_color = false;
  double interval_s = 1.0;
  app.add_option("--socket", socket, "the arbiter's control socket")
      ->envname("GSHARE_ARBITER_CONTROL")
      ->capture_default_str();
  app.add_flag("--snapshot", snapshot, "print one frame and exit");
  app.add_flag("--no-color", no_color, "no ANSI colours");
  app.add_option("--interval", interval_s, "seconds between refreshes")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  gshare::top::FrameStyle style;
  style.color = !no_color && !snapshot && ::isatty(STDOUT_FILENO) != 0;
  style.width = TerminalWidth();
  if (snapshot) {
    const auto f = Fetch(socket, style);
    if (!f.ok()) {
      std::fprintf(stderr, "gshare-top: %s\n", f.status().message().c_str());
      return f.status().code() == gshare::StatusCode::kUnavailable ? 3 : 4;
    }
    std::cout << *f << std::flush;
    return 0;
  }
  struct sigaction sa{};
  sa.sa_handler = OnSignal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  RawTerminal raw;
  std::cout << "\x1b[?1049h\x1b[?25l";  // alternate screen, hide the cursor
  while (g_stop == 0) {
    style.width = TerminalWidth();
    const auto f = Fetch(socket, style);
    std::cout << "\x1b[H\x1b[2J";
    if (f.ok()) {
      std::cout << *f;
    } else {
      std::cout << "gshare-top: " << f.status().message() << " (retrying)\n";
    }
    std::cout << "\n(q to quit)" << std::flush;
    pollfd p{STDIN_FILENO, POLLIN, 0};
    const auto wait_ms = static_cast<int>(interval_s * 1000);
    if (::poll(&p, 1, wait_ms) > 0) {
      char ch = 0;
      if (::read(STDIN_FILENO, &ch, 1) == 1 && (ch == 'q' || ch == 'Q')) break;
      if (::isatty(STDIN_FILENO) == 0) ::usleep(static_cast<useconds_t>(wait_ms) * 1000);  // EOF
    }
  }
  std::cout << "\x1b[?25h\x1b[?1049l" << std::flush;
  return 0;
}
