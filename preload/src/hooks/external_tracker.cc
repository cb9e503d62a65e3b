// ExternalTracker (see external_tracker.h).
#include "hooks/external_tracker.h"

namespace gshare::preload {

ExternalTracker& ExternalTracker::Get() {
  static auto* tracker = new ExternalTracker();  // never destroyed: hooks may run at exit
  return *tracker;
}

void ExternalTracker::Add(uint64_t key, Entry entry) {
  MutexLock lock(mutex_);
  entries_[key] = entry;
}

std::optional<ExternalTracker::Entry> ExternalTracker::Take(uint64_t key,
                                                            memory::ExternalKind kind) {
  MutexLock lock(mutex_);
  const auto it = entries_.find(key);
  if (it == entries_.end() || it->second.kind != kind) return std::nullopt;
  const Entry entry = it->second;
  entries_.erase(it);
  return entry;
}

}  // namespace gshare::preload
