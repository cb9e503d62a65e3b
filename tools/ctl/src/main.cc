// gshare-ctl: the operator's command line for a running gshare-arbiter, over its control
// socket: status, clients, instances, drain/undrain GPU, evict CLIENT, set-slo CLIENT MS. Tables by
// default, the arbiter's JSON reply with --json. Exit status: 0 done; 1 the arbiter refused or
// failed the command (its message is printed); 2 bad usage; 3 the arbiter is not running at
// the socket; 4 could not talk to it (permission, timeout, malformed reply).
#include <cstdio>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "gshare/arbiter/control_client.h"
#include "gshare/ctl/render.h"

namespace {

constexpr int kExitRefused = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNotRunning = 3;
constexpr int kExitIo = 4;

}  // namespace

int main(int argc, char** argv) {
  using nlohmann::json;
  CLI::App app{"gshare-ctl: inspect and steer a running gshare-arbiter"};
  app.require_subcommand(1);
  std::string socket = gshare::arbiter::kDefaultControlSocket;
  bool as_json = false;
  int timeout_ms = 5000;
  app.add_option("--socket", socket, "the arbiter's control socket")
      ->envname("GSHARE_ARBITER_CONTROL")
      ->capture_default_str();
  app.add_flag("--json", as_json, "print the arbiter's JSON reply");
  app.add_option("--timeout-ms", timeout_ms, "how long to wait for the reply")
      ->check(CLI::Range(1, 600000))
      ->capture_default_str();
  uint32_t gpu = 0;
  std::string client;
  uint64_t slo_ms = 0;
  app.add_subcommand("status", "GPUs: memory, token holder, queue, utilisation, recent SLO misses");
  app.add_subcommand("clients", "every vGPU: function, pid, quota, residency, GPU, bursts, SLO");
  app.add_subcommand("instances",
                     "each function's instances, warm ones (memory on their GPU) first: for routers");
  auto* drain = app.add_subcommand("drain", "swap everyone off GPU and keep new residency off it");
  drain->add_option("GPU", gpu, "GPU ordinal")->required();
  auto* undrain = app.add_subcommand("undrain", "allow residency on GPU again");
  undrain->add_option("GPU", gpu, "GPU ordinal")->required();
  auto* evict = app.add_subcommand("evict", "swap CLIENT's vGPU out now");
  evict->add_option("CLIENT", client, "client id, or a function name only one client has")->required();
  auto* set_slo = app.add_subcommand("set-slo", "change CLIENT's SLO");
  set_slo->add_option("CLIENT", client, "client id, or a function name only one client has")->required();
  set_slo->add_option("MS", slo_ms, "the new SLO in milliseconds")
      ->required()
      ->check(CLI::Range(uint64_t{1}, uint64_t{3'600'000}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  const std::string command = app.get_subcommands().front()->get_name();
  json request = {{"cmd", command}};
  if (command == "drain" || command == "undrain") request["gpu"] = gpu;
  if (command == "evict" || command == "set-slo") request["client"] = client;
  if (command == "set-slo") request["slo_ms"] = slo_ms;

  auto reply = gshare::arbiter::ControlCall(socket, request, std::chrono::milliseconds(timeout_ms));
  if (!reply.ok()) {
    std::fprintf(stderr, "gshare-ctl: %s\n", reply.status().message().c_str());
    return reply.status().code() == gshare::shm::StatusCode::kUnavailable ? kExitNotRunning : kExitIo;
  }
  const json& r = *reply;
  if (as_json) std::cout << r.dump(2) << "\n";
  if (r.value("ok", false) != true) {
    std::fprintf(stderr, "gshare-ctl: %s\n",
                 r.value("error", command + ": the arbiter reported an error").c_str());
    return kExitRefused;
  }
  if (as_json) return 0;
  if (command == "status") {
    std::cout << gshare::ctl::RenderStatus(r);
  } else if (command == "clients") {
    std::cout << gshare::ctl::RenderClients(r);
  } else if (command == "instances") {
    std::cout << gshare::ctl::RenderInstances(r);
  } else {
    std::cout << gshare::ctl::RenderAction(command, r);
  }
  return 0;
}
