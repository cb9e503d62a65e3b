// gshare-device-plugin: the Kubernetes device plugin of a gshare node. It advertises the
// arbiter's GPU memory to kubelet as units of the extended resource gshare.io/vgpu-memory and
// turns the units a container was given into its vGPU quota (docs/kubernetes.md).
// Exit status: 0 stopped by SIGTERM/SIGINT (or --check-config passed); 2 bad command line or
// configuration.
#include <signal.h>

#include <cstdio>
#include <map>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "arbiter_monitor.h"
#include "cdi_edits.h"
#include "config.h"
#include "kubelet_link.h"
#include "plugin_service.h"

namespace {

constexpr int kExitUsage = 2;

std::string FlagName(const std::string& key) {
  std::string flag = "--" + key;
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gshare::deviceplugin;
  CLI::App app{"gshare-device-plugin: gshare's vGPU memory as a Kubernetes extended resource"};
  std::string config_file;
  app.add_option("--config", config_file, "TOML file with a [device_plugin] table (keys as the flags, '_' for '-')")
      ->type_name("FILE");
  bool check_config = false;
  app.add_flag("--check-config", check_config,
               "check the configuration, print it in full (defaults included) and exit");
  std::map<std::string, std::string> flags;
  for (const auto& k : ConfigKeys())
    app.add_option(FlagName(k.key), flags[k.key], k.help)->type_name(k.kind);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  PluginConfig config;
  if (!config_file.empty())
    if (auto s = LoadConfigFile(config, config_file); !s.ok()) {
      std::fprintf(stderr, "gshare-device-plugin: %s\n", s.message().c_str());
      return kExitUsage;
    }
  for (const auto& [key, value] : flags) {
    if (value.empty()) continue;
    if (auto s = SetKey(config, key, value); !s.ok()) {
      std::fprintf(stderr, "gshare-device-plugin: %s: %s\n", FlagName(key).c_str(),
                   s.message().c_str());
      return kExitUsage;
    }
  }
  if (auto s = Validate(config); !s.ok()) {
    std::fprintf(stderr, "gshare-device-plugin: %s\n", s.message().c_str());
    return kExitUsage;
  }
  if (check_config) {
    std::fputs(Describe(config).c_str(), stdout);
    return 0;
  }
  // Logs go to stderr (kubectl logs shows both streams; stdout stays free).
  spdlog::set_default_logger(spdlog::stderr_color_mt("gshare-device-plugin"));
  spdlog::set_level(spdlog::level::from_str(config.log_level));

  // Every thread (gRPC's, the monitor's) inherits the blocked signals; KubeletLink reads them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  spdlog::info("gshare-device-plugin: resource {}, unit {} MiB, overcommit {}, strategy {}",
               config.resource_name, config.unit_bytes >> 20, config.overcommit,
               StrategyName(config.strategy));
  if (config.strategy != DeviceListStrategy::kCdi) {
    if (auto edits = ReadCdiEdits(config.cdi_spec, config.cdi_device); !edits.ok())
      spdlog::warn("{}: Allocate fails until it is fixed", edits.status().message());
  }
  ArbiterMonitor monitor(config);
  monitor.Start();
  PluginServer server(config, monitor);
  int signo = 0;
  {
    KubeletLink link(config, server);
    signo = link.Run();
  }
  spdlog::info("signal {}: stopping", signo);
  server.Stop();
  monitor.Stop();
  return 0;
}
