#!/usr/bin/env python3
"""MPS probe for tests/gpu/mps-check.sh: one CUDA client (or the checkpoint driver) per process.

Standard library + ctypes on libcuda.so.1 only (no build, no PyTorch): the GPU host needs
python3 and the NVIDIA driver. Every command prints `key=value` lines; errors name the driver
call (`error=CUDA_ERROR_... step=cuCtxSetCurrent`) and exit 3. Commands:

  info                      cuInit; device name, SMs, memory, CU_DEVICE_ATTRIBUTE_MPS_ENABLED
  calibrate --kind fma      the fma kernel's iteration count for --target-ms per launch alone
  run --kind fma|copy --param N --go FILE --seconds S
                            prepares, prints `ready`, waits for FILE (holding a start time),
                            then launches back to back until start + S: kernels per second
  hold [--seconds S]        a trivial client: context, cuMemGetInfo, then sleeps (until it
                            is killed or S seconds): for the client limit and context memory
  vmm                       cuMemCreate/Map/SetAccess, write, Unmap, Map again at the same
                            address (same handle, then a new one), every byte read back, and
                            a device write through the remapped address (gshare's same-address
                            swap, the question behind mps_swaps_verified)
  ckpt-target               allocates and fills 64 MiB, prints `ready pid=`, then on each
                            `verify` line on stdin checks the contents (after a checkpoint)
  ckpt --pid P              from another process: cuCheckpointProcessLock/Checkpoint/Restore/
                            Unlock on P, with cuCheckpointProcessGetState between the steps
  fit --results FILE        reads the `mps-check:` lines of a run and prints the simulator's
                            parameters (the contention model of policy/interference.h)
  verdict --results FILE [--simulator FILE]
                            the run's verdict: whether mps_swaps_verified = true is safe on
                            this GPU, and simcuda's MPS parameters for it
  self-test                 checks the model, the fit and the argument parsing (no GPU)
Without a driver every GPU command exits 3 with error=no_driver.
"""
import argparse
import ctypes
import math
import os
import sys
import time

# The kernels, PTX for compute_80 (JIT-compiled by the driver; sm_80 and newer), from this
# CUDA source with `nvcc -ptx -arch=compute_80 -O3` (CUDA 13.0):
#   extern "C" __global__ void fma_loop(float* out, unsigned iters) {
#     float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.9999f, d = blockIdx.x * 1e-3f;
#     for (unsigned i = 0; i < iters; ++i) {
#       a = fmaf(a, b, c); d = fmaf(d, c, b); b = fmaf(b, a, d); c = fmaf(c, d, a);
#     }
#     if (a + b + c + d == 12345.0f) out[blockIdx.x * blockDim.x + threadIdx.x] = a;
#   }
#   extern "C" __global__ void copy_loop(const float4* __restrict__ src,
#                                        float4* __restrict__ dst, unsigned long long n) {
#     for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
#          i < n; i += (unsigned long long)gridDim.x * blockDim.x) dst[i] = src[i];
#   }
PTX = None  # filled below from PTX_TEXT

THREADS = 256          # threads per block of both kernels
BLOCKS_PER_SM = 8      # 8 x 256 = 2048 threads per SM: a full SM (simcuda's d = 1)
COPY_BYTES = 1 << 30   # the copy kernel's source (and destination) size
FLOPS_PER_ITER = 8     # 4 FMAs per iteration per thread


class CudaError(Exception):
    def __init__(self, step, code, name):
        super().__init__(f"{step}: {name} ({code})")
        self.step, self.code, self.name = step, code, name


class Cuda:
    """The few driver entry points the probe calls."""

    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise CudaError("dlopen", -1, "no_driver") from e

    def name_of(self, code):
        s = ctypes.c_char_p()
        if self.lib.cuGetErrorName(code, ctypes.byref(s)) == 0 and s.value:
            return s.value.decode()
        return f"CUresult_{code}"

    def __call__(self, fn, *args):
        f = getattr(self.lib, fn, None)
        if f is None:
            raise CudaError(fn, -1, "missing_in_driver")
        r = f(*args)
        if r != 0:
            raise CudaError(fn, r, self.name_of(r))

    def has(self, fn):
        return getattr(self.lib, fn, None) is not None


def u64():
    return ctypes.c_uint64()


def init_device(cu, ordinal=0, context=True):
    """cuInit, device `ordinal`, its primary context made current; returns (dev, ctx)."""
    cu("cuInit", 0)
    dev = ctypes.c_int()
    cu("cuDeviceGet", ctypes.byref(dev), ordinal)
    ctx = ctypes.c_void_p()
    if context:
        cu("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
        cu("cuCtxSetCurrent", ctx)
    return dev, ctx


def attr(cu, dev, number):
    v = ctypes.c_int()
    cu("cuDeviceGetAttribute", ctypes.byref(v), number, dev)
    return v.value


ATTR_SMS = 16
ATTR_VMM = 102
ATTR_MPS_ENABLED = 133


def mem_info(cu):
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    cu("cuMemGetInfo_v2", ctypes.byref(free), ctypes.byref(total))
    return free.value, total.value


def share_env():
    return os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "100")


