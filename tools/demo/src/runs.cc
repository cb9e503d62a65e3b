// RunShared / RunDedicated: start the processes of one demo run, drive the load, stop everything
// and collect the results (see runs.h).
#include "gshare/demo/runs.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "gshare/common/units.h"
#include "gshare/demo/child_process.h"
#include "gshare/demo/fleet.h"
#include "gshare/workload/catalog.h"

namespace gshare::demo {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Tail(const std::string& path, size_t lines) {
  const std::string text = ReadFile(path);
  size_t pos = text.size();
  for (size_t n = 0; n <= lines && pos > 0; ++n) pos = text.rfind('\n', pos - 1);
  return text.substr(pos == std::string::npos ? 0 : pos + 1);
}

bool Interrupted(const Environment& env) {
  return env.interrupted != nullptr && env.interrupted->load();
}

// Removes a simcuda device registry (a POSIX shared-memory name) when the run ends.
class RegistryGuard {
 public:
  explicit RegistryGuard(std::string name) : name_(std::move(name)) {}
  ~RegistryGuard() { shm_unlink(name_.c_str()); }
  RegistryGuard(const RegistryGuard&) = delete;
  RegistryGuard& operator=(const RegistryGuard&) = delete;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

// The environment of the run's CUDA processes: simcuda with `devices` unless --real-gpu.
std::vector<std::string> CudaEnvironment(const Environment& env, const std::string& devices,
                                         const std::string& registry) {
  std::vector<std::string> e = CurrentEnvironment();
  if (env.options.real_gpu) return e;
  const char* old = getenv("LD_LIBRARY_PATH");
  SetEnv(e, "LD_LIBRARY_PATH", env.simcuda_lib_dir + (old != nullptr && *old != 0 ? std::string(":") + old : ""));
  SetEnv(e, "SIMCUDA_DEVICES", devices);
  SetEnv(e, "SIMCUDA_REGISTRY", registry);
  SetEnv(e, "SIMCUDA_KERNELS", env.lib_dir + "/libsimcuda_kernels.so");
  SetEnv(e, "SIMCUDA_TIME_SCALE", env.options.time_scale);
  return e;
}

struct Load {
  nlohmann::json run;
  std::string workload;
  std::vector<RequestRecord> records;
  uint64_t begin_ns = 0, end_ns = 0;
};

// Runs gshare-loadgen over DIR/targets.toml and waits for it; its exit status 1 (some request
// failed) is a result, not an error.
workload::Result<Load> RunLoad(const Environment& env, const std::string& dir, const std::string& label) {
  const DemoOptions& o = env.options;
  SpawnSpec spec;
  spec.argv = {env.bin_dir + "/gshare-loadgen", "--targets-file", dir + "/targets.toml",
               "--format", o.format, "--time-compression", fmt::format("{}", o.time_compression),
               "--max-seconds", fmt::format("{:.3f}", o.trace_seconds / o.time_compression),
               "--max-requests", "1000000", "--concurrency", std::to_string(o.concurrency),
               "--label", label, "--json", dir + "/loadgen.json", "--records", dir + "/records.csv",
               "--wait-ready", "60"};
  if (!o.trace.empty()) {
    spec.argv.push_back("--trace");
    spec.argv.push_back(o.trace);
  }
  spec.env = CurrentEnvironment();
  std::erase_if(spec.env, [](const std::string& e) { return e.rfind("LD_PRELOAD=", 0) == 0; });
  spec.stdout_path = dir + "/loadgen.out";
  spec.stderr_path = dir + "/loadgen.err";
  Load load;
  load.begin_ns = MonotonicNs();
  auto child = ChildProcess::Spawn(spec);
  if (!child.ok()) return workload::Fail(child.status().message());
  // The loadgen bounds itself (max-seconds + its 30 s request timeout); this is a safety net.
  const auto deadline = std::chrono::steady_clock::now() +
                        seconds(static_cast<int64_t>(o.trace_seconds / o.time_compression) + 180);
  std::optional<int> status;
  while (!(status = child->Wait(milliseconds(200)))) {
    if (Interrupted(env)) return workload::Fail("interrupted");
    if (std::chrono::steady_clock::now() > deadline) {
      child->Stop(seconds(2));
      return workload::Fail("gshare-loadgen did not finish in time; see " + spec.stderr_path);
    }
  }
  load.end_ns = MonotonicNs();
  if (*status != 0 && *status != 1) {
    return workload::Fail(fmt::format("gshare-loadgen exited with status {}:\n{}", *status,
                                      Tail(spec.stderr_path, 5)));
  }
  nlohmann::json j = nlohmann::json::parse(ReadFile(dir + "/loadgen.json"), nullptr, false);
  if (j.is_discarded() || !j.contains("runs") || j["runs"].empty())
    return workload::Fail("gshare-loadgen wrote no JSON report in " + dir);
  load.run = j["runs"][0];
  load.workload = j.value("workload", "");
  auto records = ParseRecordsCsv(ReadFile(dir + "/records.csv"));
  if (!records.ok()) return workload::Fail(records.status().message());
  load.records = std::move(*records);
  return load;
}

// Co-run run: asks the MPS daemon of `pipe_dir` to quit when the run ends, after the arbiter is
// stopped. The arbiter quits its daemons at a clean shutdown; one that was killed (it did not
// stop in time) leaves its daemon behind, which this ends. Without a daemon the control client
// only says so (exit 1, ignored).
class MpsQuitGuard {
 public:
  MpsQuitGuard() = default;
  MpsQuitGuard(const MpsQuitGuard&) = delete;
  MpsQuitGuard& operator=(const MpsQuitGuard&) = delete;
  void Arm(std::string tool, std::string pipe_dir, std::vector<std::string> env, std::string log) {
    tool_ = std::move(tool);
    SetEnv(env, "CUDA_MPS_PIPE_DIRECTORY", pipe_dir);
    env_ = std::move(env);
    log_ = std::move(log);
  }
  ~MpsQuitGuard() {
    if (tool_.empty()) return;
    auto child = ChildProcess::Spawn({{"/bin/sh", "-c", "echo quit | exec \"$0\"", tool_}, env_, log_, log_});
    if (!child.ok()) return;
    if (!child->Wait(seconds(10))) child->Stop(seconds(1));
  }

