// libgshare.so in real processes on simcuda: every way of reaching the driver gets the hooks
// (quota, totals, free-memory movement), malformed configuration, fork, same-address swap
// through the control socket, and sample kernels identical with and without the shim.
#include <cuda.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.h"
#include "shim_test.h"
#include "swap_probe.h"

namespace gshare::test {
namespace {

class ReachDriver : public ShimTest, public ::testing::WithParamInterface<const char*> {};

// The test name of a way of reaching the driver ("procaddr-ptds" -> "procaddr_ptds").
std::string WayName(const ::testing::TestParamInfo<const char*>& param_info) {
  std::string n = param_info.param;
  for (char& c : n) {
    if (c == '-') c = '_';
  }
  return n;
}

TEST_P(ReachDriver, QuotaTotalsAndFreeMovement) {
  std::string err;
  const auto kv = RunKeyValues({GSHARE_PROBE, "totals", GetParam(), "64"}, Env(true), &err);
  ASSERT_EQ(S(kv, "exit"), "0") << S(kv, "error") << "\n" << err;
  EXPECT_EQ(err, "") << "the shim must stay silent unless asked";
  EXPECT_EQ(S(kv, "mem_alloc_fn").rfind("libgshare.so:cuMemAlloc_v2", 0), 0u)
      << S(kv, "mem_alloc_fn");
  const bool ptds = std::string(GetParam()) == "procaddr-ptds";
  ExpectValues(kv, {
                       {"total", N(kGiB)},
                       {"device_total", N(kGiB)},
                       {"free_start", N(kGiB)},
                       {"free_after_first", N(kGiB - 64 * kMiB)},
                       {"allocations", "16"},  // 16 x 64 MiB fill the 1 GiB quota exactly
                       {"refusal", N(CUDA_ERROR_OUT_OF_MEMORY)},
                       {"free_at_refusal", "0"},
                       {"free_monotonic", "1"},
                       {"free_end", N(kGiB)},
                       {"memcpy_htod_async_fn", ptds ? "libgshare.so:cuMemcpyHtoDAsync_v2_ptsz"
                                                     : "libgshare.so:cuMemcpyHtoDAsync_v2"},
                       {"launch_kernel_fn",
                        ptds ? "libgshare.so:cuLaunchKernel_ptsz" : "libgshare.so:cuLaunchKernel"},
                   });
}

INSTANTIATE_TEST_SUITE_P(Ways, ReachDriver,
                         ::testing::Values("linked", "dlsym", "procaddr", "procaddr-ptds"),
                         WayName);

// On two simulated GPUs with GSHARE_DEVICE=1 every way of reaching the driver sees one device,
// GPU 1: its context, its allocation and its kernel are there; the other GPU is hidden from the
// PCI bus id lookup and the peer queries. Calls naming the device by a literal 0 — a CUdevice
// argument (attributes, primary context, default pool, cuCtxCreate) or a memory location (pool,
// advice, prefetch) — reach GPU 1 (which has more SMs than GPU 0); naming GPU 2 is refused
// (also as a batch copy's location hint or a graph allocation node's pool location).
class DeviceView : public ShimTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(DeviceView, OneDeviceTheConfiguredGpu) {
  auto env = Env(true);
  env["SIMCUDA_DEVICES"] = "4GiB:sms=100,4GiB:sms=132";
  env["GSHARE_DEVICE"] = "1";
  std::string err;
  const auto kv = RunKeyValues({GSHARE_PROBE, "devices", GetParam()}, env, &err);
  ASSERT_EQ(S(kv, "exit"), "0") << S(kv, "error") << "\n" << err;
  EXPECT_EQ(err, "");
  const std::string invalid_device = N(CUDA_ERROR_INVALID_DEVICE);
  ExpectValues(kv, {
      {"count_fn", "libgshare.so:cuDeviceGetCount"},
      {"device_get_fn", "libgshare.so:cuDeviceGet"},
      {"count_before_init", N(CUDA_ERROR_NOT_INITIALIZED)},
      {"count", "1"},
      {"device", "1"},
      {"device1", invalid_device},
      {"ctx_device", "1"},
      {"pci_self", "0:1"},
      {"pci_other", invalid_device},
      {"peer_other", invalid_device},
      {"p2p_other", invalid_device},
      {"ptr_ordinal", "1"},
      {"htod", "0"},
      {"kernel", "0"},
      {"sync", "0"},
      {"dtoh", "0"},
      {"result_ok", "1"},
      {"vmm", "0"},
      {"vmm_ok", "1"},
      {"vmm_ordinal", "1"},
      {"vmm_other", invalid_device},
      {"attr0", "0"},
      {"attr_sms0", "132"},
      {"attr2", invalid_device},
      {"primary0_same", "1"},
      {"default_pool0_same", "1"},
      {"ctx0", "0"},
      {"ctx0_device", "1"},
      {"ctx0_ptr_ordinal", "1"},
      {"ctx0_result_ok", "1"},
      {"ctx2", invalid_device},
      {"pool0", "0"},
      {"pool0_current", "1"},
      {"pool0_ptr_ordinal", "1"},
      {"pool2", invalid_device},
      {"advise0", "0"},
      {"prefetch0", "0"},
      {"prefetch_sync", "0"},
      {"advise2", invalid_device},
      {"prefetch2", invalid_device},
      {"advise_host", "0"},
      {"batch_hint2", invalid_device},
      {"batch3d_hint2", invalid_device},
      {"graph_alloc2", invalid_device},
      {"graph_node2", invalid_device},
  });
}

INSTANTIATE_TEST_SUITE_P(Ways, DeviceView,
                         ::testing::Values("linked", "dlsym", "procaddr", "procaddr-ptds"),
                         WayName);

// The default device is GPU 0; without the shim the program sees both GPUs; a device ordinal
// the driver does not have fails cuInit.
TEST_F(ShimTest, DeviceViewDefaultsAndWithoutTheShim) {
  auto env = Env(true);
  env["SIMCUDA_DEVICES"] = "2x4GiB";
  auto kv = RunKeyValues({GSHARE_PROBE, "devices", "linked"}, env);
  ASSERT_EQ(S(kv, "exit"), "0") << S(kv, "error");
  ExpectValues(kv, {{"count", "1"},
                   {"device", "0"},
                   {"peer_other", N(CUDA_ERROR_INVALID_DEVICE)},
                   {"attr2", N(CUDA_ERROR_INVALID_DEVICE)},
                   {"ctx0_device", "0"},
                   {"pool0_current", "1"},
                   {"ptr_ordinal", "0"},
                   {"result_ok", "1"},
                   {"vmm_ok", "1"},
                   {"vmm_ordinal", "0"}});
  kv = RunKeyValues({GSHARE_PROBE, "devices", "linked"}, [&] {
    auto plain = env;
    plain["LD_PRELOAD"] = "";
    return plain;
  }());
  ASSERT_EQ(S(kv, "exit"), "0") << S(kv, "error");
  ExpectValues(kv, {{"count", "2"}, {"device1", "0"}, {"peer_other", "0"}});
  env["GSHARE_DEVICE"] = "2";
  kv = RunKeyValues({GSHARE_PROBE, "init"}, env);
  EXPECT_EQ(U(kv, "init"), static_cast<uint64_t>(CUDA_ERROR_INVALID_DEVICE));
}

TEST_F(ShimTest, WithoutTheShimTheProbeSeesTheDevice) {
  const auto kv = RunKeyValues({GSHARE_PROBE, "totals", "procaddr", "1024"}, Env(false));
  ASSERT_EQ(S(kv, "exit"), "0") << S(kv, "error");
  EXPECT_EQ(U(kv, "total"), 4 * kGiB);
  EXPECT_EQ(S(kv, "mem_alloc_fn").find("libgshare"), std::string::npos);
}

TEST_F(ShimTest, SmallQuotaWithUnits) {
  const auto kv = RunKeyValues({GSHARE_PROBE, "totals", "linked", "96"}, Env(true, "1536MiB"));
  ASSERT_EQ(S(kv, "exit"), "0") << S(kv, "error");
  EXPECT_EQ(U(kv, "total"), 1536 * kMiB);
  EXPECT_EQ(U(kv, "allocations"), 16u);  // 16 x 96 MiB = 1536 MiB
  EXPECT_EQ(U(kv, "refusal"), static_cast<uint64_t>(CUDA_ERROR_OUT_OF_MEMORY));
}

TEST_F(ShimTest, MalformedQuotaFailsCuInitSilently) {
  auto env = Env(true, "12XB");
  std::string err;
  const auto kv = RunKeyValues({GSHARE_PROBE, "init"}, env, &err);
  ASSERT_EQ(S(kv, "exit"), "0");
  EXPECT_EQ(U(kv, "init"), static_cast<uint64_t>(CUDA_ERROR_INVALID_VALUE));
  EXPECT_EQ(U(kv, "alloc"), static_cast<uint64_t>(CUDA_ERROR_INVALID_VALUE));
  EXPECT_EQ(err, "");
}

TEST_F(ShimTest, MalformedConfigurationIsLoggedWhenAsked) {
  auto env = Env(true, "lots");
  env["GSHARE_SLO_MS"] = "soon";
  const std::string log = (dir_ / "shim.log").string();
  env["GSHARE_LOG_FILE"] = log;
  const auto kv = RunKeyValues({GSHARE_PROBE, "init"}, env);
  EXPECT_EQ(U(kv, "init"), static_cast<uint64_t>(CUDA_ERROR_INVALID_VALUE));
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("GSHARE_VGPU_MEMORY='lots'"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("GSHARE_SLO_MS='soon'"), std::string::npos) << text.str();
}

// A function name registration cannot carry (a control character, over 127 bytes) fails cuInit
// naming GSHARE_FUNCTION, like every other malformed GSHARE_* value (it used to pass cuInit and
// leave the shim stand-alone, unscheduled, once the arbiter refused the name).
TEST_F(ShimTest, MalformedFunctionNameFailsCuInit) {
  for (const std::string& bad : {std::string("res\tnet"), std::string(128, 'f')}) {
    auto env = Env(true);
    env["GSHARE_FUNCTION"] = bad;
    const std::string log = (dir_ / "function.log").string();
    env["GSHARE_LOG_FILE"] = log;
    const auto kv = RunKeyValues({GSHARE_PROBE, "init"}, env);
    ASSERT_EQ(S(kv, "exit"), "0") << S(kv, "error");
    EXPECT_EQ(U(kv, "init"), static_cast<uint64_t>(CUDA_ERROR_INVALID_VALUE)) << bad.size();
    EXPECT_EQ(U(kv, "alloc"), static_cast<uint64_t>(CUDA_ERROR_INVALID_VALUE)) << bad.size();
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_NE(text.str().find("invalid configuration: GSHARE_FUNCTION"), std::string::npos)
        << text.str();
    std::filesystem::remove(log);
  }
}

TEST_F(ShimTest, DlsymAndGetProcAddressHonourHandlesAndVersions) {
  const auto kv = RunKeyValues({GSHARE_PROBE, "lookup"}, Env(true));
  ASSERT_EQ(S(kv, "exit"), "0");
  ExpectValues(kv, {
                       {"default_alloc", "libgshare.so:cuMemAlloc_v2"},
                       {"next_alloc", "libgshare.so:cuMemAlloc_v2"},
                       {"cuda_alloc", "libgshare.so:cuMemAlloc_v2"},
                       {"libc_alloc", "none"},  // another library's handle: no driver symbol
                       {"cuda_unhooked", "libcuda.so.1:cuCtxGetCurrent"},
                       {"cuda_export_table", "libcuda.so.1:cuGetExportTable"},
                       {"cuda_missing", "none"},
                       {"get_proc", "libgshare.so:cuGetProcAddress_v2"},
                       {"proc_get_proc", "0:0:libgshare.so:cuGetProcAddress_v2"},
                       {"proc_get_proc_11", "0:0:libgshare.so:cuGetProcAddress"},
                       {"proc_alloc_12", "0:0:libgshare.so:cuMemAlloc_v2"},
                       {"proc_htod_ptds", "0:0:libgshare.so:cuMemcpyHtoD_v2_ptds"},
                       {"proc_export_table", "0:0:libcuda.so.1:cuGetExportTable"},
                       {"proc_unhooked", "0:0:libcuda.so.1:cuCtxGetCurrent"},
                   });
  // The first definition after the probe: libc's, or in a sanitizer build the runtime's
  // interceptor (libasan/libtsan come before libc); never the shim's, never none.
  const std::string next_malloc = S(kv, "next_malloc");
  EXPECT_TRUE(next_malloc.rfind("libc.so.6:", 0) == 0 || next_malloc.rfind("libasan.so", 0) == 0 ||
              next_malloc.rfind("libtsan.so", 0) == 0)
      << next_malloc;
  EXPECT_NE(S(kv, "proc_missing").rfind("0:0:", 0), 0u) << S(kv, "proc_missing");
}

TEST_F(ShimTest, StreamOrderedPoolsPitchPointerQueriesAndAppVmm) {
  const auto kv = RunKeyValues({GSHARE_PROBE, "memory-api"}, Env(true));
  ASSERT_EQ(S(kv, "exit"), "0") << S(kv, "error");
  EXPECT_GE(U(kv, "pitch"), 1000u);
  ExpectValues(kv, {
                       {"free0", N(kGiB)},
                       {"range", "0"},
                       {"range_base_ok", "1"},
                       {"range_size", "1000"},  // the allocation, not the chunk behind it
                       {"attr_base_ok", "1"},
                       {"attr_size", "1000"},
                       {"attrs", "0"},
                       {"attrs_base_ok", "1"},
                       {"attrs_size", "1000"},
                       {"pitch_alloc", "0"},
                       {"async_allocations", "8"},  // 8 x 128 MiB = 1 GiB
                       {"async_refusal", N(CUDA_ERROR_OUT_OF_MEMORY)},
                       {"free_after_async", N(kGiB)},
                       {"pool_alloc", "0"},
                       {"pool_free_delta", N(256 * kMiB)},
                       {"vmm_create", "0"},
                       {"vmm_free_delta", N(256 * kMiB)},
                       {"vmm_over_quota", N(CUDA_ERROR_OUT_OF_MEMORY)},
                       {"free_end", N(kGiB)},
                   });
}

TEST_F(ShimTest, NeverRecursesIntoItself) {
  auto env = Env(true);
  env["GSHARE_REAL_LIBCUDA"] = GSHARE_PRELOAD_LIB;
  const auto kv = RunKeyValues({GSHARE_PROBE, "init"}, env);
  ASSERT_EQ(S(kv, "exit"), "0");
  EXPECT_EQ(U(kv, "init"), static_cast<uint64_t>(CUDA_ERROR_NOT_INITIALIZED));
}

TEST_F(ShimTest, ForkedChildGetsItsOwnVgpu) {
  const auto kv = RunKeyValues({GSHARE_PROBE, "fork"}, Env(true));
  ASSERT_EQ(S(kv, "exit"), "0") << S(kv, "error");
  ExpectValues(kv, {{"parent_free", N(kGiB - 256 * kMiB)},
                   {"child_exit", "0"},
                   {"child_init", "0"},
                   {"child_total", N(kGiB)},
                   {"child_free", N(kGiB)},
                   {"child_alloc", "0"},
                   {"parent_free_after", N(kGiB - 256 * kMiB)}});
}

TEST_F(ShimTest, SampleKernelsIdenticalWithAndWithoutTheShim) {
  const auto plain = RunKeyValues({GSHARE_PROBE, "kernels"}, Env(false));
  const auto shim = RunKeyValues({GSHARE_PROBE, "kernels"}, Env(true));
  ASSERT_EQ(S(plain, "exit"), "0") << S(plain, "error");
  ASSERT_EQ(S(shim, "exit"), "0") << S(shim, "error");
  EXPECT_EQ(S(plain, "vector_saxpy"), S(shim, "vector_saxpy"));
  EXPECT_EQ(S(plain, "sgemm"), S(shim, "sgemm"));
  EXPECT_EQ(S(plain, "c1"), S(shim, "c1"));
  EXPECT_NE(S(plain, "c1"), "0");
}

TEST_F(ShimTest, SwapOutAndInThroughTheControlSocket) {
  // Device 512 MiB; the probe holds a 128 MiB block plus random ones (bytes .. 256 MiB; about
  // 100 MiB with this seed).
  auto env = Env(true, "1GiB", "512MiB");
  const std::string socket = (dir_ / "control-%p.sock").string();
  env["GSHARE_CONTROL_SOCKET"] = socket;
  SwapProbe probe(GSHARE_PROBE, 7, 10, 128, env);
  ASSERT_TRUE(probe.ready()) << "probe did not get ready: " << probe.ready_line();
  const std::vector<std::string>& before = probe.pointers();
  ASSERT_FALSE(before.empty());
  const std::string path = PathForPid(socket, probe.pid());

  // While resident, another process cannot take 384 MiB of the 512 MiB device.
  const auto blocked = RunKeyValues({GSHARE_PROBE, "alloc", "384"}, Env(false, "", "512MiB"));
  EXPECT_EQ(U(blocked, "alloc"), static_cast<uint64_t>(CUDA_ERROR_OUT_OF_MEMORY));

  const std::string out = UnixRequest(path, "swap-out");
  ASSERT_EQ(out.rfind("ok bytes=", 0), 0u) << out;
  EXPECT_NE(UnixRequest(path, "stats").find("resident=0"), std::string::npos);
  EXPECT_EQ(UnixRequest(path, "swap-out").rfind("ok bytes=0 ", 0), 0u);  // already out
  EXPECT_EQ(UnixRequest(path, "reboot").rfind("error", 0), 0u);

  // Swapped out: the capacity is really released.
  const auto fits = RunKeyValues({GSHARE_PROBE, "alloc", "384"}, Env(false, "", "512MiB"));
  EXPECT_EQ(U(fits, "alloc"), 0u) << S(fits, "error");

  const std::string in = UnixRequest(path, "swap-in 0");
  ASSERT_EQ(in.rfind("ok bytes=", 0), 0u) << in;
  EXPECT_NE(UnixRequest(path, "stats").find("resident=1"), std::string::npos);

  Verified verified = probe.Verify();
  ASSERT_TRUE(verified.answered) << verified.line;
  EXPECT_TRUE(verified.intact()) << verified.line;
  EXPECT_EQ(verified.pointers, before) << "application pointers must not change";

  // A second round trip, then the application touches its memory while swapped out: the
  // submission gate swaps it back in by itself.
  ASSERT_EQ(UnixRequest(path, "swap-out").rfind("ok", 0), 0u);
  verified = probe.Verify();
  ASSERT_TRUE(verified.answered) << verified.line;
  EXPECT_TRUE(verified.intact()) << verified.line;
  EXPECT_EQ(verified.pointers, before);
  EXPECT_NE(UnixRequest(path, "stats").find("resident=1"), std::string::npos);
  EXPECT_EQ(probe.Quit(), 0) << probe.process().err();
}

// Swaps while several application threads copy, launch and verify: the gate must drain them
// before the memory is unmapped (an unmapped page faults on simcuda), admit them again after the
// (automatic) swap-in, and every byte and kernel result must survive.
TEST_F(ShimTest, SwapsWhileThreadsSubmit) {
  auto env = Env(true, "1GiB", "2GiB");
  const std::string socket = (dir_ / "stress-%p.sock").string();
  env["GSHARE_CONTROL_SOCKET"] = socket;
  ChildProcess probe({GSHARE_PROBE, "stress", "3", "40"}, env);
  ASSERT_TRUE(probe.started());
  std::string line;
  ASSERT_TRUE(probe.ReadLine(&line));
  ASSERT_EQ(line, "started");
  const std::string path = PathForPid(socket, probe.pid());
  // Swap out and in until the workers finish (bounded).
  int swapped = 0;
  bool done = false;
  // An error answer is acceptable only once the probe has finished (it is exiting: the shim
  // answers "error process exiting", the driver may be torn down); read "done" right after one.
  auto accept = [&](const std::string& answer) {
    if (answer.rfind("ok", 0) == 0) return;
    done = done || probe.ReadLine(&line, std::chrono::seconds(5));
    EXPECT_TRUE(done && line == "done") << answer;
  };
  for (int round = 0; round < 500 && !done; ++round) {
    const std::string out = UnixRequest(path, "swap-out");
    if (out.empty()) break;  // the probe finished (and exited) since the last round
    if (out.rfind("ok bytes=", 0) == 0 && out.rfind("ok bytes=0 ", 0) != 0) ++swapped;
    accept(out);
    if (done) break;
    const std::string in = UnixRequest(path, "swap-in 0");  // may find it swapped in already
    if (in.empty()) break;
    accept(in);
    if (done) break;
    done = probe.ReadLine(&line, std::chrono::milliseconds(1));
  }
  if (!done) {
    ASSERT_TRUE(probe.ReadLine(&line, std::chrono::seconds(240)));
  }
  EXPECT_EQ(line, "done");
  ASSERT_TRUE(probe.ReadLine(&line));
  EXPECT_EQ(line, "errors=0");
  EXPECT_GT(swapped, 0);
  EXPECT_EQ(probe.Wait(), 0) << probe.err();
}

}  // namespace
}  // namespace gshare::test
