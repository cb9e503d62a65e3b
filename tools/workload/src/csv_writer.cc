// Implementation of WriteCsvTrace / FormatCsvTrace (csv_trace.h): the csv format's writer.
#include <cerrno>
#include <cinttypes>
#include <cstdio>

#include "gshare/workload/csv_trace.h"
#include "text.h"

namespace gshare::workload {

std::string FormatCsvTrace(const Trace& trace) {
  bool has_exec = false;
  for (const Invocation& inv : trace.invocations) has_exec |= inv.exec_ms.has_value();
  std::string out = has_exec ? "timestamp_ms,function,exec_ms\n" : "timestamp_ms,function\n";
  out.reserve(out.size() + trace.invocations.size() * 32);
  char number[64];
  for (const Invocation& inv : trace.invocations) {
    // Microseconds as milliseconds with three decimals, exactly (no floating point).
    const int64_t us = inv.arrival_us;
    std::snprintf(number, sizeof number, "%s%" PRId64 ".%03" PRId64, us < 0 ? "-" : "",
                  (us < 0 ? -us : us) / 1000, (us < 0 ? -us : us) % 1000);
    out += number;
    out += ',';
    out += trace.functions[inv.function].name;
    if (has_exec) {
      out += ',';
      if (inv.exec_ms) {
        std::snprintf(number, sizeof number, "%.17g", *inv.exec_ms);
        out += number;
      }
    }
    out += '\n';
  }
  return out;
}

Status WriteCsvTrace(const Trace& trace, const std::filesystem::path& path) {
  const std::string text = FormatCsvTrace(trace);
  internal::UniqueFile file(std::fopen(path.c_str(), "wb"));
  if (!file) {
    const int err = errno;
    return Status::FromErrno(path.string() + ": cannot create", err);
  }
  if (std::fwrite(text.data(), 1, text.size(), file.get()) != text.size() ||
      std::fflush(file.get()) != 0) {
    const int err = errno;
    return Status::FromErrno(path.string() + ": write failed", err);
  }
  return Status::Ok();
}

}  // namespace gshare::workload
