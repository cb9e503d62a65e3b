// Parser for gshare's own simple trace format: CSV with the header `timestamp_ms,function` or
// `timestamp_ms,function,exec_ms` (see docs/workloads.md, "csv").
//
// Thread-safety: the function is reentrant; it reads only its arguments and the file.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "gshare/workload/result.h"
#include "gshare/workload/trace.h"

namespace gshare::workload {

// Reads `path`. Rules:
// - the first line is the header, exactly one of the two above (a trailing '\r' is allowed);
// - timestamp_ms: a non-negative decimal number of milliseconds (fractions allowed), absolute,
//   not rebased; rows need not be sorted (the result is, stably);
// - function: any non-empty name without commas; functions are numbered in order of first
//   appearance;
// - exec_ms: optional per row when the header has it (an empty field means "not given"); a
//   positive decimal number;
// - empty lines and lines starting with '#' are ignored; a file with a header and no rows is a
//   valid, empty trace; a file without a header is an error.
// Errors name the file and line: "trace.csv:7: timestamp_ms 'x1' is not a number".
Result<Trace> ParseCsvTrace(const std::filesystem::path& path, const ParseOptions& options = {});

// The same, on text already in memory; `source_name` replaces the file name in messages.
Result<Trace> ParseCsvTraceText(std::string_view text, std::string_view source_name,
                                const ParseOptions& options = {});

// Writes `trace` in this format (with the exec_ms column when any invocation has an exec_ms),
// so generated or converted workloads can be saved and replayed (gshare-loadgen, other tools).
// Times are written in milliseconds with microsecond precision, so ParseCsvTrace reads the
// same arrivals back; exec_ms is written with 17 significant digits (it round-trips exactly).
// Token counts are not part of the format and are not written. Returns OK on success, else a
// status naming the path and the OS reason.
// REQUIRES: function names contain no comma or newline (the parsers' names never do).
Status WriteCsvTrace(const Trace& trace, const std::filesystem::path& path);
std::string FormatCsvTrace(const Trace& trace);

}  // namespace gshare::workload
