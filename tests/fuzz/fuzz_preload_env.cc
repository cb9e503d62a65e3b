// Fuzz target: the shim's environment parsing (preload/src/runtime/config.cc, ParseConfig).
// The shim runs inside other people's processes, so any GSHARE_* value must be parsed or
// reported as an error naming the variable, never crash; an accepted configuration respects
// the documented ranges, expands every "%p" in GSHARE_CONTROL_SOCKET and holds only a function
// name registration can send.
// Input: a pid (4 bytes), then one value per line for the variables below in order (an empty
// line leaves the variable unset).
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_input.h"
#include "runtime/config.h"

namespace {

constexpr std::array<const char*, 10> kVariables = {
    "GSHARE_VGPU_MEMORY",    "GSHARE_FUNCTION",  "GSHARE_SLO_MS",        "GSHARE_CONTROL_SOCKET",
    "GSHARE_REAL_LIBCUDA",   "GSHARE_LOG_LEVEL", "GSHARE_LOG_FILE",      "GSHARE_ARBITER_SOCKET",
    "GSHARE_IDLE_RELEASE_US", "GSHARE_ARBITER_FAIL"};

struct Environment {
  std::array<std::string, kVariables.size()> values;
  std::array<bool, kVariables.size()> set{};
};

const char* Lookup(const char* name, void* ctx) {
  const auto* env = static_cast<const Environment*>(ctx);
  for (size_t i = 0; i < kVariables.size(); ++i)
    if (std::strcmp(name, kVariables[i]) == 0) return env->set[i] ? env->values[i].c_str() : nullptr;
  return nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gshare::fuzz::FuzzInput in(data, size);
  const int pid = static_cast<int>(in.Take<uint32_t>() & 0x3fffffff);
  Environment env;
  for (size_t i = 0; i < kVariables.size() && in.remaining() > 0; ++i) {
    std::string line = in.Line(4096);
    // Environment values cannot contain NUL; what the shim sees ends at the first one.
    line.resize(std::strlen(line.c_str()));
    env.set[i] = !line.empty();
    env.values[i] = std::move(line);
  }
  const gshare::preload::Config c = gshare::preload::ParseConfig(&Lookup, &env, pid);
  if (c.vgpu_memory_bytes) FUZZ_CHECK(*c.vgpu_memory_bytes > 0);
  if (c.slo_ms) FUZZ_CHECK(*c.slo_ms > 0);
  FUZZ_CHECK(c.idle_release_us > 0);
  FUZZ_CHECK(c.control_socket.find("%p") == std::string::npos || !c.control_socket_per_pid ||
             env.values[3].find("%p") != std::string::npos);
  if (!c.control_socket_per_pid) FUZZ_CHECK(c.control_socket == env.values[3]);
  if (!c.error.ok()) FUZZ_CHECK(c.error.message().find("GSHARE_") != std::string::npos);
  // The function name is what registration sends: printable ASCII, at most 127 bytes; any other
  // value is an error naming GSHARE_FUNCTION.
  FUZZ_CHECK(c.function_name.size() <= 127);
  for (const char ch : c.function_name) FUZZ_CHECK(ch >= 0x20 && ch <= 0x7e);
  if (env.values[1] != c.function_name) FUZZ_CHECK(c.error.message().find("GSHARE_FUNCTION") != std::string::npos);
  return 0;
}
