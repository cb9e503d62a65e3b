// Parity between the GPU kernels and their CPU twins: every entry of the embedded PTX modules
// has a twin in libsimcuda_kernels.so with the same number and sizes of parameters (read from
// the PTX .param declarations), and every twin has a GPU kernel.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kernel_registry.h"
#include "module_image.h"
#include "simcuda/kernels/ptx.h"

namespace simcuda {
namespace {

// Parameter sizes of `entry` from its ".param .TYPE name" (or ".param .align A .b8 name[N]")
// declarations in PTX text.
std::vector<size_t> PtxParamSizes(const std::string& ptx, const std::string& entry) {
  std::vector<size_t> sizes;
  size_t pos = ptx.find(".entry " + entry + "(");
  if (pos == std::string::npos) return sizes;
  size_t end = ptx.find(')', pos);
  std::istringstream decl(ptx.substr(pos, end - pos));
  std::string line;
  while (std::getline(decl, line)) {
    size_t p = line.find(".param ");
    if (p == std::string::npos) continue;
    std::istringstream words(line.substr(p + 7));
    std::string type;
    words >> type;
    if (type == ".align") {  // .param .align A .b8 name[N]
      std::string align, b8, name;
      words >> align >> b8 >> name;
      sizes.push_back(std::stoul(name.substr(name.find('[') + 1)));
      continue;
    }
    static const std::map<std::string, size_t> kBits = {
        {".u8", 1}, {".s8", 1}, {".b8", 1}, {".u16", 2}, {".s16", 2}, {".b16", 2},
        {".u32", 4}, {".s32", 4}, {".b32", 4}, {".f32", 4}, {".u64", 8}, {".s64", 8},
        {".b64", 8}, {".f64", 8}};
    auto it = kBits.find(type);
    sizes.push_back(it == kBits.end() ? 0 : it->second);
  }
  return sizes;
}

TEST(PtxParityTest, EveryGpuKernelHasAMatchingCpuTwinAndViceVersa) {
  KernelRegistry registry(SIMCUDA_KERNELS_PLUGIN);
  ASSERT_EQ(registry.error(), "");
  std::set<std::string> in_ptx;
  for (const char* ptx : {basic_kernels_ptx, gemm_ptx, nn_kernels_ptx, cnn_kernels_ptx}) {
    std::string error;
    auto info = ScanModuleImage(ptx, &error);
    ASSERT_TRUE(info) << error;
    EXPECT_EQ(info->kind, ImageKind::kPtx);
    EXPECT_FALSE(info->entries.empty());
    for (const std::string& name : info->entries) {
      in_ptx.insert(name);
      const SimcudaKernelDesc* d = registry.Find(name);
      ASSERT_NE(d, nullptr) << name << " has no CPU twin";
      std::vector<size_t> twin(d->param_sizes, d->param_sizes + d->num_params);
      EXPECT_EQ(twin, PtxParamSizes(ptx, name)) << name;
    }
  }
  for (const std::string& name : registry.Names()) {
    EXPECT_TRUE(in_ptx.count(name)) << name << " has no GPU kernel";
  }
}

TEST(PtxParityTest, ParamParserReadsTypesAndAlignedStructs) {
  const std::string ptx =
      ".version 8.0\n.visible .entry k(\n\t.param .u64 k_param_0,\n\t.param .f32 k_param_1,\n"
      "\t.param .align 8 .b8 k_param_2[24],\n\t.param .u8 k_param_3\n)\n{ ret; }\n";
  EXPECT_EQ(PtxParamSizes(ptx, "k"), (std::vector<size_t>{8, 4, 24, 1}));
}

}  // namespace
}  // namespace simcuda
