// Unit tests of StatusViews (arbiter/src/status_views.h): the control socket's status, clients,
// instances and orphans views built from hand-made state, without an arbiter or sockets. Two GPUs
// (ordinals 3 and 5): "a" resident and holding GPU 3's token, "b" swapped out on GPU 5 and
// waiting, a second instance of "a" swapped out, and an orphan of 50 MiB on GPU 5.
#include "status_views.h"

#include <gtest/gtest.h>

namespace gshare::arbiter {
namespace {

using nlohmann::json;

constexpr uint64_t kMiB = 1ULL << 20;
const GpuIndex kG0{0};
const GpuIndex kG1{1};

class StatusViewsTest : public ::testing::Test {
 protected:
  StatusViewsTest() : book_({1024 * kMiB, 1024 * kMiB}) {
    gpus_.push_back(GpuState{DeviceOrdinal{3}, 2048 * kMiB, {}, false});
    gpus_.push_back(GpuState{DeviceOrdinal{5}, 2048 * kMiB, {}, true});
    Client& a = Add(1, "a", 100 * kMiB, kG0);
    EXPECT_TRUE(a.session.ClaimResident().ok());
    EXPECT_TRUE(book_.ReserveClient(1, kG0, a.quota));
    EXPECT_TRUE(a.session.Granted(kG0).ok());
    a.grant_ns = kNow - 2'000'000;  // held for 2 ms
    gpus_[kG0].holders.Add(1);
    Client& b = Add(2, "b", 200 * kMiB, kG1);
    b.burst_outstanding = true;
    b.tel.burst_start_ns = kNow - 7'000'000;  // waiting for 7 ms
    (void)Add(3, "a", 100 * kMiB, kG1);  // a second instance of "a", swapped out
    Orphan o;
    o.id = 9;
    o.client_id = 4;
    o.pid = 4242;
    o.name = "gone";
    o.gpu = kG1;
    o.bytes = 50 * kMiB;
    o.since_ns = kNow - 3'000'000'000;
    book_.AddOrphan(o.id, kG1, o.bytes);
    orphans_.emplace(o.id, std::move(o));
  }
  Client& Add(uint32_t id, const std::string& name, uint64_t quota, GpuIndex g) {
    auto c = std::make_unique<Client>();
    c->id = id;
    c->name = name;
    c->quota = quota;
    c->session = ClientSession(g);
    c->registered_ns = kNow - 1'000'000'000;
    Client& ref = *c;
    clients_.emplace(id, std::move(c));
    return ref;
  }
  StatusViews Views() const {
    return StatusViews(clients_, gpus_, book_, orphans_, corun_, mps_, telemetry_);
  }
  static constexpr uint64_t kNow = 100'000'000'000;
  std::map<uint32_t, std::unique_ptr<Client>> clients_;
  ByGpu<GpuState> gpus_;
  ReservationBook book_;
  std::map<uint32_t, Orphan> orphans_;
  CorunBook corun_;
  MpsDaemons mps_;
  Telemetry telemetry_;
};

TEST_F(StatusViewsTest, StatusShowsEachGpusMemoryHoldersQueueAndTheHeader) {
  const json st = Views().Status(kNow, {77, "aggressive", kNow - 4'000'000'000, {{"grants", 5}}});
  EXPECT_EQ(st["ok"], true);
  EXPECT_EQ(st["epoch"], 77);
  EXPECT_EQ(st["policy"], "aggressive");
  EXPECT_DOUBLE_EQ(st["uptime_s"].get<double>(), 4.0);
  EXPECT_EQ(st["clients"], 3);
  EXPECT_EQ(st["counters"]["grants"], 5);
  ASSERT_EQ(st["gpus"].size(), 2U);
  const json& g0 = st["gpus"][0];
  EXPECT_EQ(g0["gpu"], 3);
  EXPECT_EQ(g0["reserved_bytes"], 100 * kMiB);
  EXPECT_EQ(g0["resident_bytes"], 100 * kMiB);
  EXPECT_EQ(g0["holder"]["function"], "a");
  EXPECT_DOUBLE_EQ(g0["holder"]["held_ms"].get<double>(), 2.0);
  EXPECT_EQ(g0["drained"], false);
  const json& g1 = st["gpus"][1];
  EXPECT_EQ(g1["gpu"], 5);
  EXPECT_EQ(g1["drained"], true);
  EXPECT_EQ(g1["swapped_bytes"], 300 * kMiB);
  EXPECT_EQ(g1["orphaned_bytes"], 50 * kMiB);
  EXPECT_TRUE(g1["holder"].is_null());
  ASSERT_EQ(g1["queue"].size(), 1U);
  EXPECT_EQ(g1["queue"][0]["function"], "b");
  EXPECT_DOUBLE_EQ(g1["queue"][0]["waiting_ms"].get<double>(), 7.0);
  ASSERT_EQ(st["orphans"].size(), 1U);
  EXPECT_EQ(st["orphans"][0]["gpu"], 5);
  EXPECT_EQ(st["orphans"][0]["pid"], 4242);
  EXPECT_DOUBLE_EQ(st["orphans"][0]["since_s_ago"].get<double>(), 3.0);
}

TEST_F(StatusViewsTest, ClientsShowStateAndPhaseByTheSession) {
  const json list = Views().Clients(kNow)["clients"];
  ASSERT_EQ(list.size(), 3U);
  EXPECT_EQ(list[0]["function"], "a");
  EXPECT_EQ(list[0]["state"], "resident");
  EXPECT_EQ(list[0]["holding"], true);
  EXPECT_EQ(list[0]["gpu"], 3);
  EXPECT_EQ(list[1]["state"], "swapped");
  EXPECT_EQ(list[1]["waiting"], true);
  EXPECT_EQ(list[1]["gpu"], 5);
  EXPECT_EQ(list[1]["phase"], PhaseName(Phase::kOut));
}

TEST_F(StatusViewsTest, InstancesListWarmOnesFirst) {
  const json functions = Views().Instances()["functions"];
  ASSERT_EQ(functions.size(), 2U);
  const json& a = functions[0];
  EXPECT_EQ(a["function"], "a");
  EXPECT_EQ(a["total"], 2);
  EXPECT_EQ(a["warm"], 1);
  ASSERT_EQ(a["instances"].size(), 2U);
  EXPECT_EQ(a["instances"][0]["client"], 1);  // resident (warm) before the swapped one
  EXPECT_EQ(a["instances"][0]["warm"], true);
  EXPECT_EQ(a["instances"][1]["client"], 3);
  EXPECT_EQ(a["instances"][1]["warm"], false);
}

}  // namespace
}  // namespace gshare::arbiter
