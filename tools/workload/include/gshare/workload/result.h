// Result<T>: a value or an error message, the return type of every fallible function in
// gshare_workload (errors are values; nothing in this library throws to its caller).
//
// Thread-safety: a Result is a plain value; distinct objects may be used from distinct threads.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace gshare::workload {

// What went wrong, for a person: parse errors read "FILE:LINE: what is wrong".
struct Error {
  std::string message;
};

// Holds either a T (ok()) or an Error. Accessing value() of an error, or error() of a value, is
// a precondition violation (REQUIRES: ok() for value(), !ok() for error()).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Error error) : state_(std::move(error)) {}      // NOLINT: implicit by design

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, Error> state_;
};

// Shorthand for building an error result: `return Fail("trace.csv:3: bad timestamp");`.
inline Error Fail(std::string message) { return Error{std::move(message)}; }

}  // namespace gshare::workload
