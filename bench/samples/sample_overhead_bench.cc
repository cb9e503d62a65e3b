// The shim's overhead on a whole inference request: two servers of the same sample (same
// weights), one under LD_PRELOAD=libgshare.so registered with a real gshare-arbiter (alone on
// its GPU: it never waits for another tenant nor swaps, but gives the token back after each
// request's idle gap and asks the arbiter again on the next), one without the shim. Each
// benchmark iteration sends one request to each, alternating which goes first, over keep-alive
// loopback connections, and times them; counters report both p50s (ms),
// ratio_p50 = shim / plain, so the ratio comes from one run under the same machine load, and
// ratio_paired_p50 = the median of the per-pair ratios (robust to load that drifts mid-run).
//
//   build/bin/sample_overhead_bench --benchmark_format=json [--real-gpu] [--standalone] [--no-lease]
//
// --standalone runs the shimmed server without an arbiter (quota only, no time slicing), which
// separates the shim's own cost from the token round trips through the arbiter. --no-lease
// runs the arbiter with `--lease off`: every request after an idle gap asks the arbiter for the
// token again (the behaviour before the sole-tenant lease). The arbiter's counters are reported:
// grants and lease_takes (with the lease, nearly every request after the first takes it:
// lease_takes ~ grants - 1; without it, 0).
//
// On simcuda (default) the processes get SIMCUDA_DEVICES=2x4GiB and a private registry. With
// --real-gpu both servers use device 0 (a one-GPU host); requests are sent one at a time, so
// the two never run at once, and the shimmed one is still alone in its arbiter.
#include <benchmark/benchmark.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "gshare/demo/child_process.h"
#include "gshare/demo/fleet.h"

namespace dm = gshare::demo;

