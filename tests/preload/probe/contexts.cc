// preload_probe's contexts mode: an unmodified driver-API program that switches its current
// context in every way the driver offers while it submits to the legacy default stream, so a
// test can check (through the shim's control socket) that each submission is tracked in the
// context that was current when it was made. At start it retains the primary context and makes
// it current as the CUDA runtime does (cuDevicePrimaryCtxRetain + cuCtxSetCurrent), creates the
// contexts A..E (each cuCtxCreate, then cuCtxPopCurrent) and prints "ready". Then commands on
// stdin, each answered "ok" (or "fail <what> <CUresult>"):
//   "set <X>" / "push <X>" / "pop"   cuCtxSetCurrent / cuCtxPushCurrent / cuCtxPopCurrent
//                                     (X: P = the primary context, A..E)
//   "create <X>"                      a new context X (cuCtxCreate: current now)
//   "destroy <X>"                     cuCtxDestroy(X) (pops it when it is current)
//   "submit [ms]"                     a host function on the legacy default stream (null) of the
//                                     current context that sleeps ms (default 0) and then counts
//                                     itself done; returns at once
//   "sync"                            cuCtxSynchronize of the current context
//   "done"                            answers "done <host functions finished>"
//   "thread-cycle-primary"            another thread releases the primary context (the last
//                                     reference: it is torn down) and retains it again (the same
//                                     handle, active again)
//   "thread-submit <X> [ms]"          another thread makes X current, submits there and waits
//                                     for it (cuCtxSynchronize), joined
//   "quit"
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "driver.h"
#include "modes.h"

namespace gshare::probe {
namespace {

std::atomic<int> g_done{0};

void CUDA_CB SleepThenCount(void* data) {
  const auto ms = reinterpret_cast<uintptr_t>(data);
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  g_done.fetch_add(1);
}

void Answer(const std::string& what, CUresult r) {
  if (r == CUDA_SUCCESS) {
    std::printf("ok\n");
  } else {
    std::printf("fail %s %d\n", what.c_str(), static_cast<int>(r));
  }
  std::fflush(stdout);
}

CUresult Submit(uintptr_t ms) {
  return cuLaunchHostFunc(nullptr, &SleepThenCount, reinterpret_cast<void*>(ms));
}

}  // namespace

int Contexts() {
  if (CUresult r = cuInit(0); r != CUDA_SUCCESS) return Fail("init", r);
  CUdevice dev = 0;
  if (CUresult r = cuDeviceGet(&dev, 0); r != CUDA_SUCCESS) return Fail("device", r);
  std::map<std::string, CUcontext> ctx;
  if (CUresult r = cuDevicePrimaryCtxRetain(&ctx["P"], dev); r != CUDA_SUCCESS) {
    return Fail("retain", r);
  }
  if (CUresult r = cuCtxSetCurrent(ctx["P"]); r != CUDA_SUCCESS) return Fail("set-primary", r);
  for (const char* name : {"A", "B", "C", "D", "E"}) {
    if (CUresult r = cuCtxCreate(&ctx[name], nullptr, 0, dev); r != CUDA_SUCCESS) return Fail("create", r);
    CUcontext popped = nullptr;
    if (CUresult r = cuCtxPopCurrent(&popped); r != CUDA_SUCCESS) return Fail("pop", r);
  }
  CUdeviceptr block = 0;  // something for a swap-out to move
  if (CUresult r = cuMemAlloc(&block, 1 << 20); r != CUDA_SUCCESS) return Fail("alloc", r);
  std::printf("ready\n");
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string verb, arg;
    in >> verb >> arg;
    if (verb == "quit") break;
    if (verb == "set") {
      Answer(line, cuCtxSetCurrent(ctx[arg]));
    } else if (verb == "push") {
      Answer(line, cuCtxPushCurrent(ctx[arg]));
    } else if (verb == "pop") {
      CUcontext popped = nullptr;
      Answer(line, cuCtxPopCurrent(&popped));
    } else if (verb == "create") {
      Answer(line, cuCtxCreate(&ctx[arg], nullptr, 0, dev));
    } else if (verb == "destroy") {
      Answer(line, cuCtxDestroy(ctx[arg]));
    } else if (verb == "submit") {
      Answer(line, Submit(arg.empty() ? 0 : std::stoul(arg)));
    } else if (verb == "sync") {
      Answer(line, cuCtxSynchronize());
    } else if (verb == "done") {
      std::printf("done %d\n", g_done.load());
      std::fflush(stdout);
    } else if (verb == "thread-cycle-primary") {
      CUresult r = CUDA_SUCCESS;
      std::thread t([&] {
        r = cuDevicePrimaryCtxRelease(dev);
        CUcontext again = nullptr;
        if (r == CUDA_SUCCESS) r = cuDevicePrimaryCtxRetain(&again, dev);
        if (r == CUDA_SUCCESS && again != ctx["P"]) r = CUDA_ERROR_UNKNOWN;  // not the same handle
      });
      t.join();
      Answer(line, r);
    } else if (verb == "thread-submit") {
      std::string ms;
      in >> ms;
      CUresult r = CUDA_SUCCESS;
      std::thread t([&] {
        r = cuCtxSetCurrent(ctx[arg]);
        if (r == CUDA_SUCCESS) r = Submit(ms.empty() ? 0 : std::stoul(ms));
        // Waited for there: "sync" on the main thread synchronises only its own current
        // context, and "done" must count this work (it raced the count before).
        if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
      });
      t.join();
      Answer(line, r);
    } else {
      Answer(line, CUDA_ERROR_INVALID_VALUE);
    }
  }
  return 0;
}

}  // namespace gshare::probe
