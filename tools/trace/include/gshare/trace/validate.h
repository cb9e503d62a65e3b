// A checker for Chrome/Perfetto trace-event JSON ("Trace Event Format": the JSON Array or
// JSON Object format), strict enough that a trace it accepts loads in ui.perfetto.dev without
// import errors: required fields per phase, integer pid/tid, numeric non-negative ts/dur in
// microseconds, numeric counter values, well-formed metadata, B/E pairs that nest per thread and
// complete (X) events that nest (never partially overlap) per thread.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gshare::trace {

struct Validation {
  std::vector<std::string> errors;    // the first max_errors problems, each naming the event index
  size_t error_count = 0;             // all problems found
  std::map<std::string, size_t> phases;  // events per ph
  bool ok() const { return error_count == 0; }
};

// Pure; thread-safe.
Validation ValidateTraceJson(const nlohmann::json& trace, size_t max_errors = 20);

}  // namespace gshare::trace
