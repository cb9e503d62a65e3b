// The MPS client side of simcuda: at cuInit a process whose pipe directory
// (CUDA_MPS_PIPE_DIRECTORY, default /tmp/nvidia-mps) holds a live simcuda-mps-control serving
// its registry becomes an MPS client of the devices the daemon serves: its compute share
// (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE) and memory caps (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT) apply,
// each context holds a client slot and context memory in the registry, and its calls fail with
// the sticky MPS errors (fault of a co-runner, terminate_client, daemon gone). Without a live
// daemon nothing changes: the process runs time-sliced. docs/simcuda.md "MPS mode".
// Thread-safety: JoinMps runs once under cuInit's lock; everything else is thread-safe.
#ifndef SIMCUDA_SRC_MPS_CLIENT_H_
#define SIMCUDA_SRC_MPS_CLIENT_H_

#include <cstdint>

#include "api.h"

namespace simcuda {

struct DriverState;

// At cuInit (after the registry is open). CUDA_ERROR_INVALID_VALUE (and an error log naming the
// variable) when the process is an MPS client and a CUDA_MPS_* variable is malformed.
CUresult JoinMps(DriverState* d);
// True if this process is an MPS client of `dev` (CU_DEVICE_ATTRIBUTE_MPS_ENABLED).
bool MpsServes(int dev);
// The client's compute share, 1..100 (100 when not an MPS client).
unsigned MpsSharePercent();
// Simulated ns between two rate updates of a co-running kernel.
double MpsStepNs();

// Makes `ctx` a client context of its device's server, if the process is an MPS client there:
// claims its registry slot and context memory. MPS_MAX_CLIENTS_REACHED, MPS_SERVER_NOT_READY
// (the server recovers from a fault, or serves another uid), OUT_OF_MEMORY, or the sticky error.
CUresult MpsAttachContext(CUctx_st* ctx);
// Gives a client context's slot and memory back (context teardown).
void MpsDetachContext(CUctx_st* ctx);
// The sticky error of a client context: MPS_CLIENT_TERMINATED, MPS_CONNECTION_FAILED,
// ILLEGAL_ADDRESS (a fatal fault of a client of the same server and GPU); CUDA_SUCCESS otherwise
// and for every context of a process that is not an MPS client.
CUresult MpsCheck(const CUctx_st* ctx);
// A fatal fault in a client context: reaches every client of the device's server.
void MpsFatalFault(const CUctx_st* ctx);
// In a forked child (async-signal-safe): the child is not an MPS client.
void MpsForgetAfterFork();

}  // namespace simcuda

#endif  // SIMCUDA_SRC_MPS_CLIENT_H_
