// Tests of the kernel plugin registry: good plugins, missing files, wrong ABI, missing entry
// point, malformed descriptors, duplicate names, and concurrent first use of the process-wide
// registry.
#include "kernel_registry.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace simcuda {
namespace {

std::string Plugin(const char* variant) {
  return std::string(SIMCUDA_TEST_PLUGIN_DIR) + "/simcuda_test_plugin_" + variant + ".so";
}

TEST(KernelRegistryTest, GoodPluginKernelsAreFoundAndRun) {
  KernelRegistry r(Plugin("good"));
  EXPECT_EQ(r.error(), "");
  EXPECT_EQ(r.Names(), (std::vector<std::string>{"test_a", "test_b"}));
  const SimcudaKernelDesc* d = r.Find("test_a");
  ASSERT_NE(d, nullptr);
  EXPECT_STREQ(d->name, "test_a");
  ASSERT_EQ(d->num_params, 1u);
  EXPECT_EQ(d->param_sizes[0], sizeof(void*));
  int target = 0;
  int* arg = &target;
  void* params[] = {&arg};
  SimcudaLaunchDims dims{{1, 1, 1}, {1, 1, 1}, 0};
  d->run(&dims, params);
  EXPECT_EQ(target, 42);
  EXPECT_EQ(r.Find("no_such_kernel"), nullptr);
  EXPECT_EQ(r.Find(""), nullptr);
}

TEST(KernelRegistryTest, EmptyListLoadsNothing) {
  KernelRegistry r("::");
  EXPECT_EQ(r.error(), "");
  EXPECT_TRUE(r.Names().empty());
}

TEST(KernelRegistryTest, MissingFileIsReportedAndOthersStillLoad) {
  std::string missing = "/nonexistent/simcuda/plugin_" + std::to_string(getpid()) + ".so";
  KernelRegistry r(missing + ":" + Plugin("good"));
  EXPECT_NE(r.error().find("cannot load " + missing), std::string::npos) << r.error();
  EXPECT_NE(r.Find("test_b"), nullptr);
}

TEST(KernelRegistryTest, WrongAbiIsRejected) {
  KernelRegistry r(Plugin("wrong_abi"));
  EXPECT_NE(r.error().find("plugin ABI 99"), std::string::npos) << r.error();
  EXPECT_EQ(r.Find("test_wrong_abi"), nullptr);
}

TEST(KernelRegistryTest, LibraryWithoutEntryPointIsRejected) {
  KernelRegistry r(Plugin("no_entry"));
  EXPECT_NE(r.error().find("no symbol simcuda_kernels"), std::string::npos) << r.error();
  EXPECT_EQ(r.Find("test_no_entry"), nullptr);
}

TEST(KernelRegistryTest, MalformedDescriptorIsSkipped) {
  KernelRegistry r(Plugin("bad_desc"));
  EXPECT_NE(r.error().find("test_null_run: null run or cost"), std::string::npos) << r.error();
  EXPECT_EQ(r.Find("test_null_run"), nullptr);
  EXPECT_NE(r.Find("test_d"), nullptr);
}

TEST(KernelRegistryTest, DuplicateNameIsAnErrorAndFirstWins) {
  KernelRegistry good_first(Plugin("good") + ":" + Plugin("dup"));
  EXPECT_NE(good_first.error().find("duplicate kernel name test_a"), std::string::npos)
      << good_first.error();
  KernelRegistry good_only(Plugin("good"));
  // The same library is mapped once per process, so its descriptors have one address.
  EXPECT_EQ(good_first.Find("test_a"), good_only.Find("test_a"));
  EXPECT_NE(good_first.Find("test_c"), nullptr);

  KernelRegistry dup_first(Plugin("dup") + ":" + Plugin("good"));
  EXPECT_NE(dup_first.Find("test_a"), good_only.Find("test_a"));
  EXPECT_EQ(dup_first.Find("test_a"), dup_first.Find("test_a"));
}

TEST(KernelRegistryTest, DefaultPluginIsTheKernelSetBesideTheBinary) {
  // This test binary is in build/bin, so the default is build/bin/../lib/libsimcuda_kernels.so.
  std::string path = DefaultKernelPluginPath();
  ASSERT_NE(path, "");
  EXPECT_TRUE(path.ends_with("/bin/../lib/libsimcuda_kernels.so")) << path;
  KernelRegistry r(path);
  EXPECT_EQ(r.error(), "");
  EXPECT_NE(r.Find("vector_add"), nullptr);
}

TEST(KernelRegistryTest, ProcessRegistryIsSafeUnderConcurrentFirstUse) {
  std::string list = Plugin("good") + ":" + Plugin("wrong_abi");
  ASSERT_EQ(setenv("SIMCUDA_KERNELS", list.c_str(), 1), 0);
  std::vector<const SimcudaKernelDesc*> found(16, nullptr);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < found.size(); ++i) {
    threads.emplace_back([&found, i] { found[i] = FindKernel(i % 2 ? "test_a" : "test_b"); });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < found.size(); ++i) {
    ASSERT_NE(found[i], nullptr) << i;
    EXPECT_STREQ(found[i]->name, i % 2 ? "test_a" : "test_b");
  }
  EXPECT_NE(KernelRegistryError().find("plugin ABI"), std::string::npos) << KernelRegistryError();
  // Loaded once: later changes to the environment are not seen.
  ASSERT_EQ(setenv("SIMCUDA_KERNELS", "", 1), 0);
  EXPECT_NE(FindKernel("test_a"), nullptr);
}

}  // namespace
}  // namespace simcuda
