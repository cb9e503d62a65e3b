// Tests of the VMM API: reservations, memfd-backed physical memory, mapping, access, faults on
// unmapped ranges, remapping at the same address (also with memory of another device), and
// POSIX-fd export/import.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "test_util.h"

namespace {

constexpr size_t kGran = 2u << 20;

class VmmTest : public simcuda_test::DriverTest {
 protected:
  static CUmemAllocationProp Prop(int device, bool exportable = false) {
    CUmemAllocationProp p = simcuda_test::PinnedOn(device);
    if (exportable) p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return p;
  }
  static void Grant(CUdeviceptr ptr, size_t size, int device) {
    const CUmemAccessDesc d = simcuda_test::ReadWriteOn(device);
    ASSERT_CU(cuMemSetAccess(ptr, size, &d, 1));
  }
  static size_t FreeOn(int device) { return simcuda_test::FreeOn(device); }
  // Forks; the child touches `ptr`; returns the child's wait status.
  static int TouchInChild(CUdeviceptr ptr) {
    pid_t pid = fork();
    if (pid == 0) {
      signal(SIGSEGV, SIG_DFL);  // sanitizers install their own handler
      *reinterpret_cast<volatile int*>(ptr) = 1;
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
  }
};

TEST_F(VmmTest, GranularityIsTwoMiB) {
  CUmemAllocationProp p = Prop(0);
  size_t g = 0;
  ASSERT_CU(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  EXPECT_EQ(g, kGran);
  ASSERT_CU(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  EXPECT_EQ(g, kGran);
}

TEST_F(VmmTest, ReserveCreateMapAccessUnmapRelease) {
  size_t free0 = FreeOn(0);
  CUdeviceptr va = 0;
  ASSERT_CU(cuMemAddressReserve(&va, 4 * kGran, 0, 0, 0));
  EXPECT_EQ(va % kGran, 0u);
  CUmemAllocationProp p = Prop(0);
  CUmemGenericAllocationHandle h;
  ASSERT_CU(cuMemCreate(&h, 2 * kGran, &p, 0));
  EXPECT_EQ(free0 - FreeOn(0), 2 * kGran);  // accounted from creation
  ASSERT_CU(cuMemMap(va, 2 * kGran, 0, h, 0));
  EXPECT_CU_ERR(cuMemMap(va, 2 * kGran, 0, h, 0), CUDA_ERROR_INVALID_VALUE);  // already mapped
  CUmemLocation loc{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  unsigned long long flags = 99;
  ASSERT_CU(cuMemGetAccess(&flags, &loc, va));
  EXPECT_EQ(flags, 0u);
  Grant(va, 2 * kGran, 0);
  ASSERT_CU(cuMemGetAccess(&flags, &loc, va));
  EXPECT_EQ(flags, static_cast<unsigned long long>(CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  std::memset(reinterpret_cast<void*>(va), 0x3c, 2 * kGran);
  CUmemGenericAllocationHandle h2;
  ASSERT_CU(cuMemRetainAllocationHandle(&h2, reinterpret_cast<void*>(va + 100)));
  EXPECT_EQ(h2, h);
  ASSERT_CU(cuMemRelease(h2));
  CUmemAllocationProp got{};
  ASSERT_CU(cuMemGetAllocationPropertiesFromHandle(&got, h));
  EXPECT_EQ(got.location.id, 0);
  ASSERT_CU(cuMemRelease(h));  // still mapped: memory stays until unmapped
  EXPECT_EQ(reinterpret_cast<unsigned char*>(va)[5], 0x3c);
  EXPECT_CU_ERR(cuMemUnmap(va, kGran), CUDA_ERROR_INVALID_VALUE);  // part of a mapping
  ASSERT_CU(cuMemUnmap(va, 2 * kGran));
  EXPECT_EQ(FreeOn(0), free0);  // capacity back at once
  EXPECT_CU_ERR(cuMemAddressFree(va, kGran), CUDA_ERROR_INVALID_VALUE);  // wrong size
  ASSERT_CU(cuMemAddressFree(va, 4 * kGran));
}

TEST_F(VmmTest, TouchingUnmappedOrInaccessibleMemoryFaults) {
  CUdeviceptr va = 0;
  ASSERT_CU(cuMemAddressReserve(&va, 2 * kGran, 0, 0, 0));
  int status = TouchInChild(va);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) << status;
  CUmemAllocationProp p = Prop(0);
  CUmemGenericAllocationHandle h;
  ASSERT_CU(cuMemCreate(&h, kGran, &p, 0));
  ASSERT_CU(cuMemMap(va, kGran, 0, h, 0));
  status = TouchInChild(va);  // mapped, no access yet
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) << status;
  Grant(va, kGran, 0);
  status = TouchInChild(va);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  status = TouchInChild(va + kGran);  // second half of the reservation is still unmapped
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) << status;
  ASSERT_CU(cuMemUnmap(va, kGran));
  status = TouchInChild(va);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) << status;
  ASSERT_CU(cuMemRelease(h));
  ASSERT_CU(cuMemAddressFree(va, 2 * kGran));
}

TEST_F(VmmTest, RemapAtSameAddressKeepsNothingUntilCopiedBack) {
  const size_t size = 4 * kGran;
  CUdeviceptr va = 0;
  ASSERT_CU(cuMemAddressReserve(&va, size, 0, 0, 0));
  CUmemAllocationProp p = Prop(0);
  std::vector<uint64_t> saved(size / 8);
  for (int round = 0; round < 3; ++round) {
    CUmemGenericAllocationHandle h;
    ASSERT_CU(cuMemCreate(&h, size, &p, 0));
    ASSERT_CU(cuMemMap(va, size, 0, h, 0));
    CUmemLocation loc{CU_MEM_LOCATION_TYPE_DEVICE, 0};
    unsigned long long flags = 99;
    ASSERT_CU(cuMemGetAccess(&flags, &loc, va));
    EXPECT_EQ(flags, 0u) << "access must reset on every new mapping";
    Grant(va, size, 0);
    auto* words = reinterpret_cast<uint64_t*>(va);
    if (round > 0) {
      // Before the copy back, no page holds its old contents.
      for (size_t page = 0; page < size / 4096; ++page) {
        ASSERT_NE(words[page * 512], saved[page * 512]) << "page " << page;
      }
      ASSERT_CU(cuMemcpyHtoD(va, saved.data(), size));
      for (size_t i = 0; i < size / 8; ++i) ASSERT_EQ(words[i], saved[i]) << i;
    }
    for (size_t i = 0; i < size / 8; ++i) words[i] = (i * 0x9e3779b97f4a7c15ull) ^ static_cast<uint64_t>(round + 1);
    ASSERT_CU(cuMemcpyDtoH(saved.data(), va, size));  // swap out
    ASSERT_CU(cuMemUnmap(va, size));
    ASSERT_CU(cuMemRelease(h));
  }
  ASSERT_CU(cuMemAddressFree(va, size));
}

TEST_F(VmmTest, MemoryOfAnotherDeviceAtTheSameAddress) {
  size_t free1 = FreeOn(1);
  CUdeviceptr va = 0;
  ASSERT_CU(cuMemAddressReserve(&va, kGran, 0, 0, 0));
  CUmemAllocationProp p0 = Prop(0), p1 = Prop(1);
  CUmemGenericAllocationHandle h0, h1;
  ASSERT_CU(cuMemCreate(&h0, kGran, &p0, 0));
  ASSERT_CU(cuMemMap(va, kGran, 0, h0, 0));
  Grant(va, kGran, 0);
  std::vector<unsigned char> data(kGran, 0xa5), out(kGran);
  ASSERT_CU(cuMemcpyHtoD(va, data.data(), kGran));
  ASSERT_CU(cuMemcpyDtoH(out.data(), va, kGran));
  ASSERT_CU(cuMemUnmap(va, kGran));
  ASSERT_CU(cuMemRelease(h0));
  ASSERT_CU(cuMemCreate(&h1, kGran, &p1, 0));
  EXPECT_EQ(free1 - FreeOn(1), kGran);
  ASSERT_CU(cuMemMap(va, kGran, 0, h1, 0));
  Grant(va, kGran, 1);
  // Only device 1 may reach it: a copy in device 0's (current) context fails (reach_test.cc).
  EXPECT_CU_ERR(cuMemcpyHtoD(va, out.data(), kGran), CUDA_ERROR_INVALID_VALUE);
  Grant(va, kGran, 0);
  ASSERT_CU(cuMemcpyHtoD(va, out.data(), kGran));
  EXPECT_EQ(std::memcmp(reinterpret_cast<void*>(va), data.data(), kGran), 0);
  ASSERT_CU(cuMemUnmap(va, kGran));
  ASSERT_CU(cuMemRelease(h1));
  EXPECT_EQ(FreeOn(1), free1);
  ASSERT_CU(cuMemAddressFree(va, kGran));
}

TEST_F(VmmTest, CopiesSpanAdjacentMappings) {
  CUdeviceptr va = 0;
  ASSERT_CU(cuMemAddressReserve(&va, 2 * kGran, 0, 0, 0));
  CUmemAllocationProp p = Prop(0);
  CUmemGenericAllocationHandle a, b;
  ASSERT_CU(cuMemCreate(&a, kGran, &p, 0));
  ASSERT_CU(cuMemCreate(&b, kGran, &p, 0));
  ASSERT_CU(cuMemMap(va, kGran, 0, a, 0));
  ASSERT_CU(cuMemMap(va + kGran, kGran, 0, b, 0));
  std::vector<unsigned char> in(2 * kGran), out(2 * kGran);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 7);
  EXPECT_CU_ERR(cuMemcpyHtoD(va, in.data(), in.size()), CUDA_ERROR_INVALID_VALUE);  // no access yet
  Grant(va, 2 * kGran, 0);
  ASSERT_CU(cuMemcpyHtoD(va, in.data(), in.size()));
  ASSERT_CU(cuMemcpyDtoH(out.data(), va, out.size()));
  EXPECT_EQ(in, out);
  ASSERT_CU(cuMemUnmap(va, 2 * kGran));  // both mappings at once
  ASSERT_CU(cuMemRelease(a));
  ASSERT_CU(cuMemRelease(b));
  ASSERT_CU(cuMemAddressFree(va, 2 * kGran));
}

TEST_F(VmmTest, PosixFdExportImportSharesMemory) {
  CUmemAllocationProp p = Prop(1, true);
  CUmemGenericAllocationHandle h, imported;
  ASSERT_CU(cuMemCreate(&h, kGran, &p, 0));
  int fd = -1;
  ASSERT_CU(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  ASSERT_GE(fd, 0);
  ASSERT_CU(cuMemImportFromShareableHandle(&imported, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  close(fd);
  CUmemAllocationProp got{};
  ASSERT_CU(cuMemGetAllocationPropertiesFromHandle(&got, imported));
  EXPECT_EQ(got.location.id, 1);
  CUdeviceptr a = 0, b = 0;
  ASSERT_CU(cuMemAddressReserve(&a, kGran, 0, 0, 0));
  ASSERT_CU(cuMemAddressReserve(&b, kGran, 0, 0, 0));
  ASSERT_CU(cuMemMap(a, kGran, 0, h, 0));
  ASSERT_CU(cuMemMap(b, kGran, 0, imported, 0));
  Grant(a, kGran, 1);
  Grant(b, kGran, 1);
  reinterpret_cast<int*>(a)[10] = 4242;
  EXPECT_EQ(reinterpret_cast<int*>(b)[10], 4242);
  CUmemAllocationProp plain = Prop(1);
  CUmemGenericAllocationHandle h3;
  ASSERT_CU(cuMemCreate(&h3, kGran, &plain, 0));
  EXPECT_CU_ERR(cuMemExportToShareableHandle(&fd, h3, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuMemRelease(h3));
  ASSERT_CU(cuMemUnmap(a, kGran));
  ASSERT_CU(cuMemUnmap(b, kGran));
  ASSERT_CU(cuMemRelease(h));
  ASSERT_CU(cuMemRelease(imported));
  ASSERT_CU(cuMemAddressFree(a, kGran));
  ASSERT_CU(cuMemAddressFree(b, kGran));
}

TEST_F(VmmTest, CreateFailsAtDeviceCapacity) {
  CUmemAllocationProp p = Prop(1);
  CUmemGenericAllocationHandle h;
  EXPECT_CU_ERR(cuMemCreate(&h, 2ull << 30, &p, 0), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_CU_ERR(cuMemCreate(&h, kGran + 1, &p, 0), CUDA_ERROR_INVALID_VALUE);
  CUmemAllocationProp bad = Prop(7);
  EXPECT_CU_ERR(cuMemCreate(&h, kGran, &bad, 0), CUDA_ERROR_INVALID_DEVICE);
}

}  // namespace
