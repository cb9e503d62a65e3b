// Contexts and the per-thread current-context stack (see context.h).
#include "context.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <type_traits>

#include "allocations.h"
#include "driver.h"
#include "handle_set.h"
#include "mps_client.h"
#include "stream.h"

namespace simcuda {
namespace {

std::atomic<unsigned long long> g_next_ctx_id{1};

// The per-thread current-context stack. Trivially destructible on purpose: a std::vector here
// was destroyed with the main thread's thread_locals at exit(), before the atexit handlers ran,
// and a handler that pushed a context (the shim draining its work while saying goodbye) then
// wrote into freed memory ("double free detected"). Deeper pushes than kDepth drop the
// bottom-most entry (the top, which is all the driver reads, stays right).
class ContextStack {
 public:
  static constexpr size_t kDepth = 64;
  bool empty() const { return size_ == 0; }
  CUctx_st*& back() { return items_[size_ - 1]; }
  void push_back(CUctx_st* ctx) {
    if (size_ == kDepth) {
      std::copy(items_ + 1, items_ + kDepth, items_);
      --size_;
    }
    items_[size_++] = ctx;
  }
  void pop_back() { --size_; }
  void erase(CUctx_st* ctx) { size_ = static_cast<size_t>(std::remove(items_, items_ + size_, ctx) - items_); }

 private:
  CUctx_st* items_[kDepth];
  size_t size_;
};
static_assert(std::is_trivially_destructible_v<ContextStack>);

ContextStack& Stack() {
  thread_local ContextStack stack{};
  return stack;
}

std::vector<CUstream_st*> AllStreams(CUctx_st* ctx) {
  std::lock_guard<std::mutex> lock(ctx->mu);
  std::vector<CUstream_st*> all = ctx->streams;
  for (auto& [tid, s] : ctx->per_thread) all.push_back(s);
  if (ctx->legacy != nullptr) all.push_back(ctx->legacy);
  return all;
}

}  // namespace

void ReleaseContextModules(CUctx_st* ctx);  // module.cc

CUctx_st* NewContext(int dev, unsigned flags, bool primary) {
  auto* ctx = new CUctx_st();
  ctx->magic = kContextMagic;
  ctx->device = dev;
  ctx->flags = flags;
  ctx->primary = primary;
  ctx->id = g_next_ctx_id.fetch_add(1);
  ctx->legacy = NewStream(ctx, 0, 0, StreamKind::kLegacy);
  HandleSet<CUctx_st>::Instance().Add(ctx);
  return ctx;
}

void TeardownContext(CUctx_st* ctx) {
  SynchronizeContext(ctx);
  std::vector<CUstream_st*> streams;
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    streams = ctx->streams;
    for (auto& [tid, s] : ctx->per_thread) streams.push_back(s);
    ctx->streams.clear();
    ctx->per_thread.clear();
  }
  for (CUstream_st* s : streams) DeleteStream(s);
  FreeContextMemory(ctx);
  ReleaseContextModules(ctx);
  MpsDetachContext(ctx);
  if (!ctx->primary) {
    HandleSet<CUctx_st>::Instance().Remove(ctx);
    DeleteStream(ctx->legacy);
    ctx->magic = 0;
    delete ctx;
  }
}

bool IsLiveContext(CUctx_st* ctx) { return HandleSet<CUctx_st>::Instance().Contains(ctx); }

void ForgetContextOnThisThread(CUctx_st* ctx) {
  Stack().erase(ctx);
}

CUctx_st* CurrentContext() {
  auto& stack = Stack();
  return stack.empty() ? nullptr : stack.back();
}

CUresult GetCurrent(CUctx_st** ctx) {
  if (Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUctx_st* c = CurrentContext();
  if (c == nullptr || !IsLiveContext(c)) return CUDA_ERROR_INVALID_CONTEXT;
  *ctx = c;
  return CUDA_SUCCESS;
}

void SetCurrent(CUctx_st* ctx) {
  auto& stack = Stack();
  if (ctx == nullptr) {
    if (!stack.empty()) stack.pop_back();
    return;
  }
  if (stack.empty()) {
    stack.push_back(ctx);
  } else {
    stack.back() = ctx;
  }
}

void PushCurrent(CUctx_st* ctx) { Stack().push_back(ctx); }

CUctx_st* PopCurrent() {
  auto& stack = Stack();
  if (stack.empty()) return nullptr;
  CUctx_st* top = stack.back();
  stack.pop_back();
  return top;
}

void SynchronizeContext(CUctx_st* ctx) {
  for (CUstream_st* s : AllStreams(ctx)) SynchronizeStream(s);
}

}  // namespace simcuda
