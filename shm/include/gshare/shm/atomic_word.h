// Atomic access to plain integer fields of shared-memory layouts. The layouts (channel, event
// ring) are declared with plain uint32_t/uint64_t members so their offsets can be checked with
// offsetof/static_assert; every access to a field that another process may touch concurrently
// goes through these helpers (GCC/Clang __atomic builtins, lock-free for naturally aligned 4-
// and 8-byte words, which the layouts static_assert). Thread- and process-safe by construction.
#pragma once

#include <cstdint>
#include <type_traits>

namespace gshare::shm {

template <typename T>
concept SharedWord = std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>;

static_assert(__atomic_always_lock_free(sizeof(uint32_t), nullptr));
static_assert(__atomic_always_lock_free(sizeof(uint64_t), nullptr));

template <SharedWord T>
inline T LoadAcquire(const T* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
template <SharedWord T>
inline T LoadRelaxed(const T* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
template <SharedWord T>
inline T LoadSeqCst(const T* p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
template <SharedWord T>
inline void StoreRelease(T* p, T v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
template <SharedWord T>
inline void StoreRelaxed(T* p, T v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
template <SharedWord T>
inline void StoreSeqCst(T* p, T v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
template <SharedWord T>
inline T FetchAdd(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
// Compare-and-swap (seq_cst on success and failure). On failure `*expected` gets the value seen.
template <SharedWord T>
inline bool CompareExchange(T* p, T* expected, T desired) {
  return __atomic_compare_exchange_n(p, expected, desired, /*weak=*/false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST);
}
template <SharedWord T>
inline T FetchSub(T* p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }
#if defined(__SANITIZE_THREAD__)
// ThreadSanitizer does not model standalone fences (GCC refuses them under -fsanitize=thread).
// In TSan builds a seq_cst read-modify-write on a thread-local word stands in: a full barrier
// in hardware, and every shared access here is atomic, so TSan has nothing to misreport.
inline void FenceTsan() {
  static thread_local uint32_t word = 0;
  __atomic_fetch_add(&word, 0U, __ATOMIC_SEQ_CST);
}
inline void FenceAcquire() { FenceTsan(); }
inline void FenceRelease() { FenceTsan(); }
inline void FenceSeqCst() { FenceTsan(); }
#else
inline void FenceAcquire() { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
inline void FenceRelease() { __atomic_thread_fence(__ATOMIC_RELEASE); }
inline void FenceSeqCst() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
#endif

// A hint to the CPU inside spin loops.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace gshare::shm
