// gshare-cdi: writes the node's CDI spec, through which container runtimes (podman, containerd,
// CRI-O, Docker) inject gshare into unmodified containers (docs/containers.md).
//   gshare-cdi generate [--output FILE|-] [--socket-dir DIR] [--library PATH] [--force]
// Exit status: 0 written, 1 not written (an existing foreign spec, an unwritable directory),
// 2 bad options or a host that does not match them (each message names what is wrong).
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "gshare/arbiter/config.h"
#include "spec.h"
#include "spec_file.h"

namespace {

constexpr int kExitNotWritten = 1;
constexpr int kExitUsage = 2;

std::string SelfDir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  const std::string exe(buf, static_cast<size_t>(n));
  return exe.substr(0, exe.rfind('/'));
}

// libgshare.so of this installation: the build tree's lib/ or the install libdir.
std::string DefaultLibrary() {
  const std::string bin = SelfDir();
  for (const std::string& c : {bin + "/../lib/libgshare.so", bin + "/libgshare.so",
                               std::string(GSHARE_INSTALL_LIBDIR) + "/libgshare.so"}) {
    struct stat st{};
    char resolved[PATH_MAX];
    if (::stat(c.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::realpath(c.c_str(), resolved) != nullptr)
      return resolved;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gshare-cdi: the node's CDI spec for gshare (device gshare.io/vgpu=vgpu)"};
  app.require_subcommand(1);
  gshare::cdi::SpecOptions options;
  // The default registration socket's directory: the arbiter's tenant-facing one.
  const std::string default_socket = gshare::arbiter::kDefaultSocketPath;
  options.socket_dir = default_socket.substr(0, default_socket.rfind('/'));
  options.socket_name = default_socket.substr(default_socket.rfind('/') + 1);
  std::string output = "/etc/cdi/gshare.json";
  bool force = false;
  auto* generate = app.add_subcommand("generate", "write the CDI spec (validated, atomically)");
  generate->add_option("--output", output, "the spec file, or - for standard output")->capture_default_str();
  generate->add_option("--socket-dir", options.socket_dir,
                       "the arbiter's tenant-facing directory on the host (mounted at the same path)")
      ->capture_default_str();
  generate->add_option("--socket-name", options.socket_name, "the registration socket in that directory")
      ->capture_default_str();
  generate->add_option("--library", options.library, "libgshare.so on the host (default: this installation's)");
  generate->add_flag("--force", force, "replace a spec at --output that gshare-cdi did not write");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  if (options.library.empty()) options.library = DefaultLibrary();
  if (options.library.empty()) {
    std::cerr << "gshare-cdi: libgshare.so not found in " << SelfDir() << "/../lib nor in "
              << GSHARE_INSTALL_LIBDIR << "; pass --library PATH\n";
    return kExitUsage;
  }
  while (options.socket_dir.size() > 1 && options.socket_dir.back() == '/') options.socket_dir.pop_back();
  for (const auto& check : {gshare::cdi::CheckOptions(options), gshare::cdi::CheckHost(options)}) {
    if (!check.ok()) {
      std::cerr << "gshare-cdi: " << check.message() << "\n";
      return kExitUsage;
    }
  }
  const nlohmann::json spec = gshare::cdi::BuildSpec(options);
  if (auto valid = gshare::cdi::ValidateSpec(spec); !valid.ok()) {
    std::cerr << "gshare-cdi: the spec it built is not valid CDI " << gshare::cdi::kCdiVersion << ": "
              << valid.message() << "\n";
    return kExitUsage;
  }
  if (output == "-") {
    std::cout << spec.dump(2) << "\n";
    return 0;
  }
  if (auto written = gshare::cdi::WriteSpecFile(output, spec, force); !written.ok()) {
    std::cerr << "gshare-cdi: " << written.message() << "\n";
    return kExitNotWritten;
  }
  std::cout << "gshare-cdi: wrote " << output << ": device " << gshare::cdi::kKind << "="
            << gshare::cdi::kDeviceName << " (socket directory " << options.socket_dir << ", library "
            << options.library << ")\n";
  return 0;
}
