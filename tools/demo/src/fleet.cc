// Fleet: spawn the sample servers, read their PORT= / READY lines from their output files.
#include "gshare/demo/fleet.h"

#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include <fmt/format.h>

namespace gshare::demo {
namespace {

// Reads the server's machine-readable stdout lines; port 0 until PORT= appears.
void ReadStatus(const std::string& path, int* port, bool* ready) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PORT=", 0) == 0) *port = std::atoi(line.c_str() + 5);
    if (line.rfind("READY ", 0) == 0) *ready = true;
  }
}

std::string LastLines(const std::string& path, size_t n) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  std::string out;
  for (size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) out += "  " + lines[i] + "\n";
  return out;
}

}  // namespace

workload::Result<Fleet> Fleet::Start(const std::vector<FunctionSpec>& functions,
                                     const FleetOptions& o) {
  Fleet fleet;
  fleet.functions_ = functions;
  for (size_t i = 0; i < functions.size(); ++i) {
    const FunctionSpec& f = functions[i];
    SpawnSpec spec;
    spec.argv = {o.bin_dir + "/sample-" + f.kind, "--port", "0", "--name", f.name, "--seed",
                 std::to_string(f.seed)};
    if (o.extra_args) {
      for (std::string& a : o.extra_args(i, f)) spec.argv.push_back(std::move(a));
    }
    spec.env = o.env(i, f);
    spec.stdout_path = o.log_dir + "/" + f.name + ".out";
    spec.stderr_path = o.log_dir + "/" + f.name + ".err";
    auto child = ChildProcess::Spawn(spec);
    if (!child.ok()) return workload::Fail(child.status().message());
    fleet.servers_.push_back(std::move(*child));
  }
  fleet.ports_.assign(functions.size(), 0);
  std::vector<bool> ready(functions.size(), false);
  const auto deadline = std::chrono::steady_clock::now() + o.ready_timeout;
  for (size_t done = 0; done < functions.size();) {
    done = 0;
    for (size_t i = 0; i < functions.size(); ++i) {
      if (!ready[i]) {
        bool r = false;
        ReadStatus(o.log_dir + "/" + functions[i].name + ".out", &fleet.ports_[i], &r);
        ready[i] = r && fleet.ports_[i] > 0;
      }
      if (ready[i]) {
        ++done;
        continue;
      }
      if (!fleet.servers_[i].Running()) {
        const std::string err = o.log_dir + "/" + functions[i].name + ".err";
        return workload::Fail(fmt::format("{} exited with status {} before it was ready; {}:\n{}",
                                          functions[i].name, fleet.servers_[i].status().value_or(-1),
                                          err, LastLines(err, 5)));
      }
    }
    if (done == functions.size()) break;
    if (o.interrupted != nullptr && o.interrupted->load()) return workload::Fail("interrupted");
    if (std::chrono::steady_clock::now() > deadline)
      return workload::Fail(fmt::format("only {} of {} servers were ready after {} s", done,
                                        functions.size(), o.ready_timeout.count()));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return fleet;
}

std::vector<std::string> Fleet::Exited() {
  std::vector<std::string> out;
  for (size_t i = 0; i < servers_.size(); ++i) {
    if (!servers_[i].Running()) out.push_back(functions_[i].name);
  }
  return out;
}

std::vector<std::string> Fleet::StopAll(std::chrono::milliseconds grace) {
  for (ChildProcess& s : servers_) {
    if (s.Running()) ::kill(s.pid(), SIGTERM);
  }
  std::vector<std::string> failed;
  for (size_t i = 0; i < servers_.size(); ++i) {
    const int status = servers_[i].Stop(grace);
    if (status != 0) failed.push_back(fmt::format("{} (status {})", functions_[i].name, status));
  }
  return failed;
}

}  // namespace gshare::demo
