// preload_probe's modes, one function each (the command line is documented in
// tests/preload/preload_probe.cc). Each prints "key=value" lines on stdout and returns the
// program's exit code: 0, or 1 after an "error=<what>:<CUresult>" line.
#pragma once

#include <cstdint>
#include <string>

namespace gshare::probe {

// quota.cc: totals, free-memory movement and quota enforcement, reached `how` (driver.h's
// LoadBy), allocating chunk_mib MiB blocks until refused.
int Totals(const std::string& how, uint64_t chunk_mib);
// quota.cc: cuInit's result and one allocation's (malformed configuration tests).
int Init();
// quota.cc: allocation state across fork(): the child's own view.
int Fork();
// quota.cc: a process with a context and 64 MiB that forks a helper child, which then sleeps,
// uses CUDA first (`cuda`: context + 64 MiB) or execs /bin/sleep (`exec`); the parent waits
// for stdin's EOF. Prints parent_pid, child_pid and the child's child_ready (and child_init,
// child_alloc).
int ForkHelper(const std::string& child_does);
// quota.cc: allocates mib MiB, prints the result.
int Alloc(uint64_t mib);

// swap.cc: checksummed blocks, then commands on stdin (verify, grow, inflight, collect,
// capture, where, quit).
int Swap(uint32_t seed, int count, uint64_t big_mib);

// kernels.cc: the sample kernels' result checksums.
int Kernels();

// stress.cc: `threads` threads copying, launching checksum kernels and verifying on their own
// streams, `iterations` rounds each.
int Stress(int threads, int iterations);

// lookup.cc: where dlsym (per handle) and cuGetProcAddress_v2 lead.
int Lookup();

// memory_api.cc: stream-ordered and pool allocations, pitch, pointer queries, VMM handles.
int MemoryApi();

// devices.cc: the devices the program sees, reached `how`, and its work on them.
int Devices(const std::string& how);

// accounting.cc: the quota's edges. `what`: "async-frees" (arg "threshold": the default pool
// keeps everything first), "beyond-device" (arg: chunk MiB), "vmm-idiom" (arg: MiB per round),
// "legacy" (arg: "procaddr" or "dlsym": the v1 entry points).
int Accounting(const std::string& what, const std::string& arg);

// contexts.cc: current-context switches (set, push, pop, create, destroy, other threads)
// between submissions to the legacy default stream; commands on stdin.
int Contexts();

// bursts.cc: `count` bursts of a kernel busy for kernel_ms with gap_ms between them; prints
// each burst's start and end (CLOCK_MONOTONIC) and the MPS attribute (co-running tests).
// fault_at >= 0: that burst is an illegal-address fault instead.
int Bursts(int count, int kernel_ms, int gap_ms, int fault_at);

}  // namespace gshare::probe
