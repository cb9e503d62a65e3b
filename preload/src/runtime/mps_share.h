// The MPS share chosen before the real cuInit (docs/arbiter.md, "Co-running"; docs/protocol.md,
// "Share query"). An MPS client's compute share is CUDA_MPS_ACTIVE_THREAD_PERCENTAGE as the
// driver reads it at cuInit, fixed for the process's life; the arbiter chooses it from the
// function's declared demands. So the shim's cuInit hook asks the arbiter first (a share query
// on a connection of its own, bounded by GSHARE_SHARE_QUERY) and, when the answer is a co-run
// GPU and the environment sets no share, sets the variable (and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT
// when the answer caps memory and the environment does not). Precedence: an operator's explicit
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE wins; a disagreement with the arbiter's choice is logged as
// a warning naming the variable and both values. An answer of "not co-run" is the arbiter's
// word that the process is no MPS client: a CUDA_MPS_PIPE_DIRECTORY in its environment (which
// would take it to that daemon at cuInit whatever the answer) is replaced by
// kNoMpsPipeDirectory, where no daemon can be, and the driver then runs it time-sliced (MPS
// fails open: on the H200, driver 580, a pipe directory that does not exist gives
// CU_DEVICE_ATTRIBUTE_MPS_ENABLED = 0), with a warning naming the variable and both values.
// A co-run answer that names the GPU's MPS pipe directory (the arbiter runs that GPU's daemon)
// sets CUDA_MPS_PIPE_DIRECTORY to it when the environment does not: the registration that
// follows lands on the answer's GPU, and with several GPUs marked only the answer knows which
// daemon that is. As for the share, an explicit setting wins; one that differs is a warning
// naming the variable and both values. The answer's GPU (ordinal and UUID) is returned for the
// device map after cuInit (an MPS client sees only its daemon's GPU, as its device 0).
// No answer (no arbiter, a refusal, a timeout) or a bad one (logged as an error naming the
// problem) leaves the environment as it was. Never
// blocks longer than the bound, never fails the application's cuInit, never exits.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "runtime/config.h"

namespace gshare::preload {

// What ChooseMpsShare did, for the log and tests.
enum class ShareOutcome : uint8_t {
  kNotAsked,               // no arbiter socket, or GSHARE_SHARE_QUERY=0
  kNoAnswer,               // unreachable, refused, timed out: environment unchanged
  kBadAnswer,              // the answer broke the protocol: environment unchanged, error logged
  kNotCorun,               // the arbiter would not co-run it, no pipe directory set: unchanged
  kNotCorunKeptOffDaemon,  // not co-run: CUDA_MPS_PIPE_DIRECTORY replaced by kNoMpsPipeDirectory
  kSet,                    // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE set to the arbiter's share
  kKeptAgrees,             // the environment's share kept; it is the arbiter's
  kKeptDisagrees  // the environment's share kept; the arbiter chose another (warning logged)
};

// Where no MPS daemon can be: not a directory that exists (only root could create it).
inline constexpr const char* kNoMpsPipeDirectory = "/nonexistent/gshare-no-mps";

// The GPU a co-run answer placed the process on.
struct CorunPlacement {
  uint32_t gpu = 0;                 // the arbiter's ordinal
  std::array<uint8_t, 16> uuid{};   // the driver's UUID of it; all 0: the arbiter did not know it
  bool pipe_from_answer = false;    // CUDA_MPS_PIPE_DIRECTORY is the answer's (its daemon's)
};

struct ShareChoice {
  ShareOutcome outcome = ShareOutcome::kNotAsked;
  std::optional<CorunPlacement> placement;  // a co-run answer's GPU
};

// Call before the real cuInit, at most once per process image. Not thread-safe against other
// threads reading the environment at the same moment (setenv), as any setenv: it runs inside
// the application's first cuInit, before CUDA is in use.
ShareChoice ChooseMpsShare(const Config& config);

}  // namespace gshare::preload
