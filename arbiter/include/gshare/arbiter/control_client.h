// The client side of the arbiter's control socket (used by gshare-ctl and gshare-top): one
// JSON request line out, one JSON reply line back, on a fresh Unix stream connection.
// Commands and replies are documented in docs/operating.md ("Control interface").
// Thread-safety: stateless; call from any thread.
#pragma once

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "gshare/shm/status.h"

namespace gshare::arbiter {

// Default path of the control socket: the arbiter's default (config.h), in the operator-only
// directory, never in the tenant-facing one.
inline constexpr const char* kDefaultControlSocket = "/run/gshare-operator/control.sock";

// Sends `request` to the control socket at `path` and returns the reply object.
// Errors: kUnavailable when nothing listens at `path` (the arbiter is not running: no socket
// file, or a stale one); kPermissionDenied when the socket file may not be opened;
// kTimeout when no complete reply arrived within `timeout`; kMalformed for a reply that is not
// a JSON object. A reply with "ok": false is returned as a value (the caller shows "error").
shm::Result<nlohmann::json> ControlCall(const std::string& path, const nlohmann::json& request,
                                        std::chrono::milliseconds timeout);

}  // namespace gshare::arbiter
