// The workload library's short names for gshare's one error vocabulary (gshare::Status and
// gshare::Result<T>, gshare/common/status.h): every fallible function in gshare_workload returns
// a workload::Result<T> (the same type as gshare::Result<T>) or a gshare::Status (ok() on
// success); errors are values, nothing in this library throws to its caller. A failure's
// message() is for a person; parse errors read "FILE:LINE: what is wrong" and carry
// StatusCode::kMalformed, bad options carry kInvalidArgument, failed file I/O the errno's code.
//
// Thread-safety: a Result or Status is a plain value; distinct objects may be used from distinct
// threads.
#pragma once

#include <string>
#include <utility>

#include "gshare/common/status.h"

namespace gshare::workload {

template <typename T>
using Result = ::gshare::Result<T>;

// Shorthand for a failure the caller caused (a bad option, an unknown name):
// `return Fail("unknown workload format 'parquet'");`.
inline Status Fail(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

// Shorthand for a failure caused by malformed input data (a file or text that does not parse):
// `return FailMalformed("trace.csv:3: bad timestamp");`.
inline Status FailMalformed(std::string message) {
  return Status(StatusCode::kMalformed, std::move(message));
}

}  // namespace gshare::workload
