// Kernel plugin registry: dlopens the plugins named in SIMCUDA_KERNELS, validates their ABI and
// tables, and indexes their kernel descriptors by entry name.
//
// Thread safety: a KernelRegistry is built completely in its constructor and only read after,
// so lookups need no lock. The process-wide registry is built once under a function-local
// static initialiser and never destroyed (hooks may run while the process exits).
#include "kernel_registry.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <string>

#include "log.h"

namespace simcuda {

namespace {

// std::less<> allows lookup by string_view without building a string.
using NameIndex = std::map<std::string, const SimcudaKernelDesc*, std::less<>>;

// Largest parameter a kernel may take (CUDA's kernel parameter space is at most 32 KiB in all;
// anything this large is a corrupt table).
constexpr size_t kMaxParamBytes = 4096;
// Largest table a plugin may return (a guard against a garbage count).
constexpr size_t kMaxKernelsPerPlugin = 100000;

}  // namespace

struct KernelRegistry::Index {
  NameIndex by_name;
};

namespace {

std::string ValidateDesc(const SimcudaKernelDesc& d) {
  if (d.name == nullptr || d.name[0] == '\0') return "a descriptor has no name";
  if (d.run == nullptr || d.cost == nullptr) return std::string(d.name) + ": null run or cost";
  if (d.num_params > 0 && d.param_sizes == nullptr) {
    return std::string(d.name) + ": num_params > 0 but param_sizes is null";
  }
  for (unsigned i = 0; i < d.num_params; ++i) {
    if (d.param_sizes[i] == 0 || d.param_sizes[i] > kMaxParamBytes) {
      return std::string(d.name) + ": parameter " + std::to_string(i) + " has size " +
             std::to_string(d.param_sizes[i]);
    }
  }
  return {};
}

void AddError(std::string* all, const std::string& one) {
  if (one.empty()) return;
  if (!all->empty()) *all += "; ";
  *all += one;
}

// Loads one plugin into `index`; returns the problems met (empty if none).
std::string LoadPlugin(const std::string& path, NameIndex* index) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return "cannot load " + path + ": " + (why != nullptr ? why : "unknown dlopen error");
  }
  // Plugins are never dlclosed: descriptors must stay valid for the life of the process.
  auto entry = reinterpret_cast<SimcudaKernelsFn>(dlsym(handle, SIMCUDA_PLUGIN_ENTRY));
  if (entry == nullptr) {
    return path + ": no symbol " SIMCUDA_PLUGIN_ENTRY " (not a simcuda kernel plugin)";
  }
  unsigned int abi = 0;
  size_t count = 0;
  const SimcudaKernelDesc* table = entry(&abi, &count);
  if (abi != SIMCUDA_PLUGIN_ABI) {
    return path + ": plugin ABI " + std::to_string(abi) + ", simcuda expects " +
           std::to_string(SIMCUDA_PLUGIN_ABI);
  }
  if (count > 0 && table == nullptr) return path + ": null descriptor table";
  if (count > kMaxKernelsPerPlugin) {
    return path + ": implausible kernel count " + std::to_string(count);
  }
  std::string errors;
  for (size_t i = 0; i < count; ++i) {
    const SimcudaKernelDesc& d = table[i];
    std::string bad = ValidateDesc(d);
    if (!bad.empty()) {
      AddError(&errors, path + ": " + bad);
      continue;
    }
    if (!index->emplace(d.name, &d).second) {
      AddError(&errors, path + ": duplicate kernel name " + d.name + " (first definition kept)");
    }
  }
  return errors;
}

}  // namespace

KernelRegistry::KernelRegistry(std::string_view plugin_paths) : index_(std::make_unique<Index>()) {
  size_t start = 0;
  while (start <= plugin_paths.size()) {
    size_t end = plugin_paths.find(':', start);
    if (end == std::string_view::npos) end = plugin_paths.size();
    if (end > start) {
      AddError(&error_, LoadPlugin(std::string(plugin_paths.substr(start, end - start)),
                                   &index_->by_name));
    }
    start = end + 1;
  }
}

KernelRegistry::KernelRegistry(KernelRegistry&&) noexcept = default;
KernelRegistry& KernelRegistry::operator=(KernelRegistry&&) noexcept = default;
KernelRegistry::~KernelRegistry() = default;

const SimcudaKernelDesc* KernelRegistry::Find(std::string_view name) const {
  auto it = index_->by_name.find(name);
  return it == index_->by_name.end() ? nullptr : it->second;
}

std::vector<std::string> KernelRegistry::Names() const {
  std::vector<std::string> names;
  names.reserve(index_->by_name.size());
  for (const auto& [name, desc] : index_->by_name) names.push_back(name);
  return names;
}

std::string DefaultKernelPluginPath() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&DefaultKernelPluginPath), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  std::string self = info.dli_fname;
  size_t slash = self.rfind('/');
  if (slash == std::string::npos) return {};
  std::string candidate = self.substr(0, slash) + "/../lib/libsimcuda_kernels.so";
  return access(candidate.c_str(), R_OK) == 0 ? candidate : std::string();
}

namespace {
const KernelRegistry& ProcessRegistry() {
  static const KernelRegistry* registry = [] {
    const char* env = std::getenv("SIMCUDA_KERNELS");
    const std::string paths = env != nullptr ? std::string(env) : DefaultKernelPluginPath();
    auto* r = new KernelRegistry(paths);  // never destroyed
    if (!r->error().empty()) Log(LogLevel::kError, "kernel plugins: %s", r->error().c_str());
    return r;
  }();
  return *registry;
}
}  // namespace

const SimcudaKernelDesc* FindKernel(std::string_view name) { return ProcessRegistry().Find(name); }

std::string KernelRegistryError() { return ProcessRegistry().error(); }

}  // namespace simcuda
