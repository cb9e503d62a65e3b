// The data-integrity soak: GSHARE_SOAK_FUNCTIONS (default 5) functions with random quotas
// (96-160 MiB), block sizes, operation mixes and idle pauses share one simulated 384 MiB GPU
// through a real gshare-arbiter for GSHARE_SOAK_SECONDS (default 60), so the arbiter keeps
// swapping them out and in. Each function verifies every byte of every live buffer at every
// turn (a checksum kernel over the whole buffer against the fill formula) and reads everything
// back byte for byte at the end. Seeds derive from GSHARE_SOAK_SEED (default 1), printed so a
// failure can be replayed. Afterwards: no errors, swaps happened, no reservation is left,
// the driver holds no device memory.
#include <cstdlib>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fault_env.h"

namespace gshare::fault {
namespace {

using arbiter::testing::ReadFile;
using std::chrono::seconds;

int EnvInt(const char* name, int def) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : def;
}

TEST(Soak, RandomFunctionsSwappedByTheArbiterKeepEveryByte) {
  const int functions = EnvInt("GSHARE_SOAK_FUNCTIONS", 5);
  const int duration = EnvInt("GSHARE_SOAK_SECONDS", 60);
  const int seed = EnvInt("GSHARE_SOAK_SEED", 1);
  std::printf("soak: functions=%d seconds=%d seed=%d\n", functions, duration, seed);
  FaultNode node("1x384MiB", "0", {"--policy", "fifo", "--slice", "5ms"});
  ASSERT_TRUE(node.arbiter().Start()) << ReadFile(node.arbiter().log());
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  std::vector<Worker> workers;
  for (int i = 0; i < functions; ++i) {
    WorkerSpec spec;
    spec.name = "soak" + std::to_string(i);
    const int quota = 96 + static_cast<int>(rng() % 65);  // MiB
    spec.quota = std::to_string(quota) + "MiB";
    spec.seed = rng();
    spec.big_mib = 8 + static_cast<int>(rng() % static_cast<uint64_t>(quota / 2));
    spec.budget_mib = quota - spec.big_mib - 24;  // headroom for granules and the scratch word
    spec.turns = 1;
    spec.ops = 4 + static_cast<int>(rng() % 13);
    spec.idle_ms = 5 + static_cast<int>(rng() % 56);
    spec.extra_env.push_back("GSHARE_LOG_LEVEL=info");
    spec.extra_args = {"--seconds", std::to_string(duration)};
    workers.push_back(node.Spawn(spec));
    ASSERT_GT(workers.back().pid, 0);
  }
  uint64_t verified = 0;
  int turns = 0;
  for (const Worker& w : workers) {
    int code = 0;
    const nlohmann::json r = node.Finish(w, seconds(duration + 300), &code);
    EXPECT_EQ(code, 0) << "(-12 = SIGSEGV)\n" << node.Describe(w);
    EXPECT_TRUE(r.is_object()) << node.Describe(w);
    if (!r.is_object()) continue;
    EXPECT_EQ(r["errors"], 0) << r.dump();
    verified += r["verified_bytes"].get<uint64_t>();
    turns += r["turns"].get<int>();
  }
  const nlohmann::json summary = node.arbiter().Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(node.arbiter().log());
  const auto& gpu = summary["gpus"][0];
  // The arbiter's warnings and errors, for any failure below.
  std::string warnings;
  {
    std::istringstream log(ReadFile(node.arbiter().log()));
    for (std::string line; std::getline(log, line);)
      if (line.find(" warning ") != std::string::npos || line.find(" error ") != std::string::npos)
        warnings += line + "\n";
  }
  EXPECT_EQ(gpu["reserved_bytes"].get<uint64_t>(), 0u) << summary.dump();
  EXPECT_EQ(gpu["overshoot_events"], 0) << summary.dump() << "\n" << warnings;
  EXPECT_LE(gpu["peak_reserved_bytes"].get<uint64_t>(), gpu["usable_bytes"].get<uint64_t>());
  EXPECT_GT(summary["swap_outs"].get<int>(), 0) << summary.dump();
  EXPECT_GT(summary["swap_ins"].get<int>(), 0) << summary.dump();
  // Honest functions never trip the doorbell-flooding guard at its default rate.
  EXPECT_EQ(summary["doorbell_mutes"].get<int>(), 0) << summary.dump() << "\n" << warnings;
  EXPECT_EQ(summary["malformed_channels"].get<int>(), 0) << summary.dump() << "\n" << warnings;
  // Nobody was disconnected and came back: an honest function that re-registers resident is how
  // the reservation used to overshoot (docs/reliability.md, the soak's open item).
  EXPECT_EQ(summary["re_registrations"].get<int>(), 0) << summary.dump() << "\n" << warnings;
  const auto used = node.DeviceUsed();
  ASSERT_TRUE(used.has_value());
  EXPECT_EQ(*used, 0u);
  std::printf("soak: functions=%d seconds=%d turns=%d verified_bytes=%llu swap_outs=%d "
              "swap_ins=%d grants=%d re_registrations=%d overshoots=%d client_deaths=%d "
              "malformed=%d\n",
              functions, duration, turns, static_cast<unsigned long long>(verified),
              summary["swap_outs"].get<int>(), summary["swap_ins"].get<int>(),
              summary["grants"].get<int>(), summary["re_registrations"].get<int>(),
              gpu["overshoot_events"].get<int>(), summary["client_deaths"].get<int>(),
              summary["malformed_channels"].get<int>());
  RecordProperty("verified_bytes", std::to_string(verified));
  RecordProperty("swap_outs", summary["swap_outs"].get<int>());
  RecordProperty("swap_ins", summary["swap_ins"].get<int>());
}

}  // namespace
}  // namespace gshare::fault
