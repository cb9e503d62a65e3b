// Unit tests of ResolveDeviceApi: complete resolution and the report of missing symbols.
#include "gshare/memory/device_api.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

namespace gshare::memory {
namespace {

CUresult Dummy() { return CUDA_SUCCESS; }

struct Names {
  std::set<std::string> asked;
  std::set<std::string> absent;
};

void* Resolve(const char* name, void* ctx) {
  auto* names = static_cast<Names*>(ctx);
  names->asked.insert(name);
  if (names->absent.count(name) != 0) return nullptr;
  return reinterpret_cast<void*>(&Dummy);
}

TEST(DeviceApiTest, ResolvesEveryVersionedName) {
  Names names;
  DeviceApi api;
  EXPECT_FALSE(api.complete());
  std::string missing = "stale";
  ASSERT_EQ(ResolveDeviceApi(Resolve, &names, &api, &missing), CUDA_SUCCESS);
  EXPECT_TRUE(api.complete());
  EXPECT_EQ(missing, "");
  EXPECT_TRUE(names.asked.count("cuMemcpyDtoHAsync_v2"));
  EXPECT_TRUE(names.asked.count("cuStreamDestroy_v2"));
  EXPECT_TRUE(names.asked.count("cuMemCreate"));
  EXPECT_FALSE(names.asked.count("cuMemcpyDtoHAsync"));  // never the unversioned alias
}

TEST(DeviceApiTest, NamesMissingSymbols) {
  Names names;
  names.absent = {"cuMemMap", "cuEventQuery"};
  DeviceApi api;
  std::string missing;
  EXPECT_EQ(ResolveDeviceApi(Resolve, &names, &api, &missing), CUDA_ERROR_NOT_FOUND);
  EXPECT_FALSE(api.complete());
  EXPECT_NE(missing.find("cuMemMap"), std::string::npos);
  EXPECT_NE(missing.find("cuEventQuery"), std::string::npos);
  EXPECT_EQ(missing.find("cuMemCreate"), std::string::npos);
  EXPECT_NE(api.mem_create, nullptr);
  EXPECT_EQ(api.mem_map, nullptr);
}

TEST(DeviceApiTest, RejectsNullArguments) {
  DeviceApi api;
  EXPECT_EQ(ResolveDeviceApi(nullptr, nullptr, &api), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(ResolveDeviceApi(Resolve, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
}

}  // namespace
}  // namespace gshare::memory