 private:
  std::string tool_, log_;
  std::vector<std::string> env_;
};

workload::Result<std::string> MakeRunDir(const Environment& env, const std::string& name) {
  const std::string dir = env.run_dir + "/" + name;
  for (const std::string& d : {dir, dir + "/logs"}) {
    if (mkdir(d.c_str(), 0755) != 0 && errno != EEXIST)
      return workload::Fail("cannot create " + d + ": " + std::strerror(errno));
  }
  return dir;
}

workload::Result<Fleet> StartFleet(const Environment& env, const std::vector<FunctionSpec>& functions,
                                   const std::string& dir, FleetOptions fo) {
  fo.bin_dir = env.bin_dir;
  fo.log_dir = dir + "/logs";
  fo.interrupted = env.interrupted;
  auto fleet = Fleet::Start(functions, fo);
  if (!fleet.ok()) return fleet;
  std::ofstream(dir + "/targets.toml") << TargetsToml(functions, fleet->ports());
  return fleet;
}

RunOutcome OutcomeOf(const std::string& label, Load load) {
  RunOutcome o;
  o.label = label;
  o.run = std::move(load.run);
  o.workload = std::move(load.workload);
  o.records = std::move(load.records);
  o.window_s = static_cast<double>(load.end_ns - load.begin_ns) / 1e9;
  return o;
}

void StopFleet(Fleet& fleet, RunOutcome& o) {
  for (const std::string& name : fleet.Exited()) o.problems.push_back(name + " exited during the run");
  for (const std::string& s : fleet.StopAll(seconds(20)))
    o.problems.push_back("server did not stop cleanly: " + s);
}

}  // namespace

workload::Result<CorunSetup> MakeCorunSetup(const std::vector<FunctionSpec>& functions, uint32_t gpus) {
  static const std::map<std::string, std::string> kModelOf = {
      {"cnn", "resnet50"}, {"bert", "bert_base"}, {"llm", "llm_1b"}};
  const workload::Catalog catalog = workload::DefaultCatalog();
  CorunSetup setup;
  // A process joins the daemon of its CUDA_MPS_PIPE_DIRECTORY at cuInit, before the arbiter
  // assigns its GPU (at registration): only a single GPU maps every function to its daemon.
  setup.gpus = {0};
  (void)gpus;
  for (const FunctionSpec& f : functions) {
    if (setup.kinds.count(f.kind) != 0) continue;
    const auto m = kModelOf.find(f.kind);
    if (m == kModelOf.end()) return workload::Fail("--corun: no catalog model for kind " + f.kind);
    const int i = catalog.Find(m->second);
    if (i < 0) return workload::Fail("--corun: the default catalog has no " + m->second);
    const workload::ModelSpec& model = catalog.models[static_cast<size_t>(i)];
    CorunSetup::Kind k;
    k.model = model.name;
    const double quarters = std::ceil(std::clamp(model.compute_demand, 0.0, 1.0) * 4.0 - 1e-9);
    k.share = static_cast<uint32_t>(std::clamp(quarters, 1.0, 4.0) * 25.0);
    k.demand = fmt::format("compute={},bandwidth={}",
                           static_cast<int>(std::lround(model.compute_demand * 100)),
                           static_cast<int>(std::lround(model.bandwidth_demand * 100)));
    setup.kinds[f.kind] = k;
  }
  return setup;
}

workload::Result<SharedRun> RunShared(const Environment& env, const std::vector<FunctionSpec>& functions,
                                      const CorunSetup* corun) {
  const DemoOptions& o = env.options;
  auto dir = MakeRunDir(env, corun != nullptr ? "gshare-corun" : "gshare");
  if (!dir.ok()) return workload::Fail(dir.status().message());
  RegistryGuard registry(fmt::format("/gshare-demo-{}-{}", getpid(), corun != nullptr ? "corun" : "shared"));
  const bool stop_gap = !o.simcuda_memory.empty() && !o.real_gpu;
  const std::vector<std::string> cuda_env = CudaEnvironment(
      env, fmt::format("{}x{}", o.gpus, stop_gap ? o.simcuda_memory : o.gpu_memory), registry.name());

  SharedRun result;
  result.event_ring_path = *dir + "/events";
  const std::string socket = *dir + "/arbiter.sock";
  SpawnSpec arbiter_spec;
  arbiter_spec.argv = {env.bin_dir + "/gshare-arbiter", "--socket", socket, "--summary",
                       *dir + "/arbiter-summary.json", "--event-ring", result.event_ring_path,
                       "--event-ring-capacity", "1048576", "--policy", o.policy, "--log-level", "info"};
  std::vector<std::string> options = {"slice=" + o.slice, "preempt_grace=" + o.preempt_grace};
  options.insert(options.end(), o.arbiter_options.begin(), o.arbiter_options.end());
  std::map<std::string, std::string> flags;  // a later --arbiter-option overrides the above
  for (const std::string& kv : options) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return workload::Fail("--arbiter-option " + kv + ": not KEY=VALUE");
    std::string key = kv.substr(0, eq);
    std::replace(key.begin(), key.end(), '_', '-');
    flags["--" + key] = kv.substr(eq + 1);
  }
  for (const auto& [flag, value] : flags) arbiter_spec.argv.insert(arbiter_spec.argv.end(), {flag, value});
  if (stop_gap) {
    arbiter_spec.argv.insert(arbiter_spec.argv.end(),
                             {"--gpu-memory", o.gpu_memory, "--gpu-count", std::to_string(o.gpus)});
  }
  if (o.real_gpu) {
    // The arbiter manages --gpu-memory of each real GPU (not the driver's total), so the
    // quotas exceed what it hands out and the functions really share and swap.
    std::string ordinals;
    for (uint32_t g = 0; g < o.gpus; ++g) ordinals += (g ? "," : "") + std::to_string(g);
    arbiter_spec.argv.insert(arbiter_spec.argv.end(),
                             {"--gpus", ordinals, "--gpu-memory", o.gpu_memory});
  }
  // GPU 0's MPS daemon's pipe directory (co-run run; its clients learn it from the share answer).
  std::string mps_pipe;
  if (corun != nullptr) {
    std::string ordinals;
    for (uint32_t g : corun->gpus) ordinals += (ordinals.empty() ? "" : ",") + std::to_string(g);
    const std::string mps_dir = *dir + "/mps";
    if (mkdir(mps_dir.c_str(), 0755) != 0 && errno != EEXIST)
      return workload::Fail("cannot create " + mps_dir + ": " + std::strerror(errno));
    arbiter_spec.argv.insert(arbiter_spec.argv.end(),
                             {"--corun-gpus", ordinals, "--mps-control",
                              o.real_gpu ? std::string("nvidia-cuda-mps-control")
                                         : env.bin_dir + "/simcuda-mps-control",
                              "--mps-dir", mps_dir});
    // The MPS clients' context memory the arbiter counts (docs/arbiter.md, "MPS context
    // memory"): on simcuda its 2 MiB per SM of the share (132 SMs, rounded up to whole SMs);
    // on a real GPU none, since the arbiter manages --gpu-memory of the GPU (1.5 GiB of an
    // H200's 140) and the contexts lie in the rest.
    // The same-address swap of MPS clients: checked SAFE on the H200 (tests/gpu/mps-check.sh,
    // 2026-12-04), and simcuda's VMM works the same for them. Without it an MPS client's quota
    // is pinned, and one large client would leave the GPU's other vGPUs too little room.
    arbiter_spec.argv.insert(
        arbiter_spec.argv.end(),
        {"--mps-context-memory", o.real_gpu ? "0" : "264MiB", "--mps-context-floor",
         o.real_gpu ? "0" : "2MiB", "--mps-swaps-verified", "true"});
    mps_pipe = fmt::format("{}/gpu{}/pipe", mps_dir, corun->gpus.front());
  }
  arbiter_spec.env = cuda_env;
  MpsQuitGuard mps_quit;  // declared before the arbiter: runs after the arbiter is stopped
  if (corun != nullptr && !o.real_gpu)
    mps_quit.Arm(env.bin_dir + "/simcuda-mps-control", mps_pipe, cuda_env, *dir + "/logs/mps-quit.log");
  arbiter_spec.stdout_path = *dir + "/logs/arbiter.out";
  arbiter_spec.stderr_path = *dir + "/logs/arbiter.log";
  auto arbiter = ChildProcess::Spawn(arbiter_spec);
  if (!arbiter.ok()) return workload::Fail(arbiter.status().message());
  for (int i = 0; access(socket.c_str(), F_OK) != 0; ++i) {
    if (!arbiter->Running() || i > 300)
      return workload::Fail("gshare-arbiter did not start:\n" + Tail(arbiter_spec.stderr_path, 5));
    std::this_thread::sleep_for(milliseconds(100));
  }
  if (corun != nullptr) {
    // The functions must find their daemon up at cuInit, or they run time-sliced (fail-open).
    for (int i = 0; access((mps_pipe + "/control").c_str(), F_OK) != 0; ++i) {
      if (!arbiter->Running() || i > 300)
        return workload::Fail("the arbiter's MPS daemon did not start (" + mps_pipe + "):\n" +
                              Tail(arbiter_spec.stderr_path, 5));
      std::this_thread::sleep_for(milliseconds(100));
    }
  }
  env.say(fmt::format("arbiter up ({}); starting {} functions under libgshare.so{}", socket, functions.size(),
                      corun != nullptr ? ", MPS clients of " + mps_pipe : ""));

