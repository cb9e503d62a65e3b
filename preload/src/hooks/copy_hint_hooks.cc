// Batch copies (cuMemcpyBatchAsync, cuMemcpy3DBatchAsync; every ABI version and per-thread form):
// work submissions like the generated gate forwarders (submission gate, in-flight tracker), whose
// location hints name the application's one device by its CUdevice or ordinal 0
// (hooks/device_view.h). A device hint naming it is passed as the physical GPU, another device id
// is CUDA_ERROR_INVALID_DEVICE (before the gate), host hints pass unchanged. The hints are only
// copied when one needs rewriting (a hint already naming the physical GPU, or none, costs a scan).
#include <utility>
#include <vector>

#include "hooks/device_view.h"
#include "hooks/submission.h"
#include "runtime/backtrace.h"

using gshare::preload::RealDriver;
using gshare::preload::Runtime;

namespace {

// `items` (or, when a device hint among them must change, a mapped copy in *storage) in *use.
// `hints(item, f)` calls f on each location hint of one item.
template <typename T, typename Hints>
CUresult MapHints(T* items, size_t count, std::vector<T>* storage, T** use, Hints hints) {
  *use = items;
  const Runtime& rt = Runtime::Get();
  if (items == nullptr || rt.memory() == nullptr) return CUDA_SUCCESS;
  const CUdevice app = rt.AppDevice();
  bool rewrite = false;
  for (size_t i = 0; i < count && !rewrite; ++i) {
    hints(items[i], [&](CUmemLocation* l) {
      rewrite = rewrite || (l->type == CU_MEM_LOCATION_TYPE_DEVICE && l->id != app);
    });
  }
  if (!rewrite) return CUDA_SUCCESS;
  storage->assign(items, items + count);
  CUresult r = CUDA_SUCCESS;
  for (T& item : *storage) {
    hints(item, [&](CUmemLocation* l) {
      if (r == CUDA_SUCCESS) r = gshare::preload::MapDeviceLocation(rt, l);
    });
  }
  *use = storage->data();
  return r;
}

constexpr auto kAttributeHints = [](CUmemcpyAttributes& a, auto f) {
  f(&a.srcLocHint);
  f(&a.dstLocHint);
};

constexpr auto kOperandHints = [](CUDA_MEMCPY3D_BATCH_OP& op, auto f) {
  if (op.src.type == CU_MEMCPY_OPERAND_TYPE_POINTER) f(&op.src.op.ptr.locHint);
  if (op.dst.type == CU_MEMCPY_OPERAND_TYPE_POINTER) f(&op.dst.op.ptr.locHint);
};

// `call(items to use)` once the hints are mapped (MapHints).
template <typename T, typename Hints, typename Call>
CUresult WithHints(T* items, size_t count, Hints hints, Call call) {
  std::vector<T> storage;
  T* use = nullptr;
  if (const CUresult r = MapHints(items, count, &storage, &use, hints); r != CUDA_SUCCESS) return r;
  return call(use);
}

// What a generated gate forwarder does: admitted by the gate, the stream noted, the real call.
template <typename Fn, typename... Args>
CUresult Submit(Fn RealDriver::*member, const char* api, CUstream stream, bool per_thread,
                Args&&... args) {
  return gshare::preload::GatedSubmission(api, stream, per_thread, [&](const RealDriver& real) {
    const Fn fn = real.*member;
    return fn != nullptr ? fn(std::forward<Args>(args)...) : gshare::preload::MissingEntryPoint(real);
  });
}

}  // namespace

