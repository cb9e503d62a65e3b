// preload_probe: an unmodified CUDA driver-API program (it knows nothing of gshare) that the
// shim's tests run under LD_PRELOAD=libgshare.so on simcuda. It reaches the driver one of three
// ways and prints what it observes as "key=value" lines on stdout. This file only dispatches;
// the modes live in probe/ (probe/modes.h lists them, one file per kind of check).
//
//   preload_probe totals <linked|dlsym|procaddr|procaddr-ptds> [chunk_mib]
//       totals, free-memory movement and quota enforcement (allocates chunk_mib until refused)
//   preload_probe init                 cuInit's result (malformed configuration tests)
//   preload_probe fork                 allocation state across fork(): the child's own view
//   preload_probe fork-helper <sleep|cuda|exec>
//                                      a process with a context forks a helper child that
//                                      sleeps, uses CUDA first, or execs /bin/sleep; prints
//                                      parent_pid, child_pid, child_ready; waits for stdin's EOF
//   preload_probe swap <seed> <count> <big_mib>
//                                      one big_mib block plus <count> random allocations (bytes
//                                      to 256 MiB, interleaved frees), a checksum each; waits for
//                                      stdin commands: "verify" (re-read, compare, run a kernel
//                                      on the data), "grow <mib>" (one more block, uploaded
//                                      with async copies), "inflight <ms>" (queue a kernel busy
//                                      for ms, then a checksum of the first block, without
//                                      waiting), "collect" (wait for it, compare), "capture <ms>"
//                                      (a graph capture held open for ms), "where" (the
//                                      context's device, the device count, the device ordinal
//                                      of the first block), "quit"
//   preload_probe kernels              runs the sample kernels and prints their result checksums
//   preload_probe alloc <mib>          allocates mib MiB (no shim expected), prints the result
//   preload_probe lookup               where dlsym (per handle) and cuGetProcAddress_v2 lead
//   preload_probe stress <threads> <iterations>
//                                      threads copying, launching checksum kernels and verifying
//                                      on their own streams (while a test swaps the vGPU)
//   preload_probe memory-api           stream-ordered and pool allocations, pitch, pointer
//                                      queries, the application's own VMM handles
//   preload_probe accounting <async-frees|beyond-device|vmm-idiom|legacy> [arg]
//                                      the quota's edges (probe/accounting.cc)
//   preload_probe devices <linked|dlsym|procaddr|procaddr-ptds>
//                                      the devices the program sees (count, ordinal 0 and 1, PCI
//                                      bus id and peer queries), its context's device, where an
//                                      allocation lives, and a kernel and copies on it
//   preload_probe bursts <count> <kernel_ms> <gap_ms> [fault_at]
//                                      bursts of a kernel busy for kernel_ms, gap_ms apart; each
//                                      burst's start and end (co-running, probe/bursts.cc)
//   preload_probe contexts             current-context switches between default-stream
//                                      submissions, driven by stdin (probe/contexts.cc)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "probe/modes.h"

int main(int argc, char** argv) {
  namespace probe = gshare::probe;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "totals" && argc > 2) {
    return probe::Totals(argv[2], argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 64);
  }
  if (mode == "init") return probe::Init();
  if (mode == "fork") return probe::Fork();
  if (mode == "fork-helper" && argc > 2) return probe::ForkHelper(argv[2]);
  if (mode == "swap" && argc > 4) {
    return probe::Swap(static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10)),
                       std::atoi(argv[3]), std::strtoull(argv[4], nullptr, 10));
  }
  if (mode == "kernels") return probe::Kernels();
  if (mode == "contexts") return probe::Contexts();
  if (mode == "bursts" && argc > 4)
    return probe::Bursts(std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]),
                         argc > 5 ? std::atoi(argv[5]) : -1);
  if (mode == "devices" && argc > 2) return probe::Devices(argv[2]);
  if (mode == "lookup") return probe::Lookup();
  if (mode == "stress" && argc > 3) return probe::Stress(std::atoi(argv[2]), std::atoi(argv[3]));
  if (mode == "memory-api") return probe::MemoryApi();
  if (mode == "accounting" && argc > 2) return probe::Accounting(argv[2], argc > 3 ? argv[3] : "");
  if (mode == "alloc" && argc > 2) return probe::Alloc(std::strtoull(argv[2], nullptr, 10));
  std::fprintf(stderr, "usage: see the comment at the top of preload_probe.cc\n");
  return 2;
}
