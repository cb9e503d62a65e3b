// Logger set-up (see log.h).
#include "runtime/log.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <algorithm>
#include <atomic>
#include <memory>

#include "gshare/memory/vgpu_memory.h"

namespace gshare::preload {
namespace {

// Loggers are never destroyed: hooks may log while the process exits.
std::atomic<spdlog::logger*> g_logger{nullptr};

// Every logger InitLog made, kept on purpose (one reference each) so it outlives static
// destruction; reachable from here, so LeakSanitizer does not report it.
struct KeptLogger {
  std::shared_ptr<spdlog::logger> logger;
  KeptLogger* older;
};
std::atomic<KeptLogger*> g_kept{nullptr};

spdlog::logger* MakeSilent() {
  auto* logger = new spdlog::logger("gshare", std::make_shared<spdlog::sinks::null_sink_mt>());
  logger->set_level(spdlog::level::off);
  return logger;
}

}  // namespace

std::string InitLog(const std::string& level, const std::string& file) {
  std::string error;
  spdlog::level::level_enum lvl = spdlog::level::off;
  if (!level.empty()) {
    lvl = spdlog::level::from_str(level);
    if (lvl == spdlog::level::off && level != "off") {
      error = "GSHARE_LOG_LEVEL='" + level + "' is not one of trace, debug, info, warn, error, "
              "critical, off";
    }
  } else if (!file.empty()) {
    lvl = spdlog::level::info;
  }
  spdlog::sink_ptr sink;
  if (lvl != spdlog::level::off) {
    if (!file.empty()) {
      // spdlog reports an unwritable file by throwing; keep it inside the library.
      try {
        sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(file, false);
      } catch (const std::exception& e) {
        error = "GSHARE_LOG_FILE='" + file + "' cannot be opened: " + e.what();
        lvl = spdlog::level::off;
      }
    } else {
      sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    }
  }
  if (!sink) sink = std::make_shared<spdlog::sinks::null_sink_mt>();
  auto shared = std::make_shared<spdlog::logger>("gshare", std::move(sink));
  shared->set_level(lvl);
  shared->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [gshare %P] [%l] %v");
  // Every line at info and above reaches the file at once; at debug/trace, those lines too (a
  // test or an operator reading the log while the process runs sees them).
  shared->flush_on(std::min(lvl, spdlog::level::info));
  auto* keep = new KeptLogger{shared, g_kept.load(std::memory_order_relaxed)};
  while (!g_kept.compare_exchange_weak(keep->older, keep, std::memory_order_acq_rel)) {
  }
  g_logger.store(keep->logger.get(), std::memory_order_release);
  memory::SetLogger(keep->logger.get());  // never destroyed: kept above
  return error;
}

spdlog::logger& Log() {
  spdlog::logger* logger = g_logger.load(std::memory_order_acquire);
  if (logger == nullptr) {
    spdlog::logger* silent = MakeSilent();
    if (g_logger.compare_exchange_strong(logger, silent)) return *silent;
    delete silent;
  }
  return *logger;
}

}  // namespace gshare::preload
