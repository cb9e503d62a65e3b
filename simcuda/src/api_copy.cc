// Entry points: every cuMemcpy* and cuMemset* variant (sync and async, 1D/2D/3D, peer), each
// with its per-thread-default-stream (_ptds/_ptsz) twin.
#include "api.h"
#include "context.h"
#include "copy_engine.h"
#include "driver.h"

namespace {

using simcuda::kDeviceSide;
using simcuda::kHostSide;
using simcuda::kUnifiedSide;

// `reach`: the stream's context's device must reach the device sides (VMM access), as for
// every copy except the peer copies, which name their contexts.
CUresult Copy1D(uintptr_t dst, uintptr_t src, size_t n, int dst_kind, int src_kind, CUstream stream,
                bool per_thread, bool sync, bool reach = true) {
  if (CUresult r = simcuda::CheckInit(); r != CUDA_SUCCESS) return r;
  simcuda::CopyShape s;
  s.dst = dst;
  s.src = src;
  s.width = n;
  s.dst_pitch = s.src_pitch = n;
  simcuda::OpFn op;
  if (CUresult r = simcuda::MakeCopyOp(s, dst_kind, src_kind, &op); r != CUDA_SUCCESS) return r;
  return simcuda::RunOp(stream, per_thread, sync, std::move(op), reach ? &s : nullptr);
}

// 2D and 3D copies (CUDA_MEMCPY2D / CUDA_MEMCPY3D).
template <typename Desc, typename ShapeFn>
CUresult CopyStrided(const Desc* p, ShapeFn shape_fn, CUstream stream, bool per_thread, bool sync,
                     bool reach = true) {
  if (CUresult r = simcuda::CheckInit(); r != CUDA_SUCCESS) return r;
  simcuda::CopyShape s;
  int dk = 0, sk = 0;
  if (CUresult r = shape_fn(p, &s, &dk, &sk); r != CUDA_SUCCESS) return r;
  simcuda::OpFn op;
  if (CUresult r = simcuda::MakeCopyOp(s, dk, sk, &op); r != CUDA_SUCCESS) return r;
  return simcuda::RunOp(stream, per_thread, sync, std::move(op), reach ? &s : nullptr);
}

CUresult Copy2D(const CUDA_MEMCPY2D* p, CUstream stream, bool per_thread, bool sync) {
  return CopyStrided(p, simcuda::ShapeFrom2D, stream, per_thread, sync);
}

CUresult Copy3D(const CUDA_MEMCPY3D* p, CUstream stream, bool per_thread, bool sync) {
  return CopyStrided(p, simcuda::ShapeFrom3D, stream, per_thread, sync);
}

CUresult Copy3DPeer(const CUDA_MEMCPY3D_PEER* p, CUstream stream, bool per_thread, bool sync) {
  return CopyStrided(p, simcuda::ShapeFrom3DPeer, stream, per_thread, sync, /*reach=*/false);
}

CUresult CopyPeer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n,
                  CUstream stream, bool per_thread, bool sync) {
  if (CUresult r = simcuda::CheckInit(); r != CUDA_SUCCESS) return r;
  if (!simcuda::IsLiveContext(dst_ctx) || !simcuda::IsLiveContext(src_ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  return Copy1D(dst, src, n, kDeviceSide, kDeviceSide, stream, per_thread, sync, /*reach=*/false);
}

CUresult Memset(CUdeviceptr dst, size_t pitch, uint32_t value, size_t elem, size_t width,
                size_t height, CUstream stream, bool per_thread, bool sync) {
  if (CUresult r = simcuda::CheckInit(); r != CUDA_SUCCESS) return r;
  simcuda::OpFn op;
  if (CUresult r = simcuda::MakeMemsetOp(dst, pitch, value, elem, width, height, &op); r != CUDA_SUCCESS) return r;
  simcuda::CopyShape touched;  // the memset's rows, for the reach check
  touched.dst = dst;
  touched.width = width * elem;
  touched.height = height;
  touched.dst_pitch = height > 1 ? pitch : width * elem;
  return simcuda::RunOp(stream, per_thread, sync, std::move(op), &touched);
}

uintptr_t H(const void* p) { return reinterpret_cast<uintptr_t>(p); }

}  // namespace

// Defines NAME (legacy default stream) and NAME##SUFFIX (per-thread default stream).
#define SIMCUDA_PAIR(NAME, SUFFIX, PARAMS, CALL)          \
  CUresult NAME PARAMS { constexpr bool kPt = false; return CALL; } \
  CUresult NAME##SUFFIX PARAMS { constexpr bool kPt = true; return CALL; }

extern "C" {

SIMCUDA_PAIR(cuMemcpy, _ptds, (CUdeviceptr dst, CUdeviceptr src, size_t n),
             Copy1D(dst, src, n, kUnifiedSide, kUnifiedSide, nullptr, kPt, true))
SIMCUDA_PAIR(cuMemcpyAsync, _ptsz, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s),
             Copy1D(dst, src, n, kUnifiedSide, kUnifiedSide, s, kPt, false))
SIMCUDA_PAIR(cuMemcpyHtoD_v2, _ptds, (CUdeviceptr dst, const void* src, size_t n),
             Copy1D(dst, H(src), n, kDeviceSide, kHostSide, nullptr, kPt, true))
SIMCUDA_PAIR(cuMemcpyDtoH_v2, _ptds, (void* dst, CUdeviceptr src, size_t n),
             Copy1D(H(dst), src, n, kHostSide, kDeviceSide, nullptr, kPt, true))
SIMCUDA_PAIR(cuMemcpyDtoD_v2, _ptds, (CUdeviceptr dst, CUdeviceptr src, size_t n),
             Copy1D(dst, src, n, kDeviceSide, kDeviceSide, nullptr, kPt, true))
SIMCUDA_PAIR(cuMemcpyHtoDAsync_v2, _ptsz, (CUdeviceptr dst, const void* src, size_t n, CUstream s),
             Copy1D(dst, H(src), n, kDeviceSide, kHostSide, s, kPt, false))
SIMCUDA_PAIR(cuMemcpyDtoHAsync_v2, _ptsz, (void* dst, CUdeviceptr src, size_t n, CUstream s),
             Copy1D(H(dst), src, n, kHostSide, kDeviceSide, s, kPt, false))
SIMCUDA_PAIR(cuMemcpyDtoDAsync_v2, _ptsz, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s),
             Copy1D(dst, src, n, kDeviceSide, kDeviceSide, s, kPt, false))
