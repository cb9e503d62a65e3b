// simcuda's internal logger: printf-style lines to stderr, gated by SIMCUDA_LOG_LEVEL
// (off, error, warn, info, debug; default error). Deliberately tiny and dependency-free so that
// nothing clashes with the libraries of the program that loads the driver. Thread-safe.
#ifndef SIMCUDA_SRC_LOG_H_
#define SIMCUDA_SRC_LOG_H_

namespace simcuda {

enum class LogLevel { kOff = 0, kError = 1, kWarn = 2, kInfo = 3, kDebug = 4 };

// True if messages at `level` are printed.
bool LogEnabled(LogLevel level);
// Also writes every line at `level` or more severe to `fd` (whatever SIMCUDA_LOG_LEVEL says), as
// simcuda-mps-control does to its control.log; -1 stops. Call before other threads log.
void LogAlsoTo(int fd, LogLevel level);
// Prints "simcuda[pid] LEVEL: message" if enabled.
void Log(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace simcuda

#endif  // SIMCUDA_SRC_LOG_H_
