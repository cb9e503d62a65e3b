// ExternalTracker: remembers memory the application obtained outside the vGPU allocator
// (its own cuMemCreate handles, managed memory, IPC imports) so that the matching release call
// can give the bytes back to the vGPU's quota (VgpuMemory::UntrackExternal).
//
// Thread-safety: all methods are thread-safe (one mutex; these calls are not on a fast path).
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "gshare/common/thread_annotations.h"
#include "gshare/memory/vgpu_memory.h"

namespace gshare::preload {

class ExternalTracker {
 public:
  struct Entry {
    memory::ExternalKind kind;
    uint64_t bytes;
  };
  // The process's tracker (process-lifetime).
  static ExternalTracker& Get();

  void Add(uint64_t key, Entry entry) EXCLUDES(mutex_);
  // Removes and returns the entry for `key` when it has `kind`.
  std::optional<Entry> Take(uint64_t key, memory::ExternalKind kind) EXCLUDES(mutex_);

 private:
  Mutex mutex_;  // a leaf
  std::unordered_map<uint64_t, Entry> entries_ GUARDED_BY(mutex_);
};

}  // namespace gshare::preload
