// The main program every sample shares: command line, CUDA start-up on the chosen device,
// the HTTP server, weight loading, and clean shutdown on SIGTERM/SIGINT.
//
// Command line: --port P (0 picks a free port; default 8000), --host H (default 127.0.0.1),
// --device D, --seed S, --name NAME (default: the sample's kind), --threads N.
// Standard output carries two machine-readable lines, each flushed:
//   PORT=<port>                                   once the socket is bound (health/live works)
//   READY name=<name> weight_bytes=<n> load_ms=<ms>   once the model serves requests
// Exit status: 0 after a signal-initiated shutdown, 1 on a start-up failure, 2 on bad arguments.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "sample/model.h"

namespace sample {

// `kind` is the default model name (also used in messages); `make` creates the model (no GPU
// work yet). Returns the process exit status.
int RunSample(int argc, char** argv, const std::string& kind,
              const std::function<std::unique_ptr<Model>()>& make);

}  // namespace sample
