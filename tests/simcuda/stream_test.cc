// Tests of streams and events: in-order execution, the legacy default stream's synchronisation
// rules, per-thread default streams, event timing in simulated time, capture status.
#include <dirent.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace {

using StreamTest = simcuda_test::DriverTest;
using simcuda_test::StreamGate;

// Records the order in which host functions ran.
struct Log {
  std::mutex mu;
  std::string order;
  struct Entry {
    Log* log;
    char c;
  };
  std::vector<Entry*> entries;
  ~Log() {
    for (Entry* e : entries) delete e;
  }
  void* Mark(char c) {
    entries.push_back(new Entry{this, c});
    return entries.back();
  }
  static void CUDA_CB Append(void* p) {
    auto* e = static_cast<Entry*>(p);
    std::lock_guard<std::mutex> lock(e->log->mu);
    e->log->order += e->c;
  }
};

// Holds `first` behind a closed gate, queues a host function marking `a` on `first`, then one
// marking `b` on `second`; runs `while_closed()`, opens the gate, synchronises the context and
// returns the order in which the marks ran.
template <typename F>
std::string OrderBehindGate(CUstream first, char a, CUstream second, char b, F while_closed) {
  Log log;
  StreamGate gate;
  EXPECT_CU(gate.Close(first));
  EXPECT_CU(cuLaunchHostFunc(first, Log::Append, log.Mark(a)));
  EXPECT_CU(cuLaunchHostFunc(second, Log::Append, log.Mark(b)));
  while_closed();
  gate.Open();
  EXPECT_CU(cuCtxSynchronize());
  return log.order;
}

std::string OrderBehindGate(CUstream first, char a, CUstream second, char b) {
  return OrderBehindGate(first, a, second, b, [] {});
}

