// HandleSet: the set of live handles of one kind (contexts, streams, events, ...), so that a
// stale or garbage handle is rejected with CUDA_ERROR_INVALID_HANDLE/CONTEXT instead of being
// dereferenced. Thread-safe; instances are process-lifetime singletons (never destroyed).
#ifndef SIMCUDA_SRC_HANDLE_SET_H_
#define SIMCUDA_SRC_HANDLE_SET_H_

#include <mutex>
#include <unordered_set>
#include <vector>

namespace simcuda {

template <typename T>
class HandleSet {
 public:
  void Add(T* p) {
    std::lock_guard<std::mutex> lock(mu_);
    set_.insert(p);
  }
  // True if `p` was live (and now is not).
  bool Remove(T* p) {
    std::lock_guard<std::mutex> lock(mu_);
    return set_.erase(p) != 0;
  }
  bool Contains(T* p) {
    std::lock_guard<std::mutex> lock(mu_);
    return p != nullptr && set_.count(p) != 0;
  }
  std::vector<T*> Snapshot() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::vector<T*>(set_.begin(), set_.end());
  }
  // The process-wide set for T.
  static HandleSet& Instance() {
    static HandleSet* set = new HandleSet();
    return *set;
  }

 private:
  std::mutex mu_;
  std::unordered_set<T*> set_;
};

}  // namespace simcuda

#endif  // SIMCUDA_SRC_HANDLE_SET_H_