# --- commands --------------------------------------------------------------------------------

def cmd_info(args):
    cu = Cuda()
    ver = ctypes.c_int()
    cu("cuDriverGetVersion", ctypes.byref(ver))
    dev, _ = init_device(cu, args.device)
    name = ctypes.create_string_buffer(256)
    cu("cuDeviceGetName", name, 256, dev)
    free, total = mem_info(cu)
    print(f"driver_cuda={ver.value}")
    print(f"name={name.value.decode().replace(' ', '_')}")
    print(f"sms={attr(cu, dev, ATTR_SMS)}")
    print(f"vmm_supported={attr(cu, dev, ATTR_VMM)}")
    print(f"mps_enabled={attr(cu, dev, ATTR_MPS_ENABLED)}")
    print(f"total_bytes={total} used_bytes={total - free}")
    print(f"share={share_env()} checkpoint_api={int(cu.has('cuCheckpointProcessLock'))}")


class Kernels:
    def __init__(self, cu):
        self.cu = cu
        mod = ctypes.c_void_p()
        cu("cuModuleLoadData", ctypes.byref(mod), ctypes.c_char_p(PTX))
        self.fns = {}
        for k in ("fma_loop", "copy_loop"):
            f = ctypes.c_void_p()
            cu("cuModuleGetFunction", ctypes.byref(f), mod, k.encode())
            self.fns[k] = f

    def launch(self, name, blocks, params):
        arr = (ctypes.c_void_p * len(params))(*[ctypes.cast(ctypes.byref(p), ctypes.c_void_p)
                                                 for p in params])
        self.cu("cuLaunchKernel", self.fns[name], blocks, 1, 1, THREADS, 1, 1, 0, None, arr, None)


