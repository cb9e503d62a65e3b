// The shim's logger. Silent by default: nothing reaches the application's stderr unless
// GSHARE_LOG_LEVEL or GSHARE_LOG_FILE asks for it. spdlog and fmt are compiled header-only
// into libgshare.so with hidden visibility, so they never clash with the application's own.
//
// Thread-safety: Log() may be called from any thread once InitLog has returned; InitLog is
// called by the runtime's initialisation (serialised by its mutex).
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace gshare::preload {

// (Re)creates the process logger. `level`: spdlog level names (trace, debug, info, warn, error,
// critical, off); empty means "off" unless `file` is given, then "info". Returns an error
// message for an unknown level or an unwritable file (the logger then stays silent).
std::string InitLog(const std::string& level, const std::string& file);

// The process logger; a silent one before InitLog. Never null.
spdlog::logger& Log();

}  // namespace gshare::preload
