// The shim's fast-path cost in isolation: cuLaunchKernel and cuMemcpyHtoDAsync called directly
// on a do-nothing driver (fake_driver.cc) and through libgshare.so's hooks wrapping that same
// driver, in one process and one run. Counters (per call, from the thread's CPU clock so that
// preemption on a loaded machine does not count): direct_ns, shim_ns, added_ns (the target is
// <= 50 ns), ratio. Besides launches and copies: the other submissions of an inference
// request (device-to-host copy, memset, event record, stream wait) and a whole BERT-like request
// (one upload, 47 launches on a stream, one download: what bench/samples' bert submits), whose
// added_ns is the shim's CPU cost per request.
//
//   hook_overhead_bench --benchmark_format=json
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <benchmark/benchmark.h>

#include "driver_table.h"
#include "same_run_compare.h"

namespace {

using Table = gshare::bench::DriverTable;

using Setup = gshare::bench::DirectAndShim;

Setup& GetSetup() {
  static Setup s = [] {
    Setup r = gshare::bench::OpenDirectAndShim(GSHARE_FAKE_DRIVER, GSHARE_PRELOAD_LIB);
    for (const Table* t : {&r.direct, &r.shim}) {
      r.ok = r.ok && t->launch && t->htod_async && t->dtoh_async && t->memset_async &&
             t->event_record && t->wait_event;
    }
    return r;
  }();
  return s;
}

constexpr int kBatch = 256;

template <typename Op>
void Compare(benchmark::State& state, Op op) {
  gshare::bench::CompareOrSkip(state, GetSetup(), kBatch, op, [] {});
}

void BM_LaunchKernelHook(benchmark::State& state) {
  Compare(state, [](const Table& t) {
    benchmark::DoNotOptimize(t.launch(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
  });
}
BENCHMARK(BM_LaunchKernelHook)->UseRealTime();

// The same on an explicit stream (what inference servers use): the in-flight tracker's cached
// path (a thread-local compare) instead of the default stream's cuCtxGetCurrent.
void BM_LaunchKernelOnStreamHook(benchmark::State& state) {
  static const auto stream = reinterpret_cast<CUstream>(static_cast<uintptr_t>(0x5000));
  Compare(state, [](const Table& t) {
    benchmark::DoNotOptimize(t.launch(nullptr, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr));
  });
}
BENCHMARK(BM_LaunchKernelOnStreamHook)->UseRealTime();

void BM_MemcpyHtoDAsyncHook(benchmark::State& state) {
  static int value = 1;
  Compare(state, [](const Table& t) {
    benchmark::DoNotOptimize(t.htod_async(0, &value, sizeof(value), nullptr));
  });
}
BENCHMARK(BM_MemcpyHtoDAsyncHook)->UseRealTime();

const auto kStream = reinterpret_cast<CUstream>(static_cast<uintptr_t>(0x5000));
const auto kEvent = reinterpret_cast<CUevent>(static_cast<uintptr_t>(0xE000));

void BM_MemcpyDtoHAsyncHook(benchmark::State& state) {
  static int value = 0;
  Compare(state, [](const Table& t) {
    benchmark::DoNotOptimize(t.dtoh_async(&value, 0x1000, sizeof(value), kStream));
  });
}
BENCHMARK(BM_MemcpyDtoHAsyncHook)->UseRealTime();

void BM_MemsetD32AsyncHook(benchmark::State& state) {
  Compare(state, [](const Table& t) {
    benchmark::DoNotOptimize(t.memset_async(0x1000, 0, 16, kStream));
  });
}
BENCHMARK(BM_MemsetD32AsyncHook)->UseRealTime();

void BM_EventRecordHook(benchmark::State& state) {
  Compare(state, [](const Table& t) { benchmark::DoNotOptimize(t.event_record(kEvent, kStream)); });
}
BENCHMARK(BM_EventRecordHook)->UseRealTime();

void BM_StreamWaitEventHook(benchmark::State& state) {
  Compare(state, [](const Table& t) { benchmark::DoNotOptimize(t.wait_event(kStream, kEvent, 0)); });
}
BENCHMARK(BM_StreamWaitEventHook)->UseRealTime();

// One BERT-like request's submissions (samples/bert: an upload, 47 launches, a download), per
// request: added_ns is what the shim's hooks cost one request on the CPU.
void BM_BertLikeRequestHooks(benchmark::State& state) {
  static int ids[64] = {};
  static float out[256] = {};
  gshare::bench::CompareOrSkip(state, GetSetup(), kBatch / 32, [](const Table& t) {
    benchmark::DoNotOptimize(t.htod_async(0x1000, ids, sizeof(ids), kStream));
    for (int k = 0; k < 47; ++k)
      benchmark::DoNotOptimize(t.launch(nullptr, 4, 1, 1, 128, 1, 1, 0, kStream, nullptr, nullptr));
    benchmark::DoNotOptimize(t.dtoh_async(out, 0x2000, sizeof(out), kStream));
  }, [] {});
}
BENCHMARK(BM_BertLikeRequestHooks)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  setenv("GSHARE_REAL_LIBCUDA", GSHARE_FAKE_DRIVER, 1);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
