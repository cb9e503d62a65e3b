// The registry of kernel plugins: loads the shared libraries named in SIMCUDA_KERNELS and finds
// kernel descriptors (CPU twins of GPU kernels) by entry name. See
// simcuda/include/simcuda/kernel_plugin.h for the plugin ABI and docs/simcuda-kernels.md.
#ifndef SIMCUDA_SRC_KERNEL_REGISTRY_H_
#define SIMCUDA_SRC_KERNEL_REGISTRY_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "simcuda/kernel_plugin.h"

namespace simcuda {

// Loads the plugins named in SIMCUDA_KERNELS once (thread-safe); nullptr if no plugin has `name`.
// The first call in the process loads every plugin (a ':'-separated list of paths; empty
// elements are ignored); later changes to the environment are not seen. When SIMCUDA_KERNELS is
// unset (not merely empty), DefaultKernelPluginPath() is loaded if it exists. A plugin that cannot be
// opened, lacks SIMCUDA_PLUGIN_ENTRY, reports another ABI version or a malformed table is
// skipped (its kernels are not found) and the reason is kept for KernelRegistryError(). When two
// plugins (or one plugin twice) define the same name, the first one loaded wins and the
// duplicate is reported as an error. Returned descriptors live for the life of the process
// (plugins are never unloaded).
const SimcudaKernelDesc* FindKernel(std::string_view name);

// The message explaining why plugins failed to load, if any (empty otherwise). Loads the plugins
// first if that has not happened yet. Several problems are joined with "; ".
std::string KernelRegistryError();

// The kernel set built with simcuda, if present: "<dir>/../lib/libsimcuda_kernels.so" where <dir>
// holds the binary this code is part of (build/simcuda-lib/libcuda.so.1 -> build/lib/...).
// Empty if that file does not exist.
std::string DefaultKernelPluginPath();

// An independent set of plugins, for tests and for tools that load plugins explicitly.
// Thread-safe after construction (lookups are read-only); movable, not copyable.
class KernelRegistry {
 public:
  // Loads the ':'-separated list of plugin paths. Never fails as a whole: problems are recorded
  // in error() and the good plugins stay usable.
  explicit KernelRegistry(std::string_view plugin_paths);
  KernelRegistry(KernelRegistry&&) noexcept;
  KernelRegistry& operator=(KernelRegistry&&) noexcept;
  KernelRegistry(const KernelRegistry&) = delete;
  KernelRegistry& operator=(const KernelRegistry&) = delete;
  ~KernelRegistry();

  // nullptr if no loaded plugin has `name`.
  const SimcudaKernelDesc* Find(std::string_view name) const;
  // Every problem met while loading, joined with "; " (empty if none).
  const std::string& error() const { return error_; }
  // Names of all registered kernels, sorted.
  std::vector<std::string> Names() const;

 private:
  struct Index;
  std::unique_ptr<Index> index_;
  std::string error_;
};

}  // namespace simcuda

#endif  // SIMCUDA_SRC_KERNEL_REGISTRY_H_
