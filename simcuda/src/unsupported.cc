// ReportUnsupported: the body of the generated stubs for entry points simcuda does not implement.
#include <mutex>
#include <set>
#include <string>

#include "entry_table.h"
#include "log.h"

namespace simcuda {

int ReportUnsupported(const char* name) {
  static std::mutex* mu = new std::mutex;             // never destroyed: may run at exit
  static std::set<std::string>* seen = new std::set<std::string>;
  {
    std::lock_guard<std::mutex> lock(*mu);
    if (!seen->insert(name).second) return 801;
  }
  Log(LogLevel::kError, "%s is not implemented by simcuda: returning CUDA_ERROR_NOT_SUPPORTED", name);
  return 801;  // CUDA_ERROR_NOT_SUPPORTED
}

}  // namespace simcuda