class Workload:
    """One kernel kind, ready to launch: fma (compute-bound) or copy (bandwidth-bound)."""

    def __init__(self, cu, dev, kind, param):
        self.cu, self.kind = cu, kind
        self.k = Kernels(cu)
        self.sms = attr(cu, dev, ATTR_SMS)
        self.blocks = self.sms * BLOCKS_PER_SM
        if kind == "fma":
            self.out = u64()
            cu("cuMemAlloc_v2", ctypes.byref(self.out), self.blocks * THREADS * 4)
            self.params = [ctypes.c_uint64(self.out.value), ctypes.c_uint32(int(param))]
            self.name = "fma_loop"
            self.flops = self.blocks * THREADS * int(param) * FLOPS_PER_ITER
            self.bytes = 0
        elif kind == "copy":
            self.src, self.dst = u64(), u64()
            cu("cuMemAlloc_v2", ctypes.byref(self.src), COPY_BYTES)
            cu("cuMemAlloc_v2", ctypes.byref(self.dst), COPY_BYTES)
            cu("cuMemsetD32_v2", self.src, 0x3F800000, COPY_BYTES // 4)
            self.params = [ctypes.c_uint64(self.src.value), ctypes.c_uint64(self.dst.value),
                           ctypes.c_uint64(COPY_BYTES // 16)]
            self.name = "copy_loop"
            self.flops = 0
            self.bytes = 2 * COPY_BYTES
        else:
            raise SystemExit(f"unknown kernel kind {kind!r} (fma or copy)")

    def launch(self, n=1):
        for _ in range(n):
            self.k.launch(self.name, self.blocks, self.params)

    def sync(self):
        self.cu("cuCtxSynchronize")

    def time_one(self, n=3):
        self.launch(1)
        self.sync()
        t = time.perf_counter()
        self.launch(n)
        self.sync()
        return (time.perf_counter() - t) / n


def cmd_calibrate(args):
    cu = Cuda()
    dev, _ = init_device(cu, args.device)
    iters = 1024
    while True:
        w = Workload(cu, dev, "fma", iters)
        ms = w.time_one() * 1e3
        if ms >= args.target_ms / 4 or iters >= 1 << 26:
            break
        iters *= 4
    iters = max(1, int(iters * args.target_ms / max(ms, 1e-3)))
    w = Workload(cu, dev, "fma", iters)
    ms = w.time_one() * 1e3
    c = Workload(cu, dev, "copy", 0)
    cms = c.time_one() * 1e3
    print(f"fma_iters={iters} fma_ms={ms:.3f} fma_tflops={w.flops / ms / 1e9:.2f}")
    print(f"copy_ms={cms:.3f} copy_gbps={c.bytes / cms / 1e6:.1f} sms={w.sms}")


def cmd_run(args):
    cu = Cuda()
    dev, _ = init_device(cu, args.device)
    w = Workload(cu, dev, args.kind, args.param)
    w.time_one(1)  # warm: module loaded, memory touched
    mps = attr(cu, dev, ATTR_MPS_ENABLED)
    print(f"ready kind={args.kind} mps_enabled={mps}", flush=True)
    deadline = time.time() + args.wait
    while not os.path.exists(args.go):
        if time.time() > deadline:
            raise SystemExit("error=no_go_file step=wait")
        time.sleep(0.002)
    with open(args.go) as f:
        start = float(f.read().strip() or time.time())
    late = time.time() - start
    while time.time() < start:
        time.sleep(0.0005)
    batch = 1 if args.kind == "fma" else 4
    t0 = time.perf_counter()
    end = t0 + args.seconds
    n = 0
    while time.perf_counter() < end:
        w.launch(batch)
        w.sync()
        n += batch
    el = time.perf_counter() - t0
    print(f"kind={args.kind} share={share_env()} mps_enabled={mps} kernels={n} seconds={el:.4f} "
          f"rate={n / el:.3f} ms_per_kernel={el / max(n, 1) * 1e3:.4f} late_s={late:.4f}")


def cmd_hold(args):
    cu = Cuda()
    step = "cuInit"
    try:
        dev, _ = init_device(cu, args.device)
        step = "cuMemGetInfo"
        free, total = mem_info(cu)
        mps = attr(cu, dev, ATTR_MPS_ENABLED)
    except CudaError as e:
        print(f"error={e.name} step={e.step}", flush=True)
        return 3
    print(f"ok pid={os.getpid()} share={share_env()} mps_enabled={mps} used_bytes={total - free} "
          f"free_bytes={free} total_bytes={total}", flush=True)
    # Holds the context until killed (SIGTERM: no work in flight) or the time limit.
    time.sleep(max(0.0, args.seconds))
    return 0


class MemLocation(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class AllocProp(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                ("location", MemLocation), ("win32HandleMetaData", ctypes.c_void_p),
                ("allocFlags", AllocFlags)]


class AccessDesc(ctypes.Structure):
    _fields_ = [("location", MemLocation), ("flags", ctypes.c_int)]


def cmd_vmm(args):
    cu = Cuda()
    results = {}
    try:
        dev, _ = init_device(cu, args.device)
        print(f"mps_enabled={attr(cu, dev, ATTR_MPS_ENABLED)} share={share_env()}")
        prop = AllocProp(type=1, requestedHandleTypes=0, location=MemLocation(1, dev.value))
        gran = ctypes.c_size_t()
        cu("cuMemGetAllocationGranularity", ctypes.byref(gran), ctypes.byref(prop), 0)
        size = max(gran.value, 2 << 20) * 8
        va = u64()
        cu("cuMemAddressReserve", ctypes.byref(va), size, 0, 0, 0)
        access = AccessDesc(MemLocation(1, dev.value), 3)  # READWRITE
        words = size // 4
        host = (ctypes.c_uint32 * words)()

        def map_handle():
            h = u64()
            cu("cuMemCreate", ctypes.byref(h), size, ctypes.byref(prop), 0)
            cu("cuMemMap", va, size, 0, h, 0)
            cu("cuMemSetAccess", va, size, ctypes.byref(access), 1)
            return h

        def check(pattern):  # every byte
            cu("cuMemcpyDtoH_v2", host, va, size)
            return bytes(host) == pattern.to_bytes(4, "little") * words

        h = map_handle()
        cu("cuMemsetD32_v2", va, 0xA5A5A5A5, words)
        cu("cuCtxSynchronize")
        results["vmm_first_map"] = int(check(0xA5A5A5A5))
        # Unmap and map the same physical memory again at the same address: contents kept.
        cu("cuMemUnmap", va, size)
        cu("cuMemMap", va, size, 0, h, 0)
        cu("cuMemSetAccess", va, size, ctypes.byref(access), 1)
        results["vmm_remap_same_handle"] = int(check(0xA5A5A5A5))
        # gshare's swap-in: the old physical memory released, new memory at the same address,
        # the saved contents copied in.
        cu("cuMemUnmap", va, size)
        cu("cuMemRelease", h)
        h2 = map_handle()
        host2 = (ctypes.c_uint32 * words)(*([0x5A5A5A5A] * words))
        cu("cuMemcpyHtoD_v2", va, host2, size)
        results["vmm_remap_new_handle"] = int(check(0x5A5A5A5A))
        # The device reaches the new memory through the old address (kernels after a swap-in).
        cu("cuMemsetD32_v2", va, 0x3C3C3C3C, words)
        cu("cuCtxSynchronize")
        results["vmm_device_write_after_remap"] = int(check(0x3C3C3C3C))
        cu("cuMemUnmap", va, size)
        cu("cuMemRelease", h2)
        cu("cuMemAddressFree", va, size)
        ok = all(results.values())
        print(" ".join(f"{k}={v}" for k, v in results.items()) + f" bytes={size} checked_bytes={size}")
        print(f"vmm={'works' if ok else 'fails'}")
        return 0 if ok else 1
    except CudaError as e:
        print(" ".join(f"{k}={v}" for k, v in results.items()))
        print(f"vmm=fails error={e.name} step={e.step}")
        return 1


def cmd_ckpt_target(args):
    cu = Cuda()
    dev, _ = init_device(cu, args.device)
    size = 64 << 20
    p = u64()
    cu("cuMemAlloc_v2", ctypes.byref(p), size)
    cu("cuMemsetD32_v2", p, 0xC0FFEE11, size // 4)
    cu("cuCtxSynchronize")
    print(f"ready pid={os.getpid()} mps_enabled={attr(cu, dev, ATTR_MPS_ENABLED)} bytes={size}",
          flush=True)
    host = (ctypes.c_uint32 * (size // 4))()
    for line in sys.stdin:
        if line.strip() != "verify":
            break
        try:
            cu("cuMemcpyDtoH_v2", host, p, size)
            bad = sum(1 for i in range(0, size // 4, 997) if host[i] != 0xC0FFEE11)
            cu("cuMemsetD32_v2", p, 0xC0FFEE11, size // 4)  # the GPU still takes work
            cu("cuCtxSynchronize")
            print(f"verified bad={bad}", flush=True)
        except CudaError as e:
            print(f"verified error={e.name} step={e.step}", flush=True)
    return 0


class LockArgs(ctypes.Structure):
    _fields_ = [("timeoutMs", ctypes.c_uint), ("reserved0", ctypes.c_uint),
                ("reserved1", ctypes.c_uint64 * 7)]


class Reserved64(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_uint64 * 8)]


class RestoreArgs(ctypes.Structure):
    _fields_ = [("gpuPairs", ctypes.c_void_p), ("gpuPairsCount", ctypes.c_uint),
                ("reserved", ctypes.c_char * (52 - ctypes.sizeof(ctypes.c_void_p))),
                ("reserved1", ctypes.c_uint64)]


STATES = {0: "running", 1: "locked", 2: "checkpointed", 3: "failed"}


def cmd_ckpt(args):
    cu = Cuda()
    if not cu.has("cuCheckpointProcessLock"):
        print("checkpoint=fails error=no_checkpoint_api step=dlsym")
        return 1
    cu("cuInit", 0)
    pid = args.pid
    states = []

    def state():
        s = ctypes.c_int()
        cu("cuCheckpointProcessGetState", pid, ctypes.byref(s))
        states.append(STATES.get(s.value, str(s.value)))

    times = {}
    try:
        state()
        for step, fn, a in (("lock", "cuCheckpointProcessLock", LockArgs(timeoutMs=args.timeout_ms)),
                            ("checkpoint", "cuCheckpointProcessCheckpoint", Reserved64()),
                            ("restore", "cuCheckpointProcessRestore", RestoreArgs()),
                            ("unlock", "cuCheckpointProcessUnlock", Reserved64())):
            t = time.perf_counter()
            cu(fn, pid, ctypes.byref(a))
            times[step] = (time.perf_counter() - t) * 1e3
            state()
    except CudaError as e:
        if "lock" in times and "unlock" not in times and e.step != "cuCheckpointProcessRestore":
            try:  # leave the target running
                cu("cuCheckpointProcessUnlock", pid, ctypes.byref(Reserved64()))
            except CudaError:
                pass
        print(f"states={','.join(states)} " + " ".join(f"{k}_ms={v:.1f}" for k, v in times.items()))
        print(f"checkpoint=fails error={e.name} step={e.step}")
        return 1
    print(f"states={','.join(states)} " + " ".join(f"{k}_ms={v:.1f}" for k, v in times.items()))
    print("checkpoint=works")
    return 0


# --- the contention model and its fit ---------------------------------------------------------

MIN_DEMAND = 0.01


def model_slowdown(self_share, self_d, self_b, others):
    """policy/include/gshare/policy/interference.h's ContentionSlowdown; others: [(s, d, b)]."""
    def eff(s, d):
        return min(max(d, MIN_DEMAND), s)
    members = [(self_share, self_d, self_b)] + list(others)
    compute = sum(eff(s, d) for s, d, _ in members)
    bandwidth = sum(min(max(b, 0.0), 1.0) for _, _, b in members)
    rho = (eff(self_share, self_d) / max(self_d, MIN_DEMAND)) / max(1.0, compute)
    beta = max(1.0, bandwidth)
    b = min(max(self_b, 0.0), 1.0)
    return (1.0 - b) / rho + b * max(1.0 / rho, beta)


def fit(observations):
    """observations: [(kind, share, [(other_kind, other_share)], slowdown)]. Returns
    ({kind: (d, b)}, rms log error). Alternating grid search over each kind's (d, b)."""
    kinds = sorted({o[0] for o in observations} | {k for o in observations for k, _ in o[2]})
    params = {k: (1.0, 1.0 if k == "copy" else 0.0) for k in kinds}
    grid_d = [i / 50 for i in range(1, 51)]
    grid_b = [i / 50 for i in range(0, 51)]

    def err(p):
        e = 0.0
        for kind, s, others, sd in observations:
            d, b = p[kind]
            pred = model_slowdown(s, d, b, [(os_, *p[ok]) for ok, os_ in others])
            e += math.log(pred / sd) ** 2
        return e

    for _ in range(4):
        for k in kinds:
            best = None
            for d in grid_d:
                for b in grid_b:
                    trial = dict(params)
                    trial[k] = (d, b)
                    e = err(trial)
                    if best is None or e < best[0]:
                        best = (e, (d, b))
            params[k] = best[1]
    return params, math.sqrt(err(params) / max(1, len(observations)))


def parse_kv(line):
    out = {}
    for tok in line.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            out[k] = v
    return out


def cmd_fit(args):
    pairs, sims = [], {}
    with open(args.results) as f:
        for line in f:
            if not line.startswith("mps-check: "):
                continue
            kv = parse_kv(line)
            if kv.get("check") == "pair" and kv.get("slowdown", "") not in ("", "nan"):
                others = []
                if kv.get("with", "none") != "none":
                    others = [(kv["with"], float(kv["share"]) / 100)]
                pairs.append((kv["kind"], float(kv["share"]) / 100, others, float(kv["slowdown"])))
            for key in ("client_limit", "client_limit_at_least", "context_mib_per_sm", "fma_tflops", "copy_gbps", "sms",
                        "total_bytes", "vmm", "checkpoint", "name"):
                if key in kv and kv.get("check") in ("client_limit", "context_memory", "calibrate",
                                                     "info", "vmm", "checkpoint"):
                    sims[key] = kv[key]
    print("== simulator parameters (docs/simcuda.md \"MPS mode\"; SIMCUDA_CONFIG keys) ==")
    if "client_limit" in sims:
        print(f"mps_max_clients = {sims['client_limit']}            # measured client limit")
    elif "client_limit_at_least" in sims:
        print(f"# mps_max_clients >= {sims['client_limit_at_least']} (no client was refused)")
    else:
        print("# mps_max_clients: not measured (keep 48)")
    if "context_mib_per_sm" in sims:
        print(f"mps_context_mib_per_sm = {sims['context_mib_per_sm']}   # context memory at 100% / SMs")
    else:
        print("# mps_context_mib_per_sm: not measured (keep 2.0)")
    if "fma_tflops" in sims or "copy_gbps" in sims:
        gib = int(sims.get("total_bytes", "0")) >> 30
        print(f"# SIMCUDA_DEVICES=\"{gib}GiB:sms={sims.get('sms', '?')}:tflops={sims.get('fma_tflops', '?')}"
              f":mem_gbps={sims.get('copy_gbps', '?')}:name={sims.get('name', 'gpu')}\""
              "   # FP32 FMA rate and copy bandwidth measured alone")
    print(f"# VMM remap under MPS: {sims.get('vmm', 'not measured')}; checkpoint API under MPS: "
          f"{sims.get('checkpoint', 'not measured')}")
    if not pairs:
        print("# contention model: no pair measurements")
        return 0
    params, rms = fit(pairs)
    geometry = {"fma": (1.0, 0.0), "copy": (1.0, 1.0)}  # what simcuda's KernelDemand would say
    rms_geom = math.sqrt(sum(math.log(model_slowdown(s, *geometry.get(k, (1.0, 1.0)),
                                                     [(os_, *geometry.get(ok, (1.0, 1.0)))
                                                      for ok, os_ in o]) / sd) ** 2
                             for k, s, o, sd in pairs) / len(pairs))
    print("# contention model (policy/interference.h): slowdown_i = (1-b_i)/rho_i + b_i*max(1/rho_i, beta),")
    print("#   rho_i = (min(d_i,s_i)/d_i) / max(1, sum_j min(d_j,s_j)), beta = max(1, sum_j b_j)")
    for k, (d, b) in sorted(params.items()):
        print(f"mps-check: fit kind={k} d={d:.2f} b={b:.2f} geometry_d={geometry.get(k, (1, 1))[0]:.2f} "
              f"geometry_b={geometry.get(k, (1, 1))[1]:.2f}")
    print(f"mps-check: fit rms_log_error={rms:.4f} rms_log_error_geometry={rms_geom:.4f} "
          f"observations={len(pairs)}")
    print("# d: the kernel's compute demand (simcuda: SMs its blocks occupy / SMs), b: its bandwidth-")
    print("# bound fraction (simcuda: memory_ns / duration_ns). Both fma and copy fill every SM, so")
    print("# simcuda's geometry says d = 1; a fitted d < 1 means the kernel reached its speed on fewer")
    print("# SMs than it occupies (scale KernelDemand's d), an rms error > 0.1 that the model misses.")
    print("# measured vs model (fitted):")
    for k, s, o, sd in pairs:
        pred = model_slowdown(s, *params[k], [(os_, *params[ok]) for ok, os_ in o])
        w = o[0][0] if o else "alone"
        print(f"#   {k:4s} share={int(s * 100):3d}% with={w:5s} measured={sd:.3f} model={pred:.3f}")
    return 0


def verdict_lines(results, simulator):
    """The verdict of a run from its `mps-check:` lines (results) and the fit's output
    (simulator): (lines to print, 'safe' | 'unsafe' | 'unknown')."""
    checks = {}
    info = {}
    for line in results:
        if line.startswith("mps-check: "):
            kv = parse_kv(line)
            if "status" in kv:
                checks[kv.get("check", "")] = kv
            elif kv.get("check") in ("info", "host"):
                info.update(kv)
    gpu = info.get("name", "this GPU")
    out = ["== verdict =="]
    vmm = checks.get("vmm")
    if vmm is None:
        state = "unknown"
        out.append("mps_swaps_verified: UNKNOWN - step 5 (vmm) did not run: keep mps_swaps_verified = false")
    elif vmm.get("status") == "PASS" and vmm.get("vmm") == "works":
        state = "safe"
        out.append(f"mps_swaps_verified: SAFE on {gpu} - an MPS client's VMM memory unmapped and mapped "
                   "again at the same addresses (same and new physical memory) kept every byte, and "
                   "the device wrote through the remapped address: set mps_swaps_verified = true in "
                   "the arbiter's config on nodes with this GPU and driver (docs/arbiter.md, Co-running)")
    else:
        state = "unsafe"
        why = " ".join(f"{k}={vmm[k]}" for k in ("vmm", "mps_enabled", "error", "step") if vmm.get(k))
        out.append(f"mps_swaps_verified: NOT SAFE on {gpu} - the same-address remap failed for an MPS "
                   f"client ({why or 'no details'}): keep mps_swaps_verified = false")
    if "dev_shm_bytes" in info:
        gib = int(info["dev_shm_bytes"]) / (1 << 30)
        out.append(f"  note: MPS clients' pinned host memory is limited by /dev/shm ({gib:.1f} GiB here): "
                   "gshare's swap staging of a larger vGPU falls back to unpinned copies")
    ck = checks.get("checkpoint")
    if ck is not None:
        out.append(f"  checkpoint API on an MPS client: {ck.get('checkpoint', '?')} (gshare never "
                   "checkpoints MPS clients either way; this is for the next decision)")
    settings = [l.strip() for l in simulator if l.strip() and not l.startswith("#") and " = " in l]
    devices = [l.strip().lstrip("# ") for l in simulator if "SIMCUDA_DEVICES=" in l]
    fits = [l.strip()[len("mps-check: "):] for l in simulator if l.startswith("mps-check: fit kind=")]
    out.append("simcuda's MPS parameters for this GPU (docs/simcuda.md \"MPS mode\": SIMCUDA_CONFIG "
               "keys, or SIMCUDA_MPS_MAX_CLIENTS / SIMCUDA_MPS_CONTEXT_MIB_PER_SM):")
    if settings or devices or fits:
        out.extend("  " + l for l in settings + devices + fits)
        if not any(l.startswith("mps_max_clients") for l in settings):
            out.append("  mps_max_clients: not measured (keep 48)")
        if not any(l.startswith("mps_context_mib_per_sm") for l in settings):
            out.append("  mps_context_mib_per_sm: not measured (keep 2)")
    else:
        out.append("  not measured: keep simcuda's defaults (mps_max_clients = 48, mps_context_mib_per_sm = 2)")
    out.append(f"mps-check: check=verdict mps_swaps_verified={state}")
    return out, state


def cmd_verdict(args):
    results = open(args.results).read().splitlines() if os.path.exists(args.results) else []
    simulator = []
    if args.simulator and os.path.exists(args.simulator):
        simulator = open(args.simulator).read().splitlines()
    lines, _ = verdict_lines(results, simulator)
    print("\n".join(lines))
    return 0


def cmd_self_test(_args):
    failures = []

    def expect(name, cond):
        print(f"{'ok' if cond else 'FAILED'} {name}")
        if not cond:
            failures.append(name)

    expect("alone at full share is 1", abs(model_slowdown(1, 1, 1, []) - 1) < 1e-12)
    expect("two full kernels share the GPU", abs(model_slowdown(1, 1, 1, [(1, 1, 1)]) - 2) < 1e-12)
    expect("half share of a full kernel doubles it", abs(model_slowdown(0.5, 1, 0, []) - 2) < 1e-12)
    expect("small kernels overlap freely", abs(model_slowdown(1, 0.3, 0, [(1, 0.3, 0)]) - 1) < 1e-12)
    truth = {"fma": (0.9, 0.05), "copy": (0.4, 0.9)}
    obs = []
    for s in (0.25, 0.5, 0.75, 1.0):
        for k in truth:
            obs.append((k, s, [], model_slowdown(s, *truth[k], [])))
            for o in truth:
                obs.append((k, s, [(o, s)], model_slowdown(s, *truth[k], [(s, *truth[o])])))
    params, rms = fit(obs)
    expect(f"fit recovers the model (rms {rms:.4f})", rms < 0.02)
    expect("fit finds fma's demand", abs(params["fma"][0] - 0.9) <= 0.04)
    expect("fit finds copy's bandwidth share", abs(params["copy"][1] - 0.9) <= 0.1)
    expect("PTX is embedded", PTX is not None and b".entry fma_loop" in PTX and b".entry copy_loop" in PTX)
    sim = ["mps_max_clients = 48            # measured client limit", "mps_context_mib_per_sm = 2.1",
           "# SIMCUDA_DEVICES=\"140GiB:sms=132:tflops=60:mem_gbps=4000:name=H200\"",
           "mps-check: fit kind=fma d=0.90 b=0.05"]
    good = ["mps-check: check=info name=H200 sms=132", "mps-check: check=host dev_shm_bytes=68719476736",
            "mps-check: check=vmm status=PASS vmm=works"]
    lines, state = verdict_lines(good, sim)
    expect("verdict: a working remap is safe", state == "safe" and any("SAFE on H200" in l for l in lines))
    expect("verdict: simcuda parameters listed", any("mps_context_mib_per_sm = 2.1" in l for l in lines)
           and any("SIMCUDA_DEVICES=" in l for l in lines))
    lines, state = verdict_lines(["mps-check: check=vmm status=FAIL vmm=fails mps_enabled=1 "
                                  "error=CUDA_ERROR_INVALID_VALUE step=cuMemMap"], [])
    expect("verdict: a failed remap is not safe", state == "unsafe" and any(
        "NOT SAFE" in l and "step=cuMemMap" in l for l in lines))
    expect("verdict: no measurements keep the defaults", any("keep simcuda's defaults" in l for l in lines))
    lines, state = verdict_lines([], [])
    expect("verdict: no vmm step is unknown", state == "unknown" and lines[-1].endswith("=unknown"))
    try:
        build_parser().parse_args(["run", "--kind", "fma"])
        expect("run without --go is refused", False)
    except SystemExit:
        expect("run without --go is refused", True)
    return 1 if failures else 0


def build_parser():
    p = argparse.ArgumentParser(prog="mps_probe.py", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n", 2)[2])
    p.add_argument("--device", type=int, default=0, help="CUDA device ordinal (default 0)")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info")
    c = sub.add_parser("calibrate")
    c.add_argument("--target-ms", type=float, default=2.0)
    r = sub.add_parser("run")
    r.add_argument("--kind", choices=["fma", "copy"], required=True)
    r.add_argument("--param", type=int, default=0, help="fma: iterations per thread")
    r.add_argument("--go", required=True, help="file whose appearance (a start time) starts the run")
    r.add_argument("--seconds", type=float, default=2.0)
    r.add_argument("--wait", type=float, default=60.0, help="longest wait for the go file")
    h = sub.add_parser("hold")
    h.add_argument("--seconds", type=float, default=120.0)
    sub.add_parser("vmm")
    sub.add_parser("ckpt-target")
    k = sub.add_parser("ckpt")
    k.add_argument("--pid", type=int, required=True)
    k.add_argument("--timeout-ms", type=int, default=10000)
    f = sub.add_parser("fit")
    f.add_argument("--results", required=True)
    v = sub.add_parser("verdict")
    v.add_argument("--results", required=True)
    v.add_argument("--simulator", default="")
    sub.add_parser("self-test")
    return p


COMMANDS = {"info": cmd_info, "calibrate": cmd_calibrate, "run": cmd_run, "hold": cmd_hold,
            "vmm": cmd_vmm, "ckpt-target": cmd_ckpt_target, "ckpt": cmd_ckpt, "fit": cmd_fit,
            "verdict": cmd_verdict,
            "self-test": cmd_self_test}


def main():
    args = build_parser().parse_args()
    try:
        return COMMANDS[args.cmd](args) or 0
    except CudaError as e:
        print(f"error={e.name} step={e.step}", flush=True)
        return 3


PTX_TEXT = r"""
//
// Generated by NVIDIA NVVM Compiler
//
// Compiler Build ID: CL-36424714
// Cuda compilation tools, release 13.0, V13.0.88
// Based on NVVM 7.0.1
//

.version 9.0
.target sm_80
.address_size 64

	// .globl	fma_loop

.visible .entry fma_loop(
	.param .u64 fma_loop_param_0,
	.param .u32 fma_loop_param_1
)
{
	.reg .pred 	%p<7>;
	.reg .f32 	%f<75>;
	.reg .b32 	%r<15>;
	.reg .b64 	%rd<5>;


	ld.param.u64 	%rd1, [fma_loop_param_0];
	ld.param.u32 	%r9, [fma_loop_param_1];
	mov.u32 	%r1, %tid.x;
	cvt.rn.f32.u32 	%f33, %r1;
	mul.f32 	%f73, %f33, 0f3A83126F;
	mov.u32 	%r2, %ctaid.x;
	cvt.rn.f32.u32 	%f34, %r2;
	mul.f32 	%f74, %f34, 0f3A83126F;
	setp.eq.s32 	%p1, %r9, 0;
	mov.f32 	%f72, 0f3F800347;
	mov.f32 	%f71, 0f3F7FF972;
	@%p1 bra 	$L__BB0_6;

	add.s32 	%r10, %r9, -1;
	and.b32  	%r14, %r9, 3;
	setp.lt.u32 	%p2, %r10, 3;
	mov.f32 	%f71, 0f3F7FF972;
	mov.f32 	%f72, 0f3F800347;
	@%p2 bra 	$L__BB0_4;

	sub.s32 	%r13, %r9, %r14;
	mov.f32 	%f71, 0f3F7FF972;
	mov.f32 	%f72, 0f3F800347;

$L__BB0_3:
	fma.rn.f32 	%f40, %f74, %f71, %f72;
	fma.rn.f32 	%f41, %f73, %f72, %f71;
	fma.rn.f32 	%f42, %f72, %f41, %f40;
	fma.rn.f32 	%f43, %f71, %f40, %f41;
	fma.rn.f32 	%f44, %f41, %f42, %f43;
	fma.rn.f32 	%f45, %f40, %f43, %f42;
	fma.rn.f32 	%f46, %f42, %f44, %f45;
	fma.rn.f32 	%f47, %f43, %f45, %f44;
	fma.rn.f32 	%f48, %f44, %f46, %f47;
	fma.rn.f32 	%f49, %f45, %f47, %f46;
	fma.rn.f32 	%f50, %f46, %f48, %f49;
	fma.rn.f32 	%f51, %f47, %f49, %f48;
	fma.rn.f32 	%f73, %f48, %f50, %f51;
	fma.rn.f32 	%f74, %f49, %f51, %f50;
	fma.rn.f32 	%f72, %f50, %f73, %f74;
	fma.rn.f32 	%f71, %f51, %f74, %f73;
	add.s32 	%r13, %r13, -4;
	setp.ne.s32 	%p3, %r13, 0;
	@%p3 bra 	$L__BB0_3;

$L__BB0_4:
	setp.eq.s32 	%p4, %r14, 0;
	@%p4 bra 	$L__BB0_6;

$L__BB0_5:
	.pragma "nounroll";
	fma.rn.f32 	%f74, %f74, %f71, %f72;
	fma.rn.f32 	%f73, %f73, %f72, %f71;
	fma.rn.f32 	%f72, %f72, %f73, %f74;
	fma.rn.f32 	%f71, %f71, %f74, %f73;
	add.s32 	%r14, %r14, -1;
	setp.ne.s32 	%p5, %r14, 0;
	@%p5 bra 	$L__BB0_5;

$L__BB0_6:
	add.f32 	%f52, %f72, %f73;
	add.f32 	%f53, %f71, %f52;
	add.f32 	%f54, %f74, %f53;
	setp.neu.f32 	%p6, %f54, 0f4640E400;
	@%p6 bra 	$L__BB0_8;

	mov.u32 	%r11, %ntid.x;
	mad.lo.s32 	%r12, %r2, %r11, %r1;
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.u32 	%rd3, %r12, 4;
	add.s64 	%rd4, %rd2, %rd3;
	st.global.f32 	[%rd4], %f73;

$L__BB0_8:
	ret;

}
	// .globl	copy_loop
.visible .entry copy_loop(
	.param .u64 copy_loop_param_0,
	.param .u64 copy_loop_param_1,
	.param .u64 copy_loop_param_2
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<13>;
	.reg .b64 	%rd<18>;


	ld.param.u64 	%rd8, [copy_loop_param_0];
	ld.param.u64 	%rd9, [copy_loop_param_1];
	ld.param.u64 	%rd10, [copy_loop_param_2];
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %ntid.x;
	cvt.u64.u32 	%rd1, %r2;
	mul.wide.u32 	%rd11, %r1, %r2;
	mov.u32 	%r3, %tid.x;
	cvt.u64.u32 	%rd12, %r3;
	add.s64 	%rd17, %rd11, %rd12;
	setp.ge.u64 	%p1, %rd17, %rd10;
	@%p1 bra 	$L__BB1_3;

	mov.u32 	%r4, %nctaid.x;
	cvt.u64.u32 	%rd13, %r4;
	mul.lo.s64 	%rd3, %rd13, %rd1;
	cvta.to.global.u64 	%rd4, %rd8;
	cvta.to.global.u64 	%rd5, %rd9;

$L__BB1_2:
	shl.b64 	%rd14, %rd17, 4;
	add.s64 	%rd15, %rd4, %rd14;
	add.s64 	%rd16, %rd5, %rd14;
	ld.global.nc.v4.u32 	{%r5, %r6, %r7, %r8}, [%rd15];
	st.global.v4.u32 	[%rd16], {%r5, %r6, %r7, %r8};
	add.s64 	%rd17, %rd17, %rd3;
	setp.lt.u64 	%p2, %rd17, %rd10;
	@%p2 bra 	$L__BB1_2;

$L__BB1_3:
	ret;

}
"""

PTX = PTX_TEXT.strip().encode() + b"\0" if PTX_TEXT.strip() else None

if __name__ == "__main__":
    sys.exit(main())
