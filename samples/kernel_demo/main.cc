// simcuda-demo: a plain CUDA driver-API program (linked against the toolkit's libcuda stub, so
// it runs unchanged on a real GPU or, with simcuda's libcuda.so.1 first on LD_LIBRARY_PATH, on
// simulated GPUs). On every visible device it copies data in, runs vector_add, saxpy, sgemm,
// fill_u32 and checksum on two streams, copies results back, verifies them on the host and
// prints a table. Exit status: 0 if every step succeeded and verified, 1 on a driver error or a
// wrong result, 2 on bad arguments. tests/simcuda_kernels runs it on simcuda (docs/simcuda-kernels.md).
#include <cuda.h>

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cuda_status.h"
#include "device_run.h"

namespace {

using simcuda_demo::DemoOptions;
using simcuda_demo::DeviceReport;

// Prints "simcuda-demo: <message>" to stderr after what the table printed so far.
void Complain(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "simcuda-demo: %s\n", message.c_str());
}

void PrintReport(const DeviceReport& r) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  fmt::print("device {}: {} ({:.1f} GiB, {:.1f} GiB free while running), wall {:.0f} ms\n",
             r.ordinal, r.name, static_cast<double>(r.total_bytes) / kGiB,
             static_cast<double>(r.free_bytes) / kGiB, r.host_ms);
  fmt::print("  {:<11} {:>14} {:>12} {:>10} {:>10}  {}\n", "op", "size", "event ms", "GB/s",
             "GFLOP/s", "verified");
  for (const auto& op : r.ops) {
    const double seconds = static_cast<double>(op.event_ms) / 1e3;
    const std::string gbs = seconds > 0 ? fmt::format("{:.1f}", op.bytes / seconds / 1e9) : "-";
    const std::string gflops =
        op.flops > 0 && seconds > 0 ? fmt::format("{:.1f}", op.flops / seconds / 1e9) : "";
    fmt::print("  {:<11} {:>14} {:>12.3f} {:>10} {:>10}  {}\n", op.op, op.size, op.event_ms, gbs,
               gflops, op.verified ? "ok" : "WRONG: " + op.detail);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Runs and verifies a few CUDA kernels on every visible GPU (real or simcuda)."};
  DemoOptions options;
  unsigned checksum_mib = static_cast<unsigned>(options.checksum_bytes >> 20);
  int only_device = -1;
  app.add_option("--elements", options.vector_elems, "vector_add/saxpy length (floats)")
      ->check(CLI::Range(1ull, 1ull << 30));
  app.add_option("--gemm", options.gemm_size, "sgemm matrix size (M = N = K)")
      ->check(CLI::Range(1u, 8192u));
  app.add_option("--checksum-mib", checksum_mib, "fill_u32 + checksum buffer (MiB)")
      ->check(CLI::Range(1u, 4096u));
  app.add_option("--device", only_device, "run on this device only (default: all)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  options.checksum_bytes = static_cast<unsigned long long>(checksum_mib) << 20;

  int count = 0;
  simcuda_demo::CallChecker cu;
  if (!cu.Ok(cuInit(0), "cuInit") || !cu.Ok(cuDeviceGetCount(&count), "cuDeviceGetCount")) {
    Complain(cu.error());
    return 1;
  }
  if (count == 0) {
    Complain("no CUDA devices visible");
    return 1;
  }
  if (only_device >= count) {
    Complain(fmt::format("device {} does not exist ({} visible)", only_device, count));
    return 2;
  }
  int driver_version = 0;
  (void)cuDriverGetVersion(&driver_version);
  fmt::print("simcuda-demo: {} device(s), driver API {}.{}\n", count, driver_version / 1000,
             driver_version % 1000 / 10);
  bool all_ok = true;
  for (int d = 0; d < count; ++d) {
    if (only_device >= 0 && d != only_device) continue;
    DeviceReport report;
    simcuda_demo::Error err = simcuda_demo::RunOnDevice(d, options, &report);
    if (!err.empty()) {
      Complain(fmt::format("device {}: {}", d, err));
      return 1;
    }
    PrintReport(report);
    for (const auto& op : report.ops) all_ok = all_ok && op.verified;
  }
  if (!all_ok) {
    Complain("some results were WRONG (see the table)");
    return 1;
  }
  fmt::print("simcuda-demo: all results verified\n");
  return 0;
}