  FleetOptions fo;
  const std::string log_dir = *dir + "/logs";
  fo.env = [&](size_t, const FunctionSpec& f) {
    std::vector<std::string> e = cuda_env;
    SetEnv(e, "LD_PRELOAD", env.lib_dir + "/libgshare.so");
    SetEnv(e, "GSHARE_ARBITER_SOCKET", socket);
    SetEnv(e, "GSHARE_VGPU_MEMORY", std::to_string(f.quota_bytes));
    SetEnv(e, "GSHARE_SLO_MS", fmt::format("{}", f.slo_ms));
    SetEnv(e, "GSHARE_FUNCTION", f.name);
    SetEnv(e, "GSHARE_LOG_FILE", log_dir + "/" + f.name + ".shim.log");
    SetEnv(e, "GSHARE_LOG_LEVEL", "info");
    if (corun != nullptr) {
      // No CUDA_MPS_* variable: the shim asks the arbiter before cuInit, and a co-run answer
      // names the GPU's daemon and the share (docs/arbiter.md, "Several marked GPUs"), as for
      // any function; the tenant declares only what its kernels use.
      SetEnv(e, "GSHARE_CORUN_DEMAND", corun->kinds.at(f.kind).demand);
    }
    return e;
  };
  auto fleet = StartFleet(env, functions, *dir, fo);
  if (!fleet.ok()) return workload::Fail(fleet.status().message());
  env.say(fmt::format("{} functions ready; replaying {:.0f} s of trace at {}x", functions.size(),
                      o.trace_seconds, o.time_compression));

