// gshare-run: starts a function under the gshare shim.
//   gshare-run --memory 1GiB --slo 50ms --name resnet [--arbiter PATH] -- ./server args...
// Validates the values (clear messages, exit status 2), sets LD_PRELOAD (libgshare.so found
// next to gshare-run, in ../lib, or where installed; appended to an existing LD_PRELOAD) and the
// GSHARE_* variables, then execs the program: its exit status is the program's. If the program
// cannot be executed: 127 (not found) or 126 (not executable), like a shell.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "launch.h"

namespace {

constexpr int kExitUsage = 2;

std::string SelfExe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace

int main(int argc, char** argv) {
  // Everything after "--" is the program and its arguments.
  int split = -1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      split = i;
      break;
    }
  }
  gshare::run::LaunchOptions o;
  CLI::App app{"gshare-run: run a GPU function under the gshare shim (libgshare.so)\n"
               "usage: gshare-run --memory SIZE --slo DURATION --name NAME [options] -- PROGRAM [ARGS...]"};
  app.add_option("--memory", o.memory, "vGPU memory quota, e.g. 1GiB (GSHARE_VGPU_MEMORY)")->required();
  app.add_option("--slo", o.slo, "latency target of one request, e.g. 50ms (GSHARE_SLO_MS)")->required();
  app.add_option("--name", o.name, "function name shown in gshare-ctl, metrics, traces")->required();
  app.add_option("--arbiter", o.arbiter,
                 "the arbiter's registration socket (default /run/gshare/arbiter.sock; 'none': "
                 "stand-alone)");
  app.add_option("--log-level", o.log_level, "the shim's log level (GSHARE_LOG_LEVEL)");
  app.add_option("--idle-release", o.idle_release, "idle time before the GPU is given back, e.g. 300us");
  app.add_option("--fail", o.fail, "while the arbiter is away: open (run on) or closed (hold work)");
  app.add_option("--preload", o.preload, "path of libgshare.so (default: found next to gshare-run)");
  const int cli_argc = split < 0 ? argc : split;
  try {
    app.parse(cli_argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  if (split < 0 || split + 1 >= argc) {
    std::fprintf(stderr, "gshare-run: missing '-- PROGRAM [ARGS...]'\n");
    return kExitUsage;
  }
  const auto env = gshare::run::ShimEnvironment(o);
  if (!env.ok()) {
    std::fprintf(stderr, "gshare-run: %s\n", env.status().message().c_str());
    return kExitUsage;
  }
  const auto lib = gshare::run::FindPreloadLibrary(o.preload, SelfExe(), GSHARE_INSTALL_LIBDIR);
  if (!lib.ok()) {
    std::fprintf(stderr, "gshare-run: %s\n", lib.status().message().c_str());
    return kExitUsage;
  }
  const char* existing = std::getenv("LD_PRELOAD");
  const std::string preload = gshare::run::AppendPreload(existing != nullptr ? existing : "", *lib);
  if (::setenv("LD_PRELOAD", preload.c_str(), 1) != 0) {
    std::perror("gshare-run: setenv");
    return kExitUsage;
  }
  for (const std::string& kv : *env) {
    const auto eq = kv.find('=');
    (void)::setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
  }
  std::vector<char*> args(argv + split + 1, argv + argc);
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  const int err = errno;
  std::fprintf(stderr, "gshare-run: cannot execute '%s': %s\n", args[0], std::strerror(err));
  return err == ENOENT ? 127 : 126;
}
