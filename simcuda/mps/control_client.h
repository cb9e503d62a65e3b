// simcuda-mps-control without options: the client of a running daemon. Reads commands from
// stdin, one per line, sends each to the daemon of CUDA_MPS_PIPE_DIRECTORY and prints its reply.
#ifndef SIMCUDA_MPS_CONTROL_CLIENT_H_
#define SIMCUDA_MPS_CONTROL_CLIENT_H_

namespace simcuda::mps {

// 0 if every command was answered without an error, 1 otherwise (no daemon: message on stderr).
int RunControlClient();

}  // namespace simcuda::mps

#endif  // SIMCUDA_MPS_CONTROL_CLIENT_H_
