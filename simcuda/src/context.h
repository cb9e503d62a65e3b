// Contexts (CUctx_st) and the per-thread current-context stack.
// A context owns its streams: the legacy default stream, one per-thread default stream per
// thread that used one, and the streams created in it. Thread-safety: the stack is
// thread-local; a context's stream lists are guarded by its mutex.
#ifndef SIMCUDA_SRC_CONTEXT_H_
#define SIMCUDA_SRC_CONTEXT_H_

#include <cstdint>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api.h"

struct CUctx_st {
  uint32_t magic;
  int device;
  unsigned flags;
  bool primary;
  unsigned long long id;
  std::mutex mu;
  CUstream_st* legacy = nullptr;                                   // created with the context
  std::vector<CUstream_st*> streams;                               // created by the program
  std::unordered_map<std::thread::id, CUstream_st*> per_thread;    // per-thread default streams
  // MPS mode (mps_client.h): the registry slot of a client context (-1: not a client context),
  // its context memory, and the lock that runs its kernels one at a time.
  int mps_slot = -1;
  uint64_t mps_context_bytes = 0;
  std::mutex mps_kernel_mu;
};

namespace simcuda {

inline constexpr uint32_t kContextMagic = 0x43545831;  // "CTX1"

// Creates a context on `dev` (not made current).
CUctx_st* NewContext(int dev, unsigned flags, bool primary);
// Synchronises and destroys every stream, frees the context's allocations and the object
// (unless primary: a primary context's object is kept and reused by the next retain).
void TeardownContext(CUctx_st* ctx);
// True if `ctx` is a live context handle.
bool IsLiveContext(CUctx_st* ctx);
// Removes `ctx` from every... (only this thread's) stack and the current slot.
void ForgetContextOnThisThread(CUctx_st* ctx);

// The calling thread's current context, or nullptr.
CUctx_st* CurrentContext();
// NOT_INITIALIZED before cuInit, INVALID_CONTEXT when no context is current.
CUresult GetCurrent(CUctx_st** ctx);
// Current-context stack operations.
void SetCurrent(CUctx_st* ctx);       // replaces the top (pushes if empty; pops if ctx == null)
void PushCurrent(CUctx_st* ctx);
CUctx_st* PopCurrent();               // nullptr if empty
// Waits for all work in every stream of `ctx`.
void SynchronizeContext(CUctx_st* ctx);

}  // namespace simcuda

#endif  // SIMCUDA_SRC_CONTEXT_H_
