// Errors as values, the one error vocabulary of gshare's C++ code outside the C ABI (CUresult
// stays at the driver boundary and in simcuda): a small [[nodiscard]] Status (code + message +
// errno) and Result<T> (a value or a Status). The codes say what the caller can do about it.
// Born in shm/ (whose code still names them shm::Status, shm::Result: shm/status.h), used by
// the protocol, the arbiter, the shim's arbiter client and the workload library.
// Thread-safety: plain values; copying is safe, sharing one object across threads needs
// external synchronisation like any std::string.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace gshare {

enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument,   // the caller passed something unusable (fix the call)
  kMalformed,         // a peer sent a malformed message or wrote an invalid channel field, or
                      // input data (a trace, a catalog file) does not parse
  kVersionMismatch,   // the peer speaks another ABI version (upgrade one side)
  kRefused,           // the arbiter refused the registration (message has its reason)
  kTimeout,           // the deadline passed (retry later)
  kUnavailable,       // no arbiter listening (run stand-alone or retry later)
  kClosed,            // the peer closed the connection (it died or shut down)
  kPermissionDenied,  // the OS refused access
  kOsError,           // another system call failure (see errno)
};

// Short stable name of a code ("malformed", "timeout", ...).
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message, int sys_errno = 0)
      : code_(code), errno_(sys_errno), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  // Builds a kOsError (or kPermissionDenied / kTimeout for EACCES,EPERM / ETIMEDOUT) whose
  // message is "<what>: <strerror(err)>".
  static Status FromErrno(std::string_view what, int err);

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  int sys_errno() const { return errno_; }
  const std::string& message() const { return message_; }
  // "<code name>: <message>", or "ok".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  int errno_ = 0;
  std::string message_;
};

// A value of type T or a non-OK Status. REQUIRES for value(): ok().
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.ok()) status_ = Status(StatusCode::kInvalidArgument, "Result built from OK status");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T&& operator*() && { return std::move(*value_); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace gshare
