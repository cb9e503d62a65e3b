// An arbiter that manages GPUs 1 and 3 of four (`gpus = [1, 3]`): its own table's indices (0, 1)
// differ from the CUDA ordinals, and only the ordinals may reach clients (registration replies,
// grants), the control socket (status, clients, drain) and re-registrations that name their GPU.
// Harness: inprocess_arbiter.h.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "gshare/shm/futex.h"
#include "inprocess_arbiter.h"

namespace gshare::arbiter {
namespace {

using inproc::InProcessArbiter;
using inproc::RegisterScripted;
using inproc::Scripted;
using std::chrono::seconds;

TEST(ArbiterInProcess, AnArbiterOfGpusOneAndThreeNamesThemByTheirOrdinals) {
  constexpr uint64_t kQuota = 768ULL << 20;  // one a 1 GiB GPU: a and b go to different GPUs
  InProcessArbiter arb;
  arb.config().gpu_count = 4;
  arb.config().gpus = {1, 3};
  arb.EnableControl();
  ASSERT_TRUE(arb.Start());
  Scripted a = RegisterScripted(arb.socket(), "a", kQuota);
  Scripted b = RegisterScripted(arb.socket(), "b", kQuota);
  ASSERT_NE(a.chan, nullptr);
  ASSERT_NE(b.chan, nullptr);
  EXPECT_EQ((std::set<uint32_t>{a.reg.reply.gpu, b.reg.reply.gpu}), (std::set<uint32_t>{1, 3}));

  // b's burst is granted on its GPU, named by its ordinal.
  ASSERT_TRUE(b.chan->ReportBurstStart(shm::MonotonicNowNs()).ok());
  ASSERT_TRUE(b.chan->RequestToken().ok());
  auto grant = b.chan->WaitForGrant(seconds(30));
  ASSERT_TRUE(grant.ok()) << grant.status().ToString();
  EXPECT_EQ(grant->gpu, b.reg.reply.gpu);
  ASSERT_TRUE(b.chan->ReportBurstEnd(shm::MonotonicNowNs(), 1000).ok());
  ASSERT_TRUE(b.chan->Release(grant->seq, /*want_again=*/false).ok());

  const nlohmann::json status = arb.Status();
  ASSERT_TRUE(status.contains("gpus")) << status.dump();
  std::set<uint32_t> shown;
  for (const auto& g : status["gpus"]) shown.insert(g["gpu"].get<uint32_t>());
  EXPECT_EQ(shown, (std::set<uint32_t>{1, 3}));
  const nlohmann::json clients = arb.Control({{"cmd", "clients"}});
  ASSERT_EQ(clients["clients"].size(), 2u) << clients.dump();
  for (const auto& c : clients["clients"]) {
    const uint32_t id = c["client"].get<uint32_t>();
    EXPECT_EQ(c["gpu"].get<uint32_t>(),
              id == a.reg.reply.client_id ? a.reg.reply.gpu : b.reg.reply.gpu);
  }

  // drain names an ordinal: 0 is an index here, no GPU this arbiter manages.
  EXPECT_EQ(arb.Control({{"cmd", "drain"}, {"gpu", 0}})["ok"], false);
  const nlohmann::json drained = arb.Control({{"cmd", "drain"}, {"gpu", 3}});
  EXPECT_EQ(drained["ok"], true) << drained.dump();
  EXPECT_EQ(drained["gpu"], 3);
  EXPECT_EQ(arb.Control({{"cmd", "undrain"}, {"gpu", 3}})["ok"], true);

  // A re-registration names its GPU by ordinal: 3 is managed, 0 is not.
  Scripted again = RegisterScripted(arb.socket(), "c", 1ULL << 20, shm::kFlagReRegister, 3,
                                    /*previous_id=*/41);
  ASSERT_NE(again.chan, nullptr);
  EXPECT_EQ(again.reg.reply.gpu, 3u);
  shm::RegisterRequest req;
  req.quota_bytes = 1ULL << 20;
  req.slo_ms = 100;
  req.function_name = "d";
  req.flags = shm::kFlagReRegister;
  req.current_gpu = 0;
  req.previous_client_id = 42;
  auto refused = shm::Register(arb.socket(), req, seconds(10));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("names GPU 0"), std::string::npos)
      << refused.status().ToString();
  EXPECT_EQ(arb.Finish().refusals, 1u);
}

}  // namespace
}  // namespace gshare::arbiter