  auto load = RunLoad(env, *dir, corun != nullptr ? "gshare-corun" : "gshare");
  if (!load.ok()) return workload::Fail(load.status().message());
  const uint64_t begin = load->begin_ns, end = load->end_ns;
  result.outcome = OutcomeOf(corun != nullptr ? "gshare-corun" : "gshare", std::move(*load));
  StopFleet(*fleet, result.outcome);
  const int arbiter_status = arbiter->Stop(seconds(15));
  if (arbiter_status != 0)
    result.outcome.problems.push_back(fmt::format("gshare-arbiter exited with status {}", arbiter_status));

  result.arbiter_summary = nlohmann::json::parse(ReadFile(*dir + "/arbiter-summary.json"), nullptr, false);
  if (result.arbiter_summary.is_discarded()) {
    result.outcome.problems.push_back("the arbiter wrote no summary");
    result.arbiter_summary = nlohmann::json::object();
  }
  auto events = ReadEventRing(result.event_ring_path);
  if (!events.ok()) return workload::Fail(events.status().message());
  result.usage = AccountGpuUsage(*events, begin, end, corun != nullptr);
  RunOutcome& out = result.outcome;
  out.gpus = o.gpus;
  out.gpu_seconds = result.usage.occupied_gpu_seconds;
  out.peak_gpus = result.usage.peak_gpus;
  out.swap_bytes = result.usage.swap_out_bytes + result.usage.swap_in_bytes;
  out.description = fmt::format("{} functions sharing {} {} GPUs of {} through gshare", functions.size(),
                                o.gpus, o.real_gpu ? "real" : "simulated", o.gpu_memory);
  return result;
}

