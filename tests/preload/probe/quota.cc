// preload_probe's quota and process-lifecycle modes: totals (what the vGPU reports and where it
// refuses), init (cuInit under malformed configuration), fork (a child's own vGPU), fork-helper
// (a registered process with a forked helper child) and alloc (a plain allocation, e.g. by a
// second process while the first is swapped out).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "driver.h"
#include "modes.h"

namespace gshare::probe {

int Totals(const std::string& how, uint64_t chunk_mib) {
  Api api;
  if (!LoadBy(how, &api) || api.mem_alloc == nullptr || api.mem_get_info == nullptr) {
    return Fail("load", CUDA_ERROR_NOT_FOUND);
  }
  std::printf("mem_alloc_fn=%s\n", WhereIs(reinterpret_cast<void*>(api.mem_alloc)).c_str());
  std::printf("memcpy_htod_async_fn=%s\n", WhereIs(api.memcpy_htod_async).c_str());
  std::printf("launch_kernel_fn=%s\n", WhereIs(api.launch_kernel).c_str());
  if (CUresult r = SetUpContext(api); r != CUDA_SUCCESS) return Fail("context", r);
  size_t free0 = 0, total0 = 0, device_total = 0;
  if (CUresult r = api.mem_get_info(&free0, &total0); r != CUDA_SUCCESS) return Fail("info", r);
  if (CUresult r = api.device_total_mem(&device_total, 0); r != CUDA_SUCCESS) {
    return Fail("total", r);
  }
  std::printf("total=%zu\nfree_start=%zu\ndevice_total=%zu\n", total0, free0, device_total);
  std::vector<CUdeviceptr> ptrs;
  size_t last_free = free0;
  bool monotonic = true;
  CUresult last = CUDA_SUCCESS;
  for (int i = 0; i < 4096; ++i) {
    CUdeviceptr p = 0;
    last = api.mem_alloc(&p, chunk_mib << 20);
    if (last != CUDA_SUCCESS) break;
    ptrs.push_back(p);
    size_t f = 0, t = 0;
    (void)api.mem_get_info(&f, &t);
    if (ptrs.size() == 1) std::printf("free_after_first=%zu\n", f);
    if (f >= last_free) monotonic = false;
    last_free = f;
  }
  std::printf("allocations=%zu\nrefusal=%d\nfree_at_refusal=%zu\nfree_monotonic=%d\n",
              ptrs.size(), static_cast<int>(last), last_free, monotonic ? 1 : 0);
  for (CUdeviceptr p : ptrs) {
    if (CUresult r = api.mem_free(p); r != CUDA_SUCCESS) return Fail("free", r);
  }
  size_t free_end = 0, total_end = 0;
  (void)api.mem_get_info(&free_end, &total_end);
  std::printf("free_end=%zu\n", free_end);
  return 0;
}

int Init() {
  const CUresult r = cuInit(0);
  std::printf("init=%d\n", static_cast<int>(r));
  CUdeviceptr p = 0;
  std::printf("alloc=%d\n", static_cast<int>(cuMemAlloc(&p, 1 << 20)));
  return 0;
}

int Fork() {
  Api api;
  if (int failed = StartLinked(&api); failed != 0) return failed;
  CUdeviceptr p = 0;
  if (CUresult r = cuMemAlloc(&p, 256u << 20); r != CUDA_SUCCESS) return Fail("alloc", r);
  size_t free_parent = 0, total = 0;
  (void)cuMemGetInfo(&free_parent, &total);
  std::printf("parent_free=%zu\n", free_parent);
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    // A fresh process as far as the vGPU is concerned: re-initialise and look.
    CUresult r = SetUpContext(api);
    size_t f = 0, t = 0;
    if (r == CUDA_SUCCESS) r = cuMemGetInfo(&f, &t);
    CUdeviceptr q = 0;
    const CUresult a = r == CUDA_SUCCESS ? cuMemAlloc(&q, 64u << 20) : r;
    std::printf("child_init=%d\nchild_free=%zu\nchild_total=%zu\nchild_alloc=%d\n",
                static_cast<int>(r), f, t, static_cast<int>(a));
    std::fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  size_t free_after = 0;
  (void)cuMemGetInfo(&free_after, &total);
  std::printf("child_exit=%d\nparent_free_after=%zu\n",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1, free_after);
  return 0;
}

int ForkHelper(const std::string& child_does) {
  if (child_does != "sleep" && child_does != "cuda" && child_does != "exec") {
    return Fail("usage", CUDA_ERROR_INVALID_VALUE);
  }
  Api api;
  if (int failed = StartLinked(&api); failed != 0) return failed;
  CUdeviceptr p = 0;
  if (CUresult r = cuMemAlloc(&p, 64u << 20); r != CUDA_SUCCESS) return Fail("alloc", r);
  std::printf("parent_pid=%d\n", static_cast<int>(getpid()));
  std::fflush(stdout);  // nothing buffered for the child to print again
  const pid_t child = fork();
  if (child < 0) return Fail("fork", CUDA_ERROR_UNKNOWN);
  if (child == 0) {
    if (child_does == "cuda") {
      CUresult r = SetUpContext(api);
      CUdeviceptr q = 0;
      const CUresult a = r == CUDA_SUCCESS ? cuMemAlloc(&q, 64u << 20) : r;
      std::printf("child_init=%d\nchild_alloc=%d\n", static_cast<int>(r), static_cast<int>(a));
    }
    std::printf("child_ready=1\n");
    std::fflush(stdout);
    // Off the test's pipes: the parent's end of them closes when the parent dies.
    const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd <= 2; ++fd) (void)dup2(null, fd);
    if (child_does == "exec") {
      execl("/bin/sleep", "sleep", "300", static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 300; ++i) sleep(1);  // until the test kills it (bounded)
    _exit(0);
  }
  std::printf("child_pid=%d\n", static_cast<int>(child));
  std::fflush(stdout);
  // Until the test kills this process (or closes stdin).
  char line[64];
  while (std::fgets(line, sizeof(line), stdin) != nullptr) {
  }
  return 0;
}

int Alloc(uint64_t mib) {
  Api api;
  if (int failed = StartLinked(&api); failed != 0) return failed;
  CUdeviceptr p = 0;
  std::printf("alloc=%d\n", static_cast<int>(cuMemAlloc(&p, mib << 20)));
  return 0;
}

}  // namespace gshare::probe