SIMCUDA_PAIR(cuMemcpy2D_v2, _ptds, (const CUDA_MEMCPY2D* p), Copy2D(p, nullptr, kPt, true))
SIMCUDA_PAIR(cuMemcpy2DUnaligned_v2, _ptds, (const CUDA_MEMCPY2D* p), Copy2D(p, nullptr, kPt, true))
SIMCUDA_PAIR(cuMemcpy2DAsync_v2, _ptsz, (const CUDA_MEMCPY2D* p, CUstream s), Copy2D(p, s, kPt, false))
SIMCUDA_PAIR(cuMemcpy3D_v2, _ptds, (const CUDA_MEMCPY3D* p), Copy3D(p, nullptr, kPt, true))
SIMCUDA_PAIR(cuMemcpy3DAsync_v2, _ptsz, (const CUDA_MEMCPY3D* p, CUstream s), Copy3D(p, s, kPt, false))
SIMCUDA_PAIR(cuMemcpyPeer, _ptds,
             (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n),
             CopyPeer(dst, dc, src, sc, n, nullptr, kPt, true))
SIMCUDA_PAIR(cuMemcpyPeerAsync, _ptsz,
             (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream s),
             CopyPeer(dst, dc, src, sc, n, s, kPt, false))
SIMCUDA_PAIR(cuMemcpy3DPeer, _ptds, (const CUDA_MEMCPY3D_PEER* p), Copy3DPeer(p, nullptr, kPt, true))
SIMCUDA_PAIR(cuMemcpy3DPeerAsync, _ptsz, (const CUDA_MEMCPY3D_PEER* p, CUstream s), Copy3DPeer(p, s, kPt, false))

SIMCUDA_PAIR(cuMemsetD8_v2, _ptds, (CUdeviceptr d, unsigned char v, size_t n),
             Memset(d, 0, v, 1, n, 1, nullptr, kPt, true))
SIMCUDA_PAIR(cuMemsetD16_v2, _ptds, (CUdeviceptr d, unsigned short v, size_t n),
             Memset(d, 0, v, 2, n, 1, nullptr, kPt, true))
SIMCUDA_PAIR(cuMemsetD32_v2, _ptds, (CUdeviceptr d, unsigned int v, size_t n),
             Memset(d, 0, v, 4, n, 1, nullptr, kPt, true))
SIMCUDA_PAIR(cuMemsetD2D8_v2, _ptds, (CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h),
             Memset(d, p, v, 1, w, h, nullptr, kPt, true))
SIMCUDA_PAIR(cuMemsetD2D16_v2, _ptds, (CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h),
             Memset(d, p, v, 2, w, h, nullptr, kPt, true))
SIMCUDA_PAIR(cuMemsetD2D32_v2, _ptds, (CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h),
             Memset(d, p, v, 4, w, h, nullptr, kPt, true))
SIMCUDA_PAIR(cuMemsetD8Async, _ptsz, (CUdeviceptr d, unsigned char v, size_t n, CUstream s),
             Memset(d, 0, v, 1, n, 1, s, kPt, false))
SIMCUDA_PAIR(cuMemsetD16Async, _ptsz, (CUdeviceptr d, unsigned short v, size_t n, CUstream s),
             Memset(d, 0, v, 2, n, 1, s, kPt, false))
SIMCUDA_PAIR(cuMemsetD32Async, _ptsz, (CUdeviceptr d, unsigned int v, size_t n, CUstream s),
             Memset(d, 0, v, 4, n, 1, s, kPt, false))
SIMCUDA_PAIR(cuMemsetD2D8Async, _ptsz,
             (CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h, CUstream s),
             Memset(d, p, v, 1, w, h, s, kPt, false))
SIMCUDA_PAIR(cuMemsetD2D16Async, _ptsz,
             (CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h, CUstream s),
             Memset(d, p, v, 2, w, h, s, kPt, false))
SIMCUDA_PAIR(cuMemsetD2D32Async, _ptsz,
             (CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h, CUstream s),
             Memset(d, p, v, 4, w, h, s, kPt, false))

}  // extern "C"