extern "C" {

GSHARE_EXPORT CUresult cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                                          size_t count, CUmemcpyAttributes* attrs,
                                          size_t* attrsIdxs, size_t numAttrs, size_t* failIdx,
                                          CUstream hStream) {
  return WithHints(attrs, numAttrs, kAttributeHints, [&](CUmemcpyAttributes* use) {
    return Submit(&RealDriver::cuMemcpyBatchAsync, "cuMemcpyBatchAsync", hStream, false, dsts, srcs,
                  sizes, count, use, attrsIdxs, numAttrs, failIdx, hStream);
  });
}
GSHARE_EXPORT CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                                               size_t count, CUmemcpyAttributes* attrs,
                                               size_t* attrsIdxs, size_t numAttrs, size_t* failIdx,
                                               CUstream hStream) {
  return WithHints(attrs, numAttrs, kAttributeHints, [&](CUmemcpyAttributes* use) {
    return Submit(&RealDriver::cuMemcpyBatchAsync_ptsz, "cuMemcpyBatchAsync_ptsz", hStream, true,
                  dsts, srcs, sizes, count, use, attrsIdxs, numAttrs, failIdx, hStream);
  });
}
GSHARE_EXPORT CUresult cuMemcpyBatchAsync_v2(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                                             size_t count, CUmemcpyAttributes* attrs,
                                             size_t* attrsIdxs, size_t numAttrs, CUstream hStream) {
  return WithHints(attrs, numAttrs, kAttributeHints, [&](CUmemcpyAttributes* use) {
    return Submit(&RealDriver::cuMemcpyBatchAsync_v2, "cuMemcpyBatchAsync_v2", hStream, false, dsts,
                  srcs, sizes, count, use, attrsIdxs, numAttrs, hStream);
  });
}
GSHARE_EXPORT CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs,
                                                  size_t* sizes, size_t count,
                                                  CUmemcpyAttributes* attrs, size_t* attrsIdxs,
                                                  size_t numAttrs, CUstream hStream) {
  return WithHints(attrs, numAttrs, kAttributeHints, [&](CUmemcpyAttributes* use) {
    return Submit(&RealDriver::cuMemcpyBatchAsync_v2_ptsz, "cuMemcpyBatchAsync_v2_ptsz", hStream,
                  true, dsts, srcs, sizes, count, use, attrsIdxs, numAttrs, hStream);
  });
}

GSHARE_EXPORT CUresult cuMemcpy3DBatchAsync(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList,
                                            size_t* failIdx, unsigned long long flags,
                                            CUstream hStream) {
  return WithHints(opList, numOps, kOperandHints, [&](CUDA_MEMCPY3D_BATCH_OP* use) {
    return Submit(&RealDriver::cuMemcpy3DBatchAsync, "cuMemcpy3DBatchAsync", hStream, false, numOps,
                  use, failIdx, flags, hStream);
  });
}
GSHARE_EXPORT CUresult cuMemcpy3DBatchAsync_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList,
                                                 size_t* failIdx, unsigned long long flags,
                                                 CUstream hStream) {
  return WithHints(opList, numOps, kOperandHints, [&](CUDA_MEMCPY3D_BATCH_OP* use) {
    return Submit(&RealDriver::cuMemcpy3DBatchAsync_ptsz, "cuMemcpy3DBatchAsync_ptsz", hStream,
                  true, numOps, use, failIdx, flags, hStream);
  });
}
GSHARE_EXPORT CUresult cuMemcpy3DBatchAsync_v2(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList,
                                               unsigned long long flags, CUstream hStream) {
  return WithHints(opList, numOps, kOperandHints, [&](CUDA_MEMCPY3D_BATCH_OP* use) {
    return Submit(&RealDriver::cuMemcpy3DBatchAsync_v2, "cuMemcpy3DBatchAsync_v2", hStream, false,
                  numOps, use, flags, hStream);
  });
}
GSHARE_EXPORT CUresult cuMemcpy3DBatchAsync_v2_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList,
                                                    unsigned long long flags, CUstream hStream) {
  return WithHints(opList, numOps, kOperandHints, [&](CUDA_MEMCPY3D_BATCH_OP* use) {
    return Submit(&RealDriver::cuMemcpy3DBatchAsync_v2_ptsz, "cuMemcpy3DBatchAsync_v2_ptsz",
                  hStream, true, numOps, use, flags, hStream);
  });
}

}  // extern "C"
