// The plugin entry point of libsimcuda_kernels.so: joins the per-file descriptor tables into
// the one table simcuda's registry asks for (see simcuda/include/simcuda/kernel_plugin.h).
#include <vector>

#include "kernel_tables.h"

namespace {

const std::vector<SimcudaKernelDesc>& AllKernels() {
  // Built once (thread-safe static initialisation), never destroyed: simcuda may look kernels
  // up while the process exits.
  static const auto* all = [] {
    auto* table = new std::vector<SimcudaKernelDesc>;
    for (auto part : {simcuda::kernels::BasicKernels(), simcuda::kernels::GemmKernels(),
                      simcuda::kernels::NnKernels(), simcuda::kernels::CnnKernels()}) {
      table->insert(table->end(), part.begin(), part.end());
    }
    return table;
  }();
  return *all;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const SimcudaKernelDesc* simcuda_kernels(
    unsigned int* abi, size_t* count) {
  const auto& all = AllKernels();
  *abi = SIMCUDA_PLUGIN_ABI;
  *count = all.size();
  return all.data();
}
