// shm/'s names for gshare's error values (gshare/common/status.h): the protocol library was where
// Status and Result<T> began, and its code and its users' still say shm::Status, shm::Result.
// Nothing in shm/ throws or exits; every failure comes back through these types.
#pragma once

#include "gshare/common/status.h"

namespace gshare::shm {

using ::gshare::Status;
using ::gshare::StatusCode;
using ::gshare::StatusCodeName;
template <typename T>
using Result = ::gshare::Result<T>;

}  // namespace gshare::shm