workload::Result<RunOutcome> RunDedicated(const Environment& env, const std::vector<FunctionSpec>& functions) {
  const DemoOptions& o = env.options;
  auto dir = MakeRunDir(env, "dedicated");
  if (!dir.ok()) return workload::Fail(dir.status().message());
  RegistryGuard registry(fmt::format("/gshare-demo-{}-dedicated", getpid()));
  const std::vector<std::string> cuda_env =
      CudaEnvironment(env, fmt::format("{}x{}", functions.size(), o.gpu_memory), registry.name());
  FleetOptions fo;
  fo.env = [&](size_t, const FunctionSpec&) { return cuda_env; };
  fo.extra_args = [&](size_t i, const FunctionSpec&) {
    const size_t device = o.real_gpu ? i % o.gpus : i;
    return std::vector<std::string>{"--device", std::to_string(device)};
  };
  auto fleet = StartFleet(env, functions, *dir, fo);
  if (!fleet.ok()) return workload::Fail(fleet.status().message());
  env.say(fmt::format("baseline: {} functions ready, each alone on its own GPU, no shim; same load",
                      functions.size()));
  auto load = RunLoad(env, *dir, "dedicated");
  if (!load.ok()) return workload::Fail(load.status().message());
  RunOutcome out = OutcomeOf("dedicated", std::move(*load));
  StopFleet(*fleet, out);
  const auto n = static_cast<uint32_t>(o.real_gpu ? std::min<size_t>(functions.size(), o.gpus) : functions.size());
  out.gpus = n;
  out.peak_gpus = n;
  out.gpu_seconds = static_cast<double>(functions.size()) * out.window_s;
  out.description = o.real_gpu && functions.size() > o.gpus
                        ? fmt::format("{} functions without the shim, round-robin over {} real GPUs "
                                      "(not dedicated: fewer GPUs than functions)", functions.size(), o.gpus)
                        : fmt::format("{} functions without the shim, each alone on its own GPU of {}",
                                      functions.size(), o.gpu_memory);
  return out;
}

}  // namespace gshare::demo
