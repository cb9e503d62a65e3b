// Entry points: kernel launches (cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel).
// The parameter values are copied at launch (sizes from the plugin descriptor); the CPU twin
// runs later on the stream's worker, inside the launch's interval of the device's simulated
// compute timeline, which is shared by every process (one kernel at a time per simulated GPU);
// kernels of MPS client contexts co-run instead (mps_kernel.h).
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "api.h"
#include "context.h"
#include "copy_engine.h"
#include "driver.h"
#include "log.h"
#include "module.h"
#include "mps_client.h"
#include "mps_kernel.h"
#include "sim_clock.h"
#include "stream.h"

namespace {

// Natural alignment assumed for a parameter of `size` bytes in a packed parameter buffer
// (CU_LAUNCH_PARAM_BUFFER_POINTER): the largest power of two dividing it, at most 8.
size_t AlignmentOf(size_t size) {
  size_t a = 1;
  while (a < 8 && size % (a * 2) == 0) a *= 2;
  return a;
}

// The launch's own copy of its parameter values, kept alive until the kernel ran.
struct ParamBlock {
  std::vector<unsigned char> bytes;
  std::vector<size_t> offsets;
  std::vector<void*> pointers;  // into `bytes`; rebuilt after moves
  void Fix() {
    pointers.resize(offsets.size());
    for (size_t i = 0; i < offsets.size(); ++i) pointers[i] = bytes.data() + offsets[i];
  }
};

CUresult CopyParams(const SimcudaKernelDesc* desc, void** params, void** extra, ParamBlock* block) {
  unsigned n = desc->num_params;
  block->offsets.resize(n);
  size_t total = 0;
  for (unsigned i = 0; i < n; ++i) {
    total = (total + 15) / 16 * 16;  // our own copy: 16-byte aligned slots
    block->offsets[i] = total;
    total += desc->param_sizes[i];
  }
  block->bytes.assign(total + 16, 0);
  if (params != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (params != nullptr) {
    for (unsigned i = 0; i < n; ++i) {
      if (params[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(block->bytes.data() + block->offsets[i], params[i], desc->param_sizes[i]);
    }
  } else if (extra != nullptr) {
    const unsigned char* buffer = nullptr;
    size_t buffer_size = 0;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
        buffer = static_cast<const unsigned char*>(extra[i + 1]);
      } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        buffer_size = *static_cast<const size_t*>(extra[i + 1]);
      } else {
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
    if (buffer == nullptr && n > 0) return CUDA_ERROR_INVALID_VALUE;
    size_t at = 0;
    for (unsigned i = 0; i < n; ++i) {
      size_t align = AlignmentOf(desc->param_sizes[i]);
      at = (at + align - 1) / align * align;
      if (at + desc->param_sizes[i] > buffer_size) return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(block->bytes.data() + block->offsets[i], buffer + at, desc->param_sizes[i]);
      at += desc->param_sizes[i];
    }
  } else if (n > 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  block->Fix();
  return CUDA_SUCCESS;
}

// A GPU faults when a kernel dereferences memory its device cannot reach (another GPU's memory
// without peer access, a VMM mapping without access for the device). simcuda checks every
// pointer-sized parameter that points into device memory and refuses the launch with the fault's
// error (a real GPU reports it at the next synchronisation); the kernel does not run.
CUresult CheckPointerParams(const SimcudaKernelDesc* desc, const ParamBlock& block, int dev) {
  for (unsigned i = 0; i < desc->num_params; ++i) {
    if (desc->param_sizes[i] != sizeof(uint64_t)) continue;
    uint64_t value = 0;
    std::memcpy(&value, block.bytes.data() + block.offsets[i], sizeof value);
    if (value != 0 && !simcuda::KernelMayAccess(dev, static_cast<uintptr_t>(value))) {
      simcuda::Log(simcuda::LogLevel::kWarn,
                   "kernel %s on device %d: parameter %u (%#llx) is memory device %d cannot reach: "
                   "CUDA_ERROR_ILLEGAL_ADDRESS", desc->name, dev, i,
                   static_cast<unsigned long long>(value), dev);
      return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
  }
  return CUDA_SUCCESS;
}

CUresult Launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                unsigned bz, unsigned shared, CUstream h, void** params, void** extra, bool per_thread) {
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  // Before reading the context's device: a restore may be moving the contexts to other devices
  // while the process is locked (Submit waits too, but only after the cost model read it).
  simcuda::WaitIfLocked();
  CUstream_st* s = nullptr;
  if (CUresult r = simcuda::ResolveStream(h, per_thread, &s); r != CUDA_SUCCESS) return r;
  CUfunc_st* fn = nullptr;
  if (CUresult r = simcuda::ResolveFunction(f, s->ctx, &fn); r != CUDA_SUCCESS) return r;
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) return CUDA_ERROR_INVALID_VALUE;
  if (static_cast<unsigned long long>(bx) * by * bz > 1024 || bz > 64 || gy > 65535 || gz > 65535) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (shared > 232448) return CUDA_ERROR_INVALID_VALUE;
  const SimcudaKernelDesc* desc = fn->desc;
  auto block = std::make_shared<ParamBlock>();
  if (CUresult r = CopyParams(desc, params, extra, block.get()); r != CUDA_SUCCESS) return r;
  SimcudaLaunchDims dims{{gx, gy, gz}, {bx, by, bz}, shared};
  SimcudaKernelCost cost = desc->cost != nullptr ? desc->cost(&dims, block->pointers.data())
                                                 : SimcudaKernelCost{0, 0, 0};
  int dev = s->ctx->device;
  if (CUresult r = CheckPointerParams(desc, *block, dev); r != CUDA_SUCCESS) {
    // Under MPS the fault is the server's: it reaches every client of the GPU.
    if (r == CUDA_ERROR_ILLEGAL_ADDRESS && simcuda::MpsCheck(s->ctx) == CUDA_SUCCESS) {
      simcuda::MpsFatalFault(s->ctx);
    }
    return r;
  }
  const simcuda::DeviceSpec& spec = simcuda::Driver()->devices[static_cast<size_t>(dev)].spec;
  double compute_ns = spec.flops > 0 ? cost.flops / spec.flops * 1e9 : 0;
  double memory_ns = spec.memory_bytes_per_s > 0 ? cost.bytes / spec.memory_bytes_per_s * 1e9 : 0;
  double total = spec.launch_overhead_ns + std::max(0.0, cost.fixed_ns) + std::max(compute_ns, memory_ns);
  auto duration = static_cast<uint64_t>(total);
  if (CUctx_st* ctx = s->ctx; ctx->mps_slot >= 0) {  // co-runs with other MPS clients' kernels
    const simcuda::MpsDemand demand = simcuda::KernelDemand(spec, dims, memory_ns, total);
    return simcuda::Submit(s, [block, desc, dims, ctx, duration, demand](uint64_t start) {
      return simcuda::RunMpsKernel(ctx, start, duration, demand,
                                   [&] { desc->run(&dims, block->pointers.data()); });
    });
  }
  return simcuda::Submit(s, [block, desc, dims, dev, duration](uint64_t start) {
    simcuda::SimInterval iv =
        simcuda::Driver()->registry->ReserveInterval(dev, simcuda::kComputeTimeline, start, duration);
    if (iv.start_ns > simcuda::SimNowNs()) simcuda::SleepUntilSim(iv.start_ns);
    desc->run(&dims, block->pointers.data());
    simcuda::SleepUntilSim(iv.end_ns);
    return iv.end_ns;
  });
}

CUresult LaunchEx(const CUlaunchConfig* c, CUfunction f, void** params, void** extra, bool pt) {
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return Launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
                c->sharedMemBytes, c->hStream, params, extra, pt);
}

}  // namespace

extern "C" {

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                        unsigned int by, unsigned int bz, unsigned int shared, CUstream s,
                        void** kernelParams, void** extra) {
  return Launch(f, gx, gy, gz, bx, by, bz, shared, s, kernelParams, extra, false);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                             unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                             CUstream s, void** kernelParams, void** extra) {
  return Launch(f, gx, gy, gz, bx, by, bz, shared, s, kernelParams, extra, true);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                   unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                                   CUstream s, void** kernelParams) {
  return Launch(f, gx, gy, gz, bx, by, bz, shared, s, kernelParams, nullptr, false);
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                        unsigned int bx, unsigned int by, unsigned int bz,
                                        unsigned int shared, CUstream s, void** kernelParams) {
  return Launch(f, gx, gy, gz, bx, by, bz, shared, s, kernelParams, nullptr, true);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra) {
  return LaunchEx(config, f, kernelParams, extra, false);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                               void** extra) {
  return LaunchEx(config, f, kernelParams, extra, true);
}

}  // extern "C"
