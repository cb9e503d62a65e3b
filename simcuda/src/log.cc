// Implementation of the internal stderr logger (see log.h).
#include "log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace simcuda {
namespace {

LogLevel ReadLevel() {
  const char* env = std::getenv("SIMCUDA_LOG_LEVEL");
  if (env == nullptr) return LogLevel::kError;
  static constexpr struct {
    const char* name;
    LogLevel level;
  } kNames[] = {{"off", LogLevel::kOff},   {"error", LogLevel::kError}, {"warn", LogLevel::kWarn},
                {"info", LogLevel::kInfo}, {"debug", LogLevel::kDebug}};
  for (const auto& n : kNames) {
    if (strcasecmp(env, n.name) == 0) return n.level;
  }
  return LogLevel::kError;
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kError: return "error";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kInfo: return "info";
    case LogLevel::kDebug: return "debug";
    case LogLevel::kOff: break;
  }
  return "";
}

int g_also_fd = -1;
LogLevel g_also_level = LogLevel::kOff;

}  // namespace

void LogAlsoTo(int fd, LogLevel level) {
  g_also_fd = fd;
  g_also_level = level;
}

bool LogEnabled(LogLevel level) {
  static const LogLevel threshold = ReadLevel();
  return level != LogLevel::kOff && static_cast<int>(level) <= static_cast<int>(threshold);
}

void Log(LogLevel level, const char* format, ...) {
  const bool also = g_also_fd >= 0 && level != LogLevel::kOff &&
                    static_cast<int>(level) <= static_cast<int>(g_also_level);
  if (!LogEnabled(level) && !also) return;
  char line[1024];
  int n = std::snprintf(line, sizeof line, "simcuda[%d] %s: ", static_cast<int>(getpid()),
                        LevelName(level));
  if (n < 0) return;
  va_list args;
  va_start(args, format);
  int m = std::vsnprintf(line + n, sizeof line - static_cast<size_t>(n) - 1, format, args);
  va_end(args);
  size_t len = static_cast<size_t>(n) + (m < 0 ? 0 : static_cast<size_t>(m));
  if (len > sizeof line - 2) len = sizeof line - 2;
  line[len++] = '\n';
  // One write per line so concurrent lines do not interleave.
  if (LogEnabled(level)) {
    ssize_t ignored = write(STDERR_FILENO, line, len);
    (void)ignored;
  }
  if (also) {
    ssize_t ignored = write(g_also_fd, line, len);
    (void)ignored;
  }
}

}  // namespace simcuda
