// CompareDirectAndShim: the measuring loop shared by the preload benchmarks. Each benchmark
// iteration times one batch of calls on the direct table and one on the shim's, on the calling
// thread's CPU clock (preemption on a loaded machine does not count), and reports per-call
// direct_ns, shim_ns, added_ns and ratio, all from the same run; and CompareOrSkip, the same
// for a benchmark's set-up that may have failed.
#pragma once

#include <time.h>

#include <cstdint>

#include <benchmark/benchmark.h>

namespace gshare::bench {

inline double ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// `op(table)` makes one call; `after()` runs untimed after each batch (e.g. a stream sync).
template <typename Table, typename Op, typename After>
void CompareDirectAndShim(benchmark::State& state, const Table& direct, const Table& shim,
                          int batch, Op op, After after) {
  double direct_ns = 0;
  double shim_ns = 0;
  int64_t calls = 0;
  for (auto _ : state) {
    for (const bool through_shim : {false, true}) {
      const Table& t = through_shim ? shim : direct;
      const double start = ThreadCpuNs();
      for (int i = 0; i < batch; ++i) op(t);
      (through_shim ? shim_ns : direct_ns) += ThreadCpuNs() - start;
      after();
    }
    calls += batch;
  }
  state.SetItemsProcessed(calls * 2);
  state.counters["direct_ns"] = direct_ns / static_cast<double>(calls);
  state.counters["shim_ns"] = shim_ns / static_cast<double>(calls);
  state.counters["added_ns"] = (shim_ns - direct_ns) / static_cast<double>(calls);
  state.counters["ratio"] = shim_ns / direct_ns;
}

// A benchmark's set-up `s` (fields: bool ok, Table direct, Table shim): CompareDirectAndShim on
// its two tables, or the benchmark skipped with an error when the set-up failed.
template <typename Setup, typename Op, typename After>
void CompareOrSkip(benchmark::State& state, const Setup& s, int batch, Op op, After after) {
  if (!s.ok) {
    state.SkipWithError("set-up failed");
    return;
  }
  CompareDirectAndShim(state, s.direct, s.shim, batch, op, after);
}

}  // namespace gshare::bench
