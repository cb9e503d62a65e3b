// Benchmarks of the scheduler and the simulator on a seeded Azure-like workload of 1,000
// functions (one hour: ~1.3 M requests; 10 minutes for the per-policy decision costs):
//   BM_DecisionCost/<policy>: microseconds inside Policy::Handle per event (counter
//     us_per_event), with the ratio to keepalive's cost measured in the same process
//     (ratio_to_keepalive);
//   BM_Replay: the whole simulation of the hour under aggressive (requests per CPU second and
//     per wall second; the target is >= 100,000, i.e. 1 M requests in <= 10 s).
#include <benchmark/benchmark.h>

#include <chrono>
#include <map>
#include <string>

#include "gshare/sim/engine.h"
#include "gshare/sim/inputs.h"

namespace {

using namespace gshare;

const sim::SimWorkload& Workload(double duration_s) {
  static std::map<double, sim::SimWorkload>* cache = new std::map<double, sim::SimWorkload>();
  auto it = cache->find(duration_s);
  if (it == cache->end()) {
    sim::InputOptions in;
    in.synthetic = true;
    in.functions = 1000;
    in.duration_s = duration_s;
    in.seed = 1;
    it = cache->emplace(duration_s, sim::LoadInputs(in).workload).first;
  }
  return it->second;
}

sim::SimOptions Node() {
  sim::SimOptions o;
  o.gpus.assign(1000, policy::GpuSpec{});
  o.record_timeline = false;
  return o;
}

double MeasureUsPerEvent(const std::string& name, uint64_t* events) {
  const sim::SimOptions node = Node();
  policy::PolicyConfig c;
  c.gpus = node.gpus;
  auto made = policy::Make(name, c);
  const sim::RunResult r = sim::Simulate(Workload(600), node, *made.policy, true);
  *events = r.events;
  return r.events ? r.policy_seconds * 1e6 / static_cast<double>(r.events) : 0.0;
}

void BM_DecisionCost(benchmark::State& state, const std::string& name) {
  double us = 0, baseline = 0;
  uint64_t events = 0, ignored = 0;
  for (auto _ : state) {
    us = MeasureUsPerEvent(name, &events);
    baseline = MeasureUsPerEvent("keepalive", &ignored);
  }
  state.counters["us_per_event"] = us;
  state.counters["events"] = static_cast<double>(events);
  state.counters["functions"] = static_cast<double>(Workload(600).functions.size());
  state.counters["ratio_to_keepalive"] = baseline > 0 ? us / baseline : 0.0;
}
BENCHMARK_CAPTURE(BM_DecisionCost, aggressive, std::string("aggressive"))
    ->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_DecisionCost, dual_queue, std::string("dual-queue"))
    ->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_DecisionCost, proxy_swap, std::string("proxy-swap"))
    ->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_Replay(benchmark::State& state) {
  const sim::SimWorkload& w = Workload(3600);
  const sim::SimOptions node = Node();
  policy::PolicyConfig c;
  c.gpus = node.gpus;
  uint64_t requests = 0;
  double wall = 0;
  for (auto _ : state) {
    auto made = policy::Make("aggressive", c);
    const auto t0 = std::chrono::steady_clock::now();
    const sim::RunResult r = sim::Simulate(w, node, *made.policy);
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    requests += r.requests;
    benchmark::DoNotOptimize(r.on_time);
  }
  // On a shared machine the wall clock includes other processes' time: both are reported.
  state.counters["requests_per_cpu_second"] =
      benchmark::Counter(static_cast<double>(requests), benchmark::Counter::kIsRate);
  state.counters["requests_per_wall_second"] = wall > 0 ? static_cast<double>(requests) / wall : 0;
  state.counters["requests"] = static_cast<double>(w.requests.size());
}
BENCHMARK(BM_Replay)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