TEST_F(StreamTest, OperationsRunInOrderOnTheWorker) {
  CUstream s;
  ASSERT_CU(cuStreamCreate(&s, 0));
  Log log;
  StreamGate gate;
  ASSERT_CU(gate.Close(s));
  for (char c : std::string("abcdef")) ASSERT_CU(cuLaunchHostFunc(s, Log::Append, log.Mark(c)));
  EXPECT_CU_ERR(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  gate.Open();
  ASSERT_CU(cuStreamSynchronize(s));
  EXPECT_CU(cuStreamQuery(s));
  EXPECT_EQ(log.order, "abcdef");
  ASSERT_CU(cuStreamDestroy(s));
}

TEST_F(StreamTest, LegacyStreamWaitsForBlockingStreams) {
  CUstream a;
  ASSERT_CU(cuStreamCreate(&a, CU_STREAM_DEFAULT));
  EXPECT_EQ(OrderBehindGate(a, 'A', nullptr, 'L'), "AL");
  ASSERT_CU(cuStreamDestroy(a));
}

TEST_F(StreamTest, BlockingStreamsWaitForTheLegacyStream) {
  CUstream a;
  ASSERT_CU(cuStreamCreate(&a, CU_STREAM_DEFAULT));
  EXPECT_EQ(OrderBehindGate(CU_STREAM_LEGACY, 'L', a, 'A'), "LA");
  ASSERT_CU(cuStreamDestroy(a));
}

TEST_F(StreamTest, NonBlockingStreamsDoNotSynchroniseWithLegacy) {
  CUstream n;
  ASSERT_CU(cuStreamCreate(&n, CU_STREAM_NON_BLOCKING));
  unsigned flags = 0;
  ASSERT_CU(cuStreamGetFlags(n, &flags));
  EXPECT_EQ(flags, static_cast<unsigned>(CU_STREAM_NON_BLOCKING));
  EXPECT_EQ(OrderBehindGate(n, 'N', nullptr, 'L', [] {
              // Would deadlock if the legacy stream waited for `n`.
              EXPECT_CU(cuStreamSynchronize(nullptr));
            }),
            "LN");
  ASSERT_CU(cuStreamDestroy(n));
}

TEST_F(StreamTest, PerThreadDefaultStreamsAreDistinctPerThread) {
  unsigned long long mine = 0, other = 0, legacy = 0;
  ASSERT_CU(cuStreamGetId(CU_STREAM_PER_THREAD, &mine));
  ASSERT_CU(cuStreamGetId(CU_STREAM_LEGACY, &legacy));
  CUcontext ctx = ctx_;
  std::thread([&] {
    cuCtxSetCurrent(ctx);
    cuStreamGetId(CU_STREAM_PER_THREAD, &other);
    cuStreamSynchronize(CU_STREAM_PER_THREAD);
  }).join();
  EXPECT_NE(mine, 0u);
  EXPECT_NE(mine, other);
  EXPECT_NE(mine, legacy);
  EXPECT_CU(cuStreamSynchronize(CU_STREAM_PER_THREAD));
  EXPECT_CU_ERR(cuStreamDestroy(CU_STREAM_PER_THREAD), CUDA_ERROR_INVALID_HANDLE);
}

// Threads of this process (/proc/self/task entries).
int ThreadCount() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

TEST_F(StreamTest, ExitedThreadsPerThreadStreamWorkerIsGone) {
  ASSERT_CU(cuStreamSynchronize(nullptr));
  int before = ThreadCount();
  CUcontext ctx = ctx_;
  int during = 0;
  std::thread([&] {
    cuCtxSetCurrent(ctx);
    cuLaunchHostFunc(CU_STREAM_PER_THREAD, [](void*) {}, nullptr);
    cuStreamSynchronize(CU_STREAM_PER_THREAD);
    during = ThreadCount();
  }).join();
  EXPECT_EQ(during, before + 2);  // this thread and its per-thread stream's worker
  EXPECT_EQ(ThreadCount(), before);
}

TEST_F(StreamTest, StreamQueriesAndCallbacks) {
  CUstream s;
  ASSERT_CU(cuStreamCreateWithPriority(&s, 0, -3));
  int prio = 0;
  ASSERT_CU(cuStreamGetPriority(s, &prio));
  EXPECT_EQ(prio, -3);
  CUcontext c = nullptr;
  ASSERT_CU(cuStreamGetCtx(s, &c));
  EXPECT_EQ(c, ctx_);
  std::atomic<int> calls{0};
  auto cb = [](CUstream, CUresult status, void* p) {
    if (status == CUDA_SUCCESS) ++*static_cast<std::atomic<int>*>(p);
  };
  ASSERT_CU(cuStreamAddCallback(s, cb, &calls, 0));
  ASSERT_CU(cuStreamSynchronize(s));
  EXPECT_EQ(calls.load(), 1);
  ASSERT_CU(cuStreamDestroy(s));
  EXPECT_CU_ERR(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(StreamTest, EventsTimeACopyInSimulatedTime) {
  // test_main: link 4 GB/s, so 40 MB take exactly 10 simulated ms (the stream is kept busy by
  // a gate so that submission times do not matter).
  const size_t n = 40'000'000;
  std::vector<unsigned char> host(n, 1);
  CUdeviceptr d;
  ASSERT_CU(cuMemAlloc(&d, n));
  CUstream s;
  ASSERT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUevent e0, e1;
  ASSERT_CU(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  ASSERT_CU(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  float ms = 0;
  EXPECT_CU_ERR(cuEventElapsedTime(&ms, e0, e1), CUDA_ERROR_INVALID_HANDLE);  // not recorded
  StreamGate gate;
  ASSERT_CU(gate.Close(s));
  ASSERT_CU(cuEventRecord(e0, s));
  ASSERT_CU(cuMemcpyHtoDAsync(d, host.data(), n, s));
  ASSERT_CU(cuEventRecord(e1, s));
  EXPECT_CU_ERR(cuEventQuery(e1), CUDA_ERROR_NOT_READY);
  EXPECT_CU_ERR(cuEventElapsedTime(&ms, e0, e1), CUDA_ERROR_NOT_READY);
  gate.Open();
  ASSERT_CU(cuEventSynchronize(e1));
  EXPECT_CU(cuEventQuery(e1));
  ASSERT_CU(cuEventElapsedTime(&ms, e0, e1));
  EXPECT_NEAR(ms, 10.0, 0.01);
  ASSERT_CU(cuEventDestroy(e0));
  ASSERT_CU(cuEventDestroy(e1));
  ASSERT_CU(cuStreamDestroy(s));
  ASSERT_CU(cuMemFree(d));
}

TEST_F(StreamTest, StreamWaitEventOrdersAcrossStreams) {
  CUstream a, b;
  ASSERT_CU(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  ASSERT_CU(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  CUevent e;
  ASSERT_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  Log log;
  StreamGate gate;
  ASSERT_CU(gate.Close(a));
  ASSERT_CU(cuLaunchHostFunc(a, Log::Append, log.Mark('a')));
  ASSERT_CU(cuEventRecord(e, a));
  ASSERT_CU(cuStreamWaitEvent(b, e, 0));
  ASSERT_CU(cuLaunchHostFunc(b, Log::Append, log.Mark('b')));
  gate.Open();
  ASSERT_CU(cuStreamSynchronize(b));
  EXPECT_EQ(log.order, "ab");
  float ms;
  EXPECT_CU_ERR(cuEventElapsedTime(&ms, e, e), CUDA_ERROR_INVALID_HANDLE);  // timing disabled
  ASSERT_CU(cuEventDestroy(e));
  ASSERT_CU(cuStreamDestroy(a));
  ASSERT_CU(cuStreamDestroy(b));
}

TEST_F(StreamTest, CaptureStatusIsReportedAndWorkInvalidatesIt) {
  CUstream s;
  ASSERT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUstreamCaptureStatus st;
  ASSERT_CU(cuStreamIsCapturing(s, &st));
  EXPECT_EQ(st, CU_STREAM_CAPTURE_STATUS_NONE);
  ASSERT_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  ASSERT_CU(cuStreamIsCapturing(s, &st));
  EXPECT_EQ(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  cuuint64_t id = 0;
  ASSERT_CU(cuStreamGetCaptureInfo(s, &st, &id, nullptr, nullptr, nullptr, nullptr));
  EXPECT_EQ(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_NE(id, 0u);
  CUgraph g;
  EXPECT_CU_ERR(cuStreamEndCapture(s, &g), CUDA_ERROR_NOT_SUPPORTED);  // no graphs in simcuda
  ASSERT_CU(cuStreamIsCapturing(s, &st));
  EXPECT_EQ(st, CU_STREAM_CAPTURE_STATUS_NONE);
  ASSERT_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  Log log;
  EXPECT_CU_ERR(cuLaunchHostFunc(s, Log::Append, log.Mark('x')), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  ASSERT_CU(cuStreamIsCapturing(s, &st));
  EXPECT_EQ(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_CU_ERR(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_CU_ERR(cuStreamBeginCapture(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL),
                CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  ASSERT_CU(cuStreamSynchronize(s));
  EXPECT_EQ(log.order, "");
  ASSERT_CU(cuStreamDestroy(s));
}

}  // namespace
