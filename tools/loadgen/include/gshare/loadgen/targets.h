// The endpoints gshare-loadgen drives: one per model server, given on the command line as
// `name=http://127.0.0.1:PORT/v2/models/MODEL` or in a TOML file, each with its own SLO.
// Only loopback addresses are accepted (127.0.0.0/8, ::1, localhost): the load generator is a
// test tool and must not be pointed at other machines.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gshare/workload/result.h"

namespace gshare::loadgen {

struct Target {
  std::string name;    // label in reports (unique)
  std::string url;     // as given
  std::string host;    // from the URL
  int port = 0;
  std::string model;   // MODEL in /v2/models/MODEL
  double slo_ms = 0;   // 0: use the run's default
};

// Parses "http://HOST[:PORT]/v2/models/MODEL" (port default 80); HOST must be loopback.
workload::Result<Target> ParseTargetUrl(const std::string& url);
// Parses a --target value "name=URL" or "name=URL@SLO_MS" (also plain "URL": name = MODEL).
workload::Result<Target> ParseTargetFlag(const std::string& flag);
// Reads targets from TOML:
//   slo_ms = 100                   # optional default for the file
//   [[target]]
//   name = "cnn-0"                 # optional (default: the model name)
//   url = "http://127.0.0.1:8001/v2/models/cnn"
//   slo_ms = 50                    # optional
workload::Result<std::vector<Target>> LoadTargetsToml(const std::string& path);
// True for 127.0.0.0/8, ::1 and localhost.
bool IsLoopbackHost(const std::string& host);

}  // namespace gshare::loadgen
