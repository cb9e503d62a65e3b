// Backtraces on hook errors (see backtrace.h): enablement read once from the environment, a
// token-bucket rate limit, and libunwind's local unwinder.
//
// libunwind is loaded with dlopen only when GSHARE_BACKTRACE asks for it, never linked:
// libgshare.so must not pull a shared library into every function process that could clash
// with the application's own (tests/preload exported_symbols_test), and Debian's libunwind.a is
// not position-independent. The entry points' exported names come from the header's own macros
// (unw_init_local -> _ULx86_64_init_local on x86-64), so they follow the architecture.
#define UNW_LOCAL_ONLY
#include "runtime/backtrace.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <libunwind.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "gshare/common/thread_annotations.h"
#include "runtime/log.h"
#include "runtime/real_driver.h"
#include "runtime/runtime.h"

#define GSHARE_STR2(x) #x
#define GSHARE_STR(x) GSHARE_STR2(x)

namespace gshare::preload {
namespace {

constexpr int kMaxFrames = 32;
constexpr double kBurst = 10;   // backtraces allowed at once
constexpr double kPerSecond = 1;  // then this many a second

// The libunwind entry points used here, resolved from the shared library at run time.
struct Unwind {
  decltype(&unw_tdep_getcontext) getcontext = nullptr;
  decltype(&unw_init_local) init_local = nullptr;
  decltype(&unw_step) step = nullptr;
  decltype(&unw_get_reg) get_reg = nullptr;
  decltype(&unw_get_proc_name) get_proc_name = nullptr;

  bool Load() {
    void* lib = ::dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) lib = ::dlopen("libunwind.so", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return false;  // never closed: used until the process exits
    const DlsymFn sym = RealDlsym();
    getcontext = reinterpret_cast<decltype(getcontext)>(sym(lib, GSHARE_STR(unw_tdep_getcontext)));
    init_local = reinterpret_cast<decltype(init_local)>(sym(lib, GSHARE_STR(unw_init_local)));
    step = reinterpret_cast<decltype(step)>(sym(lib, GSHARE_STR(unw_step)));
    get_reg = reinterpret_cast<decltype(get_reg)>(sym(lib, GSHARE_STR(unw_get_reg)));
    get_proc_name = reinterpret_cast<decltype(get_proc_name)>(sym(lib, GSHARE_STR(unw_get_proc_name)));
    return getcontext && init_local && step && get_reg && get_proc_name;
  }
};

const Unwind* LoadedUnwind() {
  static const Unwind* unwind = [] {
    auto* u = new Unwind();  // never destroyed: hooks run during exit
    if (u->Load()) return static_cast<const Unwind*>(u);
    Log().warn("GSHARE_BACKTRACE: cannot load libunwind ({}); no backtraces", ::dlerror());
    return static_cast<const Unwind*>(nullptr);
  }();
  return unwind;
}

// GSHARE_BACKTRACE=1|true|yes|on, a log file to write into, and libunwind.
bool Enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("GSHARE_BACKTRACE");
    const char* file = std::getenv("GSHARE_LOG_FILE");
    if (v == nullptr || file == nullptr || *file == '\0') return false;
    const bool asked = std::strcmp(v, "1") == 0 || std::strcmp(v, "true") == 0 ||
                       std::strcmp(v, "yes") == 0 || std::strcmp(v, "on") == 0;
    return asked && LoadedUnwind() != nullptr;
  }();
  return enabled;
}

class RateLimit {
 public:
  // True if one more may be logged now; *suppressed = how many were refused since the last.
  bool Take(uint64_t* suppressed) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (started_) {
      tokens_ = std::min(kBurst, tokens_ + std::chrono::duration<double>(now - last_).count() * kPerSecond);
    }
    started_ = true;
    last_ = now;
    if (tokens_ < 1) {
      ++suppressed_;
      return false;
    }
    tokens_ -= 1;
    *suppressed = suppressed_;
    suppressed_ = 0;
    return true;
  }

 private:
  Mutex mu_;  // a leaf
  bool started_ GUARDED_BY(mu_) = false;
  double tokens_ GUARDED_BY(mu_) = kBurst;
  std::chrono::steady_clock::time_point last_ GUARDED_BY(mu_);
  uint64_t suppressed_ GUARDED_BY(mu_) = 0;
};

RateLimit& Limit() {
  static auto* limit = new RateLimit();  // never destroyed: hooks run during exit
  return *limit;
}

std::string ErrorName(CUresult result) {
  using Fn = CUresult (*)(CUresult, const char**);
  const auto fn = reinterpret_cast<Fn>(Runtime::Get().real().Resolve("cuGetErrorName"));
  const char* name = nullptr;
  if (fn != nullptr && fn(result, &name) == CUDA_SUCCESS && name != nullptr) return name;
  return "CUresult " + std::to_string(static_cast<int>(result));
}

std::string Demangle(const char* name) {
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) return name;
  std::string s(out);
  std::free(out);
  return s;
}

}  // namespace

bool IsExpectedResult(CUresult result) {
  return result == CUDA_SUCCESS || result == CUDA_ERROR_NOT_READY;
}

std::string CaptureBacktrace(int skip, int max_frames) {
  const Unwind* u = LoadedUnwind();
  if (u == nullptr) return "  (libunwind is not available)\n";
  unw_context_t context;
  unw_cursor_t cursor;
  if (u->getcontext(&context) != 0 || u->init_local(&cursor, &context) != 0) return "  (libunwind failed)\n";
  std::string out;
  int frame = 0;
  // The first step leaves this function's own frame.
  while (u->step(&cursor) > 0 && frame < max_frames) {
    if (skip > 0) {
      --skip;
      continue;
    }
    unw_word_t ip = 0, offset = 0;
    u->get_reg(&cursor, UNW_REG_IP, &ip);
    char name[512];
    std::string function = "??";
    if (u->get_proc_name(&cursor, name, sizeof(name), &offset) == 0) {
      function = fmt::format("{}+{:#x}", Demangle(name), offset);
    }
    Dl_info info{};
    std::string module = "?";
    if (dladdr(reinterpret_cast<void*>(ip), &info) != 0 && info.dli_fname != nullptr) {
      module = info.dli_fname;
      if (function == "??" && info.dli_sname != nullptr) function = Demangle(info.dli_sname);
    }
    out += fmt::format("  #{} {:#x} {} ({})\n", frame++, ip, function, module);
  }
  return out;
}

void OnHookError(CUresult result, const char* api) noexcept {
  if (IsExpectedResult(result) || !Enabled()) return;
  uint64_t suppressed = 0;
  if (!Limit().Take(&suppressed)) return;
  try {
    std::string stack = CaptureBacktrace(1, kMaxFrames);  // from the hook's frame on
    if (!stack.empty() && stack.back() == '\n') stack.pop_back();
    Log().warn("{} returned {} ({}); backtrace{}:\n{}", api, ErrorName(result), static_cast<int>(result),
               suppressed > 0 ? fmt::format(" ({} earlier errors not shown: rate limit)", suppressed) : "",
               stack);
  } catch (...) {  // formatting or allocation failed: the application's call result matters more
  }
}

}  // namespace gshare::preload
