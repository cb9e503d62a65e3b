// simcuda-demo's work on one device; see device_run.h.
#include "device_run.h"

#include <chrono>
#include <cstdint>

#include <fmt/format.h>

#include "sample/device_buffer.h"
#include "host_reference.h"
#include "simcuda/kernels/kernel_math.h"
#include "simcuda/kernels/kernels.h"
#include "simcuda/kernels/ptx.h"

namespace simcuda_demo {
namespace {

using sample::CreatedContext;
using sample::DeviceMemory;
using sample::Event;
using sample::Module;
using sample::Stream;

using u64 = unsigned long long;
namespace sk = simcuda::kernels;

// An event pair around work on one stream.
struct Timing {
  Event start, end;
};

Error CreateTiming(CallChecker& cu, Timing* t) {
  cu.Ok(cuEventCreate(t->start.out(), CU_EVENT_DEFAULT), "cuEventCreate(start)");
  cu.Ok(cuEventCreate(t->end.out(), CU_EVENT_DEFAULT), "cuEventCreate(end)");
  return cu.error();
}

std::string Mib(double bytes) { return fmt::format("{:.1f} MiB", bytes / (1 << 20)); }

// Host-side data for the device's steps.
struct HostData {
  std::vector<float> a, b, y0, ga, gb, gc0;
  float alpha = 1.75f, gemm_alpha = 1.0f, gemm_beta = 0.5f;
  uint64_t fill_checksum = 0;
  u64 fill_words = 0;
  unsigned fill_seed = 0;
};

HostData MakeHostData(const DemoOptions& o, int ordinal) {
  HostData h;
  const unsigned seed = 1000u * static_cast<unsigned>(ordinal + 1);
  h.a = RandomFloats(o.vector_elems, seed + 1);
  h.b = RandomFloats(o.vector_elems, seed + 2);
  h.y0 = RandomFloats(o.vector_elems, seed + 3);
  const size_t nn = size_t{o.gemm_size} * o.gemm_size;
  h.ga = RandomFloats(nn, seed + 4);
  h.gb = RandomFloats(nn, seed + 5);
  h.gc0 = RandomFloats(nn, seed + 6);
  h.fill_words = o.checksum_bytes / 4;
  h.fill_seed = seed + 7;
  std::vector<unsigned> pattern(h.fill_words);
  for (u64 i = 0; i < h.fill_words; ++i) pattern[i] = sk::FillPattern(h.fill_seed, i);
  h.fill_checksum = sk::HostChecksum(pattern.data(), pattern.size() * 4);
  return h;
}

}  // namespace

Error RunOnDevice(int ordinal, const DemoOptions& o, DeviceReport* report) {
  CallChecker cu;
  report->ordinal = ordinal;
  CUdevice dev = 0;
  char name[256] = {};
  if (!cu.Ok(cuDeviceGet(&dev, ordinal), "cuDeviceGet") ||
      !cu.Ok(cuDeviceGetName(name, sizeof(name), dev), "cuDeviceGetName") ||
      !cu.Ok(cuDeviceTotalMem(&report->total_bytes, dev), "cuDeviceTotalMem")) {
    return cu.error();
  }
  report->name = name;
  HostData h = MakeHostData(o, ordinal);
  const auto wall_start = std::chrono::steady_clock::now();

  // Declared first so that it is released last.
  CreatedContext ctx(dev);
  if (!cu.Ok(ctx.Open(), "cuCtxCreate")) return cu.error();
  Module basic, gemm;
  CUfunction f_add = nullptr, f_saxpy = nullptr, f_gemm = nullptr, f_fill = nullptr,
             f_checksum = nullptr;
  if (!cu.Ok(cuModuleLoadData(basic.out(), basic_kernels_ptx), "cuModuleLoadData(basic)") ||
      !cu.Ok(cuModuleLoadData(gemm.out(), gemm_ptx), "cuModuleLoadData(gemm)") ||
      !cu.Ok(cuModuleGetFunction(&f_add, basic.get(), "vector_add"),
                 "cuModuleGetFunction(vector_add)") ||
      !cu.Ok(cuModuleGetFunction(&f_saxpy, basic.get(), "saxpy"),
                 "cuModuleGetFunction(saxpy)") ||
      !cu.Ok(cuModuleGetFunction(&f_fill, basic.get(), "fill_u32"),
                 "cuModuleGetFunction(fill_u32)") ||
      !cu.Ok(cuModuleGetFunction(&f_checksum, basic.get(), "checksum"),
                 "cuModuleGetFunction(checksum)") ||
      !cu.Ok(cuModuleGetFunction(&f_gemm, gemm.get(), "sgemm"), "cuModuleGetFunction(sgemm)")) {
    return cu.error();
  }

  Stream sa, sb;
  cu.Ok(cuStreamCreate(sa.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  cu.Ok(cuStreamCreate(sb.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  const u64 n = o.vector_elems;
  const unsigned g = o.gemm_size;
  const size_t vbytes = n * sizeof(float), gbytes = size_t{g} * g * sizeof(float);
  const size_t fbytes = h.fill_words * 4;
  DeviceMemory da, db, dc, dy, dga, dgb, dgc, dfill, dsum;
  cu.Ok(cuMemAlloc(da.out(), vbytes), "cuMemAlloc(a)");
  cu.Ok(cuMemAlloc(db.out(), vbytes), "cuMemAlloc(b)");
  cu.Ok(cuMemAlloc(dc.out(), vbytes), "cuMemAlloc(c)");
  cu.Ok(cuMemAlloc(dy.out(), vbytes), "cuMemAlloc(y)");
  cu.Ok(cuMemAlloc(dga.out(), gbytes), "cuMemAlloc(gemm A)");
  cu.Ok(cuMemAlloc(dgb.out(), gbytes), "cuMemAlloc(gemm B)");
  cu.Ok(cuMemAlloc(dgc.out(), gbytes), "cuMemAlloc(gemm C)");
  cu.Ok(cuMemAlloc(dfill.out(), fbytes), "cuMemAlloc(fill)");
  cu.Ok(cuMemAlloc(dsum.out(), sizeof(u64)), "cuMemAlloc(checksum)");
  size_t free_bytes = 0, total = 0;
  cu.Ok(cuMemGetInfo(&free_bytes, &total), "cuMemGetInfo");
  report->free_bytes = free_bytes;
  Timing t_htod, t_add, t_saxpy, t_gemm, t_fill, t_sum, t_dtoh;
  for (Timing* t : {&t_htod, &t_add, &t_saxpy, &t_gemm, &t_fill, &t_sum, &t_dtoh}) {
    CreateTiming(cu, t);
  }
  if (!cu.error().empty()) return cu.error();

  // 1. Inputs to the device (stream A); stream B waits for them.
  cu.Ok(cuEventRecord(t_htod.start.get(), sa.get()), "cuEventRecord");
  cu.Ok(cuMemcpyHtoDAsync(da.get(), h.a.data(), vbytes, sa.get()), "cuMemcpyHtoDAsync(a)");
  cu.Ok(cuMemcpyHtoDAsync(db.get(), h.b.data(), vbytes, sa.get()), "cuMemcpyHtoDAsync(b)");
  cu.Ok(cuMemcpyHtoDAsync(dy.get(), h.y0.data(), vbytes, sa.get()), "cuMemcpyHtoDAsync(y)");
  cu.Ok(cuMemcpyHtoDAsync(dga.get(), h.ga.data(), gbytes, sa.get()), "cuMemcpyHtoDAsync(A)");
  cu.Ok(cuMemcpyHtoDAsync(dgb.get(), h.gb.data(), gbytes, sa.get()), "cuMemcpyHtoDAsync(B)");
  cu.Ok(cuMemcpyHtoDAsync(dgc.get(), h.gc0.data(), gbytes, sa.get()), "cuMemcpyHtoDAsync(C)");
  cu.Ok(cuEventRecord(t_htod.end.get(), sa.get()), "cuEventRecord");
  cu.Ok(cuStreamWaitEvent(sb.get(), t_htod.end.get(), 0), "cuStreamWaitEvent");

  // 2-4. vector_add and sgemm on stream A, saxpy on stream B (concurrently).
  auto launch = [&](CUfunction f, unsigned gx, unsigned gy, unsigned bx, unsigned by,
                    CUstream s, void** params, const char* what) {
    return cu.Ok(cuLaunchKernel(f, gx, gy, 1, bx, by, 1, 0, s, params, nullptr), what);
  };
  CUdeviceptr a = da.get(), b = db.get(), c = dc.get(), y = dy.get();
  void* add_params[] = {&a, &b, &c, const_cast<u64*>(&n)};
  cu.Ok(cuEventRecord(t_add.start.get(), sa.get()), "cuEventRecord");
  launch(f_add, sk::ElementwiseGrid(n), 1, sk::kElementwiseBlock, 1, sa.get(), add_params,
         "cuLaunchKernel(vector_add)");
  cu.Ok(cuEventRecord(t_add.end.get(), sa.get()), "cuEventRecord");

  float alpha = h.alpha;
  void* saxpy_params[] = {&alpha, &a, &y, const_cast<u64*>(&n)};
  cu.Ok(cuEventRecord(t_saxpy.start.get(), sb.get()), "cuEventRecord");
  launch(f_saxpy, sk::ElementwiseGrid(n), 1, sk::kElementwiseBlock, 1, sb.get(), saxpy_params,
         "cuLaunchKernel(saxpy)");
  cu.Ok(cuEventRecord(t_saxpy.end.get(), sb.get()), "cuEventRecord");

  unsigned m_ = g, n_ = g, k_ = g;
  float galpha = h.gemm_alpha, gbeta = h.gemm_beta;
  CUdeviceptr ga = dga.get(), gb = dgb.get(), gc = dgc.get();
  void* gemm_params[] = {&m_, &n_, &k_, &galpha, &ga, &gb, &gbeta, &gc};
  const unsigned tiles = (g + sk::kGemmTile - 1) / sk::kGemmTile;
  cu.Ok(cuEventRecord(t_gemm.start.get(), sa.get()), "cuEventRecord");
  launch(f_gemm, tiles, tiles, sk::kGemmTile, sk::kGemmTile, sa.get(), gemm_params,
         "cuLaunchKernel(sgemm)");
  cu.Ok(cuEventRecord(t_gemm.end.get(), sa.get()), "cuEventRecord");

  // 5-6. fill a buffer with a seeded pattern and checksum it on the device (stream B).
  CUdeviceptr fill = dfill.get(), sum = dsum.get();
  u64 words = h.fill_words, nbytes = fbytes;
  unsigned seed = h.fill_seed;
  void* fill_params[] = {&fill, &words, &seed};
  void* sum_params[] = {&fill, &nbytes, &sum};
  cu.Ok(cuEventRecord(t_fill.start.get(), sb.get()), "cuEventRecord");
  launch(f_fill, sk::ElementwiseGrid(words), 1, sk::kElementwiseBlock, 1, sb.get(), fill_params,
         "cuLaunchKernel(fill_u32)");
  cu.Ok(cuEventRecord(t_fill.end.get(), sb.get()), "cuEventRecord");
  cu.Ok(cuMemsetD8Async(sum, 0, sizeof(u64), sb.get()), "cuMemsetD8Async");
  cu.Ok(cuEventRecord(t_sum.start.get(), sb.get()), "cuEventRecord");
  launch(f_checksum, sk::ElementwiseGrid((nbytes + 7) / 8), 1, sk::kElementwiseBlock, 1,
         sb.get(), sum_params, "cuLaunchKernel(checksum)");
  cu.Ok(cuEventRecord(t_sum.end.get(), sb.get()), "cuEventRecord");

  // 7. Results back (stream A, after stream B's work).
  std::vector<float> a_back(n), c_out(n), y_out(n), gc_out(size_t{g} * g);
  u64 sum_out = 0;
  cu.Ok(cuStreamWaitEvent(sa.get(), t_sum.end.get(), 0), "cuStreamWaitEvent");
  cu.Ok(cuEventRecord(t_dtoh.start.get(), sa.get()), "cuEventRecord");
  cu.Ok(cuMemcpyDtoHAsync(a_back.data(), a, vbytes, sa.get()), "cuMemcpyDtoHAsync(a)");
  cu.Ok(cuMemcpyDtoHAsync(c_out.data(), c, vbytes, sa.get()), "cuMemcpyDtoHAsync(c)");
  cu.Ok(cuMemcpyDtoHAsync(y_out.data(), y, vbytes, sa.get()), "cuMemcpyDtoHAsync(y)");
  cu.Ok(cuMemcpyDtoHAsync(gc_out.data(), gc, gbytes, sa.get()), "cuMemcpyDtoHAsync(C)");
  cu.Ok(cuMemcpyDtoHAsync(&sum_out, sum, sizeof(u64), sa.get()), "cuMemcpyDtoHAsync(sum)");
  cu.Ok(cuEventRecord(t_dtoh.end.get(), sa.get()), "cuEventRecord");
  if (!cu.Ok(cuStreamSynchronize(sa.get()), "cuStreamSynchronize")) return cu.error();
  report->host_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_start)
          .count();

  // Verification against the host.
  std::vector<float> c_ref(n), y_ref(n), gc_ref = h.gc0;
  for (u64 i = 0; i < n; ++i) {
    c_ref[i] = h.a[i] + h.b[i];
    y_ref[i] = h.alpha * h.a[i] + h.y0[i];
  }
  HostSgemm(g, h.gemm_alpha, h.ga, h.gb, h.gemm_beta, &gc_ref);
  const std::string add_err = CompareFloats(c_out, c_ref, 0.0f);
  const std::string saxpy_err = CompareFloats(y_out, y_ref, 1e-6f);
  const std::string gemm_err = CompareFloats(gc_out, gc_ref, 1e-4f);
  const std::string sum_err =
      sum_out == h.fill_checksum
          ? ""
          : fmt::format("device checksum {:#x}, host {:#x}", sum_out, h.fill_checksum);
  // The input `a`, copied in and back out unchanged, checks both copy directions.
  const std::string copy_err = CompareFloats(a_back, h.a, 0.0f);
  const double dn = static_cast<double>(n), dg = g, df = static_cast<double>(fbytes);
  const double htod = 3.0 * vbytes + 3.0 * gbytes, dtoh = 3.0 * vbytes + gbytes + 8.0;
  struct Step {
    Timing* t;
    const char* op;
    std::string size;
    double bytes, flops;
    const std::string& error;
  };
  const Step steps[] = {
      {&t_htod, "copy HtoD", Mib(htod), htod, 0, copy_err},
      {&t_add, "vector_add", fmt::format("n={}", n), 12 * dn, dn, add_err},
      {&t_saxpy, "saxpy", fmt::format("n={}", n), 12 * dn, 2 * dn, saxpy_err},
      {&t_gemm, "sgemm", fmt::format("{0}x{0}x{0}", g), 16 * dg * dg, 2 * dg * dg * dg, gemm_err},
      {&t_fill, "fill_u32", Mib(df), df, 0, sum_err},
      {&t_sum, "checksum", Mib(df), df, 0, sum_err},
      {&t_dtoh, "copy DtoH", Mib(dtoh), dtoh, 0, copy_err},
  };
  for (const Step& s : steps) {
    OpResult r{s.op, s.size, 0.0f, s.bytes, s.flops, s.error.empty(), s.error};
    if (!cu.Ok(cuEventElapsedTime(&r.event_ms, s.t->start.get(), s.t->end.get()),
               "cuEventElapsedTime")) {
      return cu.error();
    }
    report->ops.push_back(std::move(r));
  }
  return {};
}

}  // namespace simcuda_demo
