// Fuzz target: the arbiter's configuration parser (arbiter/src/config.cc): a TOML file
// (toml++) or a command line (CLI11). Nothing throws out of the parser, every failure is an
// error message, and an accepted configuration respects the documented bounds.
// Input: first byte even -> the rest is a TOML document; odd -> the rest is a command line,
// one argument per line (at most 32). Arguments naming --config are dropped: that option reads
// a file, and the fuzzer must not read the machine's files.
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "gshare/arbiter/config.h"
#include "gshare/shm/wire.h"

namespace {

void CheckConfig(const gshare::arbiter::ArbiterConfig& c) {
  FUZZ_CHECK(!c.socket_path.empty() && c.socket_path.size() < 108);
  FUZZ_CHECK(c.socket_mode <= 0777 && c.control_socket_mode <= 0777 && c.event_ring_mode <= 0777);
  FUZZ_CHECK(c.metrics_address.socket_mode <= 0777);
  FUZZ_CHECK(c.metrics_address.max_connections >= 1 && c.metrics_address.max_connections <= 1024);
  FUZZ_CHECK(c.metrics_address.allow.empty() || !c.metrics_address.allow_any);
  for (const auto& net : c.metrics_address.allow)
    FUZZ_CHECK(net.prefix >= 0 && net.prefix <= (net.family == AF_INET ? 32 : 128));
  FUZZ_CHECK(c.gpu_count >= 1 && c.gpu_count <= gshare::shm::kMaxGpus);
  for (uint32_t g : c.gpus) FUZZ_CHECK(g < gshare::shm::kMaxGpus);
  FUZZ_CHECK(c.slice.count() > 0 && c.idle_release.count() > 0 && c.preempt_grace.count() > 0);
  FUZZ_CHECK(c.deep_evict_after.count() >= 0);
  FUZZ_CHECK(c.event_ring_capacity >= 16 && (c.event_ring_capacity & (c.event_ring_capacity - 1)) == 0);
  FUZZ_CHECK(c.max_clients >= 1);
  FUZZ_CHECK(c.doorbell_rate <= 100'000'000);
  FUZZ_CHECK(c.doorbell_flood_disconnect.count() >= 0 &&
             c.doorbell_flood_disconnect <= std::chrono::hours(24));
  FUZZ_CHECK(!c.policy.empty() && !c.libcuda.empty());
  if (c.gpu_memory_bytes) FUZZ_CHECK(*c.gpu_memory_bytes <= gshare::shm::kMaxQuotaBytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace arb = gshare::arbiter;
  gshare::fuzz::FuzzInput in(data, size);
  const bool command_line = (in.Take<uint8_t>() & 1) != 0;
  if (!command_line) {
    const auto result = arb::ParseConfigToml(in.Rest(), arb::ArbiterConfig{});
    if (result.ok()) CheckConfig(*result);
    return 0;
  }
  std::vector<std::string> args{"gshare-arbiter"};
  while (in.remaining() > 0 && args.size() < 33) {
    std::string arg = in.Line(256);
    if (arg.find("--config") != std::string::npos) return 0;
    args.push_back(std::move(arg));
  }
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  const auto result = arb::ParseCommandLine(static_cast<int>(args.size()), argv.data());
  if (result.ok() && !result->help) CheckConfig(result->config);  // --help: no config to check
  return 0;
}
