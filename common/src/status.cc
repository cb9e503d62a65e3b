// Status helpers (gshare/common/status.h): code names, errno mapping and formatting.
#include "gshare/common/status.h"

#include <cerrno>
#include <cstring>

namespace gshare {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kMalformed: return "malformed";
    case StatusCode::kVersionMismatch: return "version mismatch";
    case StatusCode::kRefused: return "refused";
    case StatusCode::kTimeout: return "timeout";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kClosed: return "closed";
    case StatusCode::kPermissionDenied: return "permission denied";
    case StatusCode::kOsError: return "os error";
  }
  return "unknown";
}

Status Status::FromErrno(std::string_view what, int err) {
  StatusCode code = StatusCode::kOsError;
  if (err == EACCES || err == EPERM) code = StatusCode::kPermissionDenied;
  if (err == ETIMEDOUT) code = StatusCode::kTimeout;
  if (err == EPIPE || err == ECONNRESET) code = StatusCode::kClosed;
  if (err == ECONNREFUSED || err == ENOENT) code = StatusCode::kUnavailable;
  char buf[128];
  // GNU strerror_r returns the message pointer (which may or may not be buf).
  const char* text = strerror_r(err, buf, sizeof(buf));
  std::string message(what);
  message += ": ";
  message += text;
  return Status(code, std::move(message), err);
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(StatusCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

}  // namespace gshare