namespace {

bool g_real_gpu = false;
bool g_standalone = false;
bool g_no_lease = false;
const std::string kBuild = GSHARE_BUILD_DIR;

// One request body per kind, small and fixed (the samples' documented input shapes).
std::string Body(const std::string& kind) {
  nlohmann::json input;
  if (kind == "cnn") {
    std::vector<float> image(3 * 32 * 32);
    for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<float>(i % 17) / 17.0f;
    input = {{"name", "image"}, {"shape", {1, 3, 32, 32}}, {"datatype", "FP32"}, {"data", image}};
    return nlohmann::json{{"inputs", {input}}}.dump();
  }
  std::vector<int> ids(kind == "bert" ? 16 : 8);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int>(i * 37 + 5);
  input = {{"name", "input_ids"}, {"shape", {1, ids.size()}}, {"datatype", "INT32"}, {"data", ids}};
  nlohmann::json inputs = {input};
  if (kind == "llm")
    inputs.push_back({{"name", "max_tokens"}, {"shape", {1}}, {"datatype", "INT32"}, {"data", {8}}});
  return nlohmann::json{{"inputs", inputs}}.dump();
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The arbiter and the two servers of one kind; everything stopped in the destructor.
class Setup {
 public:
  explicit Setup(const std::string& kind) {
    char tmpl[] = "/tmp/gshare-overhead-XXXXXX";
    dir_ = mkdtemp(tmpl);
    registry_ = fmt::format("/gshare-overhead-{}-{}", getpid(), kind);
    std::vector<std::string> env = dm::CurrentEnvironment();
    if (!g_real_gpu) {
      dm::SetEnv(env, "LD_LIBRARY_PATH", kBuild + "/simcuda-lib");
      dm::SetEnv(env, "SIMCUDA_DEVICES", "2x4GiB");
      dm::SetEnv(env, "SIMCUDA_REGISTRY", registry_);
      dm::SetEnv(env, "SIMCUDA_KERNELS", kBuild + "/lib/libsimcuda_kernels.so");
    }
    const std::string socket = dir_ + "/arbiter.sock";
    std::vector<std::string> arbiter_args = {kBuild + "/bin/gshare-arbiter", "--socket", socket,
                                             "--gpus", "0", "--log-level", "warn", "--summary",
                                             dir_ + "/summary.json"};
    if (g_no_lease) arbiter_args.insert(arbiter_args.end(), {"--lease", "off"});
    auto arbiter = dm::ChildProcess::Spawn({arbiter_args, env, "", dir_ + "/arbiter.log"});
    if (!arbiter.ok()) {
      error_ = arbiter.status().message();
      return;
    }
    arbiter_ = std::move(*arbiter);
    for (int i = 0; access(socket.c_str(), F_OK) != 0 && i < 300; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::vector<dm::FunctionSpec> specs = {{kind + "-shim", kind, 1, 2ull << 30, 1000},
                                           {kind + "-plain", kind, 1, 0, 1000}};
    dm::FleetOptions fo;
    fo.bin_dir = kBuild + "/bin";
    fo.log_dir = dir_;
    fo.env = [&](size_t i, const dm::FunctionSpec& f) {
      std::vector<std::string> e = env;
      if (i == 0) {
        dm::SetEnv(e, "LD_PRELOAD", kBuild + "/lib/libgshare.so");
        if (!g_standalone) dm::SetEnv(e, "GSHARE_ARBITER_SOCKET", socket);
        dm::SetEnv(e, "GSHARE_VGPU_MEMORY", std::to_string(f.quota_bytes));
        dm::SetEnv(e, "GSHARE_FUNCTION", f.name);
        dm::SetEnv(e, "GSHARE_SLO_MS", "1000");
      }
      return e;
    };
    // The shim's vGPU lives on device 0; the plain server gets device 1 (its own GPU).
    fo.extra_args = [](size_t i, const dm::FunctionSpec&) {
      return std::vector<std::string>{"--device", i == 0 || g_real_gpu ? "0" : "1"};
    };
    fo.ready_timeout = std::chrono::seconds(120);
    auto fleet = dm::Fleet::Start(specs, fo);
    if (!fleet.ok()) {
      error_ = fleet.status().message();
      return;
    }
    fleet_ = std::make_unique<dm::Fleet>(std::move(*fleet));
    for (size_t i = 0; i < 2; ++i) {
      clients_[i] = std::make_unique<httplib::Client>("127.0.0.1", fleet_->ports()[i]);
      clients_[i]->set_read_timeout(60, 0);
      clients_[i]->set_tcp_nodelay(true);
      clients_[i]->set_keep_alive(true);
      paths_[i] = "/v2/models/" + specs[i].name + "/infer";
    }
  }
  ~Setup() {
    if (fleet_) fleet_->StopAll(std::chrono::seconds(10));
    arbiter_.Stop(std::chrono::seconds(10));
    shm_unlink(registry_.c_str());
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Setup(const Setup&) = delete;
  Setup& operator=(const Setup&) = delete;

  const std::string& error() const { return error_; }

  // Stops the arbiter (the shimmed server then runs stand-alone) and returns its summary
  // (null if it wrote none).
  nlohmann::json StopArbiter() {
    arbiter_.Stop(std::chrono::seconds(10));
    return nlohmann::json::parse(ReadAll(dir_ + "/summary.json"), nullptr, false);
  }

  // Sends one request to server i (0 shim, 1 plain); returns its latency in ms, or -1.
  double Request(size_t i, const std::string& body) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = clients_[i]->Post(paths_[i], body, "application/json");
    const auto t1 = std::chrono::steady_clock::now();
    if (!r || r->status != 200) return -1;
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
  }

 private:
  std::string dir_, registry_, error_;
  dm::ChildProcess arbiter_;
  std::unique_ptr<dm::Fleet> fleet_;
  std::unique_ptr<httplib::Client> clients_[2];
  std::string paths_[2];
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

void BM_SampleRequest(benchmark::State& state, const std::string& kind) {
  Setup setup(kind);
  if (!setup.error().empty()) {
    state.SkipWithError(setup.error().c_str());
    return;
  }
  const std::string body = Body(kind);
  for (int i = 0; i < 10; ++i) {  // warm-up: connections, first launches, page faults
    if (setup.Request(0, body) < 0 || setup.Request(1, body) < 0) {
      state.SkipWithError("a warm-up request failed");
      return;
    }
  }
  std::vector<double> shim, plain;
  bool shim_first = true;
  for (auto _ : state) {
    double a = 0, b = 0;
    if (shim_first) {
      a = setup.Request(0, body);
      b = setup.Request(1, body);
    } else {
      b = setup.Request(1, body);
      a = setup.Request(0, body);
    }
    shim_first = !shim_first;
    if (a < 0 || b < 0) {
      state.SkipWithError("a request failed");
      return;
    }
    shim.push_back(a);
    plain.push_back(b);
  }
  const double ps = Median(shim), pp = Median(plain);
  state.counters["p50_shim_ms"] = ps;
  state.counters["p50_plain_ms"] = pp;
  state.counters["ratio_p50"] = pp > 0 ? ps / pp : 0;
  // The median of the per-pair ratios: each pair ran back to back under the same machine load,
  // so load that drifts during the run (other processes on a shared machine) cancels out.
  std::vector<double> ratios;
  for (size_t i = 0; i < shim.size(); ++i)
    if (plain[i] > 0) ratios.push_back(shim[i] / plain[i]);
  state.counters["ratio_paired_p50"] = Median(ratios);
  state.counters["pairs"] = static_cast<double>(ratios.size());
  if (!g_standalone) {
    const nlohmann::json summary = setup.StopArbiter();
    if (summary.is_object()) {
      state.counters["arbiter_grants"] = summary.value("grants", 0.0);
      state.counters["arbiter_lease_takes"] = summary.value("lease_takes", 0.0);
    }
  }
}

}  // namespace

BENCHMARK_CAPTURE(BM_SampleRequest, cnn, std::string("cnn"))->Iterations(300)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_SampleRequest, bert, std::string("bert"))->Iterations(300)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_SampleRequest, llm, std::string("llm"))->Iterations(200)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  for (int i = 1; i < argc;) {
    bool* flag = std::strcmp(argv[i], "--real-gpu") == 0     ? &g_real_gpu
                 : std::strcmp(argv[i], "--standalone") == 0 ? &g_standalone
                 : std::strcmp(argv[i], "--no-lease") == 0   ? &g_no_lease
                                                             : nullptr;
    if (flag == nullptr) {
      ++i;
      continue;
    }
    *flag = true;
    for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
    --argc;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
