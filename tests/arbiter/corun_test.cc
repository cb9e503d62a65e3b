// Unit tests of the arbiter's co-run rules (arbiter/src/corun.h): who holds a GPU (GpuHolders),
// who may join a set (fault domain, MPS clients only, the member limit, GPUs not marked), the
// revocation threshold and the back-offs per GPU and per pair, one uid per MPS server; and the
// corun_* / mps_* config keys with their errors.
#include "corun.h"

#include <gtest/gtest.h>

#include "gshare/arbiter/config.h"

namespace gshare::arbiter {
namespace {

constexpr uint64_t kSec = 1'000'000'000;

CorunMember Member(uint32_t id, uid_t uid, const std::string& name, uint32_t share = 50,
                   gid_t gid = 100) {
  return CorunMember{id, uid, gid, name, share};
}

CorunConfig TwoGpusMarkedOne() {
  CorunConfig c;
  c.gpus = {7};  // ordinal 7: the second managed GPU below
  c.max_members = 3;
  c.backoff = std::chrono::seconds(10);
  c.threat_percent = 80;
  return c;
}

TEST(GpuHolders, HoldsOneOrASet) {
  GpuHolders h;
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(h.Other(1), 0u);
  h.Add(1);
  h.Add(1);  // idempotent
  EXPECT_EQ(h.size(), 1u);
  EXPECT_EQ(h.Other(1), 0u);
  EXPECT_EQ(h.Other(2), 1u);
  h.Add(2);
  EXPECT_TRUE(h.Holds(2));
  EXPECT_EQ(h.Other(1), 2u);
  h.Remove(1);
  EXPECT_FALSE(h.Holds(1));
  EXPECT_EQ(h.ids(), std::vector<uint32_t>{2});
}

TEST(CorunBook, OnlyMarkedGpusOnlyOneUidOnlyMpsClients) {
  CorunBook book(TwoGpusMarkedOne(), {DeviceOrdinal{3}, DeviceOrdinal{7}});
  EXPECT_FALSE(book.Enabled(GpuIndex{0}));
  EXPECT_TRUE(book.Enabled(GpuIndex{1}));
  const auto a = Member(1, 1000, "cnn");
  EXPECT_NE(book.JoinRefusal(GpuIndex{0}, Member(2, 1000, "bert"), {a}, 0).find("corun_gpus"), std::string::npos);
  EXPECT_EQ(book.JoinRefusal(GpuIndex{1}, Member(2, 1000, "bert"), {a}, 0), "");
  // Another uid: another fault domain (the default), never in one set.
  EXPECT_NE(book.JoinRefusal(GpuIndex{1}, Member(2, 1001, "bert"), {a}, 0).find("fault domain"), std::string::npos);
  // A process that came up without MPS (share 0) runs alone, joining or holding.
  EXPECT_NE(book.JoinRefusal(GpuIndex{1}, Member(2, 1000, "bert", 0), {a}, 0).find("not an MPS"), std::string::npos);
  EXPECT_NE(book.JoinRefusal(GpuIndex{1}, Member(2, 1000, "bert"), {Member(1, 1000, "cnn", 0)}, 0).find("not an MPS"),
            std::string::npos);
  // The member limit (3): a third joins, a fourth does not.
  const auto b = Member(2, 1000, "bert");
  EXPECT_EQ(book.JoinRefusal(GpuIndex{1}, Member(3, 1000, "llm"), {a, b}, 0), "");
  EXPECT_NE(book.JoinRefusal(GpuIndex{1}, Member(4, 1000, "x"), {a, b, Member(3, 1000, "llm")}, 0).find("corun_max_members"),
            std::string::npos);
}

TEST(CorunBook, FaultDomainSettingWidensOnPurpose) {
  CorunConfig by_gid = TwoGpusMarkedOne();
  by_gid.fault_domain = CorunFaultDomain::kGid;
  CorunBook gid_book(by_gid, {DeviceOrdinal{3}, DeviceOrdinal{7}});
  EXPECT_EQ(gid_book.JoinRefusal(GpuIndex{1}, Member(2, 1001, "b", 50, 100), {Member(1, 1000, "a", 50, 100)}, 0), "");
  EXPECT_NE(gid_book.JoinRefusal(GpuIndex{1}, Member(2, 1000, "b", 50, 101), {Member(1, 1000, "a", 50, 100)}, 0), "");
  CorunConfig any = TwoGpusMarkedOne();
  any.fault_domain = CorunFaultDomain::kAny;
  CorunBook any_book(any, {DeviceOrdinal{3}, DeviceOrdinal{7}});
  EXPECT_EQ(any_book.JoinRefusal(GpuIndex{1}, Member(2, 2000, "b", 50, 9), {Member(1, 1000, "a", 50, 100)}, 0), "");
}

TEST(CorunBook, RevocationBacksOffTheGpuAndThePair) {
  CorunBook book(TwoGpusMarkedOne(), {DeviceOrdinal{3}, DeviceOrdinal{7}});
  const auto a = Member(1, 1000, "cnn"), b = Member(2, 1000, "bert"), c = Member(3, 1000, "llm");
  book.Revoke(GpuIndex{1}, a, {a, b}, 5 * kSec);
  EXPECT_EQ(book.revocations(), 1u);
  EXPECT_EQ(book.BackoffUntil(GpuIndex{1}), 15 * kSec);
  // The GPU serves exclusive slices during the back-off...
  EXPECT_NE(book.JoinRefusal(GpuIndex{1}, c, {b}, 10 * kSec).find("backs off"), std::string::npos);
  // ...after it, other pairs may form again, but not the revoked pair until its own back-off
  // ends (renewed here by a second revocation of the pair at 12 s).
  book.Revoke(GpuIndex{0}, a, {a, b}, 12 * kSec);  // GPU 0 is not marked: only the pair is remembered
  EXPECT_EQ(book.JoinRefusal(GpuIndex{1}, c, {b}, 16 * kSec), "");
  EXPECT_NE(book.JoinRefusal(GpuIndex{1}, a, {b}, 16 * kSec).find("pair"), std::string::npos);
  EXPECT_EQ(book.JoinRefusal(GpuIndex{1}, a, {b}, 22 * kSec), "");
}

TEST(CorunBook, PairBackOffsStayBoundedWhateverNamesTenantsChoose) {
  // A tenant that registers fresh function names and has its sets revoked over and over: the
  // book remembers only the pairs whose back-off is not over (2 GPUs marked, 3 members a set).
  CorunConfig config = TwoGpusMarkedOne();
  config.gpus = {3, 7};
  CorunBook book(config, {DeviceOrdinal{3}, DeviceOrdinal{7}});
  const uint64_t backoff = static_cast<uint64_t>(config.backoff.count());
  uint64_t now = kSec;
  size_t most = 0;
  for (uint32_t round = 0; round < 1000; ++round) {
    for (uint32_t g = 0; g < 2; ++g) {
      const auto name = [&](uint32_t k) {
        return "f" + std::to_string(round) + "-" + std::to_string(g) + "-" + std::to_string(k);
      };
      const auto v = Member(1, 1000, name(0)), o1 = Member(2, 1000, name(1)),
                 o2 = Member(3, 1000, name(2));
      ASSERT_EQ(book.JoinRefusal(GpuIndex{g}, o2, {v, o1}, now), "");
      book.Revoke(GpuIndex{g}, v, {v, o1, o2}, now);
      most = std::max(most, book.tracked_pairs());
    }
    now += backoff;  // the GPUs may form sets again
  }
  EXPECT_EQ(book.revocations(), 2000u);
  EXPECT_LE(most, 2u * 2u * (config.max_members - 1));
}

// One user per MPS server: a uid other than that of the GPU's MPS clients, or of a share
// answered to another uid moments ago, may not be given an MPS share there, whatever the fault
// domain setting says; the promise to a uid lapses after kShareAnswerHoldNs, and a GPU's promise
// says nothing of another GPU's server.
TEST(CorunBook, OneUidPerMpsServer) {
  for (const CorunFaultDomain domain : {CorunFaultDomain::kUid, CorunFaultDomain::kAny}) {
    CorunConfig config = TwoGpusMarkedOne();
    config.gpus = {3, 7};
    config.fault_domain = domain;
    CorunBook book(config, {DeviceOrdinal{3}, DeviceOrdinal{7}});
    const GpuIndex g{1}, other{0};
    const uint64_t now = kSec;
    EXPECT_EQ(book.ServerRefusal(g, 1000, {}, now), "") << "nobody served yet";
    EXPECT_EQ(book.ServerRefusal(g, 1000, {1000, 1000}, now), "") << "its own uid";
    const std::string why = book.ServerRefusal(g, 2000, {1000}, now);
    EXPECT_NE(why.find("serves uid 1000"), std::string::npos) << why;
    EXPECT_NE(why.find("one uid per server"), std::string::npos) << why;

    // A share answered to uid 1000 stands for its process before it registers.
    book.NoteShareAnswered(g, 1000, now);
    EXPECT_EQ(book.ServerRefusal(g, 1000, {}, now + kSec), "");
    EXPECT_NE(book.ServerRefusal(g, 2000, {}, now + kSec).find("promised to uid 1000"),
              std::string::npos);
    EXPECT_EQ(book.ServerRefusal(other, 2000, {}, now + kSec), "") << "another GPU's server";
    EXPECT_EQ(book.ServerRefusal(g, 2000, {}, now + CorunBook::kShareAnswerHoldNs), "")
        << "the promise lapses";
    EXPECT_NE(book.ServerRefusal(g, 2000, {1000}, now + CorunBook::kShareAnswerHoldNs), "")
        << "but not the registered clients";
  }
}

// The GPU a co-run share was answered for is kept for its process's registration beyond the
// memory hold (a slow cuInit), until it registers (ForgetPromise) or kAnsweredGpuKeepNs passes;
// an answer of "not co-run" names no GPU to register on, and a later answer replaces it.
TEST(CorunBook, TheGpuOfACorunAnswerIsKeptForItsProcessesRegistration) {
  CorunBook book(TwoGpusMarkedOne(), {DeviceOrdinal{0}, DeviceOrdinal{1}});
  const GpuIndex g{1};
  const uint64_t now = kSec;
  book.NotePromise(g, 100, 0, 64, now, /*corun=*/true);
  book.NotePromise(g, 200, 0, 64, now);  // answered "not co-run"
  EXPECT_EQ(book.CorunGpuOf(100, now + CorunBook::kShareAnswerHoldNs + kSec), g);
  EXPECT_EQ(book.PromisedBytes(g, 0, now + CorunBook::kShareAnswerHoldNs), 0u)
      << "its memory is promised only within the hold";
  EXPECT_EQ(book.CorunGpuOf(200, now), std::nullopt);
  EXPECT_EQ(book.CorunGpuOf(300, now), std::nullopt);
  EXPECT_EQ(book.CorunGpuOf(100, now + CorunBook::kAnsweredGpuKeepNs), std::nullopt);
  book.ForgetPromise(100);
  EXPECT_EQ(book.CorunGpuOf(100, now), std::nullopt);
  // Pruned when another query comes after kAnsweredGpuKeepNs (the map stays bounded).
  book.NotePromise(g, 400, 0, 64, now, /*corun=*/true);
  book.NotePromise(g, 500, 0, 64, now + CorunBook::kAnsweredGpuKeepNs, /*corun=*/true);
  EXPECT_EQ(book.CorunGpuOf(400, now), std::nullopt);
  EXPECT_EQ(book.CorunGpuOf(500, now + CorunBook::kAnsweredGpuKeepNs), g);
}

TEST(CorunConfig, KeysParseAndBadValuesNameTheKey) {
  auto r = ParseConfigToml(
      "corun_gpus = [0, 1]\ncorun_fault_domain = \"gid\"\ncorun_max_members = 8\n"
      "corun_backoff = \"5s\"\ncorun_threat = 75\nmps_control = \"simcuda-mps-control\"\n"
      "mps_dir = \"/run/x\"\n",
      ArbiterConfig{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->corun.gpus, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(r->corun.fault_domain, CorunFaultDomain::kGid);
  EXPECT_EQ(r->corun.max_members, 8u);
  EXPECT_EQ(r->corun.backoff, std::chrono::seconds(5));
  EXPECT_EQ(r->corun.threat_percent, 75u);
  EXPECT_EQ(r->corun.mps_control, "simcuda-mps-control");
  EXPECT_EQ(r->corun.mps_dir, "/run/x");
  EXPECT_TRUE(ArbiterConfig{}.corun.gpus.empty());  // off by default
  const std::pair<const char*, const char*> bad[] = {
      {"corun_gpus = [0, 0]", "corun_gpus"},
      {"corun_gpus = [-1]", "corun_gpus"},
      {"corun_fault_domain = \"everyone\"", "corun_fault_domain"},
      {"corun_max_members = 1", "corun_max_members"},
      {"corun_max_members = 49", "corun_max_members"},
      {"corun_threat = 5", "corun_threat"},
      {"corun_backoff = \"soon\"", "corun_backoff"},
      {"mps_dir = \"relative\"", "mps_dir"},
      // Its pipe directories travel in share answers, which carry printable ASCII only.
      {"mps_dir = \"/run/gshare-mp\u00e9s\"", "mps_dir"},
      {"mps_dir = \"/run/a\\tb\"", "mps_dir"},
  };
  for (const auto& [text, key] : bad) {
    auto e = ParseConfigToml(text, ArbiterConfig{});
    EXPECT_FALSE(e.ok()) << text;
    EXPECT_NE(e.status().message().find(key), std::string::npos)
        << text << ": " << e.status().message();
  }
  const char* argv[] = {"gshare-arbiter", "--corun-fault-domain", "nobody"};
  auto cl = ParseCommandLine(3, argv);
  EXPECT_NE(cl.status().message().find("--corun-fault-domain"), std::string::npos)
      << cl.status().message();
}

// An MPS client's context memory (docs/arbiter.md, "MPS context memory"): floor + (at 100% -
// floor) x share, rounded up to a MiB, 0 for a process that is no MPS client; the defaults at or
// above every share measured on the H200; a floor above the 100% figure is an error naming both.
TEST(CorunConfig, MpsContextMemoryModelAndItsSettings) {
  constexpr uint64_t kMiB = 1ULL << 20;
  const CorunConfig defaults;
  EXPECT_EQ(MpsContextBytes(defaults, 0), 0u);
  // H200, 2026-12-04: 144.8 / 274.8 / 390.8 / 516.8 MiB at 25 / 50 / 75 / 100%.
  const std::pair<uint32_t, double> h200[] = {{25, 144.8}, {50, 274.8}, {75, 390.8}, {100, 516.8}};
  for (const auto& [share, measured] : h200)
    EXPECT_GE(static_cast<double>(MpsContextBytes(defaults, share)), measured * kMiB) << share;
  CorunConfig c;
  c.mps_context_bytes = 264 * kMiB;
  c.mps_context_floor_bytes = 2 * kMiB;
  EXPECT_EQ(MpsContextBytes(c, 50), 133 * kMiB);
  EXPECT_EQ(MpsContextBytes(c, 100), 264 * kMiB);
  EXPECT_EQ(MpsContextBytes(c, 250), 264 * kMiB);  // past 100% counts as 100%
  EXPECT_EQ(MpsContextBytes(c, 1), 5 * kMiB);      // 2 + 2.62, rounded up
  c.mps_context_bytes = c.mps_context_floor_bytes = 0;
  EXPECT_EQ(MpsContextBytes(c, 100), 0u);  // not counted

  auto r = ParseConfigToml("mps_context_memory = \"300MiB\"\nmps_context_floor = \"10MiB\"",
                           ArbiterConfig{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->corun.mps_context_bytes, 300 * kMiB);
  EXPECT_EQ(r->corun.mps_context_floor_bytes, 10 * kMiB);
  for (const auto& [text, key] :
       {std::pair{"mps_context_memory = \"lots\"", "mps_context_memory"},
        std::pair{"mps_context_floor = \"-1MiB\"", "mps_context_floor"},
        std::pair{"mps_context_memory = \"65GiB\"", "mps_context_memory"}}) {
    auto e = ParseConfigToml(text, ArbiterConfig{});
    EXPECT_FALSE(e.ok()) << text;
    EXPECT_NE(e.status().message().find(key), std::string::npos) << e.status().message();
  }
  const char* argv[] = {"gshare-arbiter", "--mps-context-memory", "100MiB", "--mps-context-floor",
                        "200MiB"};
  auto cl = ParseCommandLine(5, argv);
  ASSERT_FALSE(cl.ok());
  EXPECT_NE(cl.status().message().find("mps_context_floor: 200 MiB exceeds mps_context_memory"),
            std::string::npos)
      << cl.status().message();
}

// mps_swaps_verified (true|false, default false): a TOML boolean or the same words as a string,
// the flag --mps-swaps-verified; anything else is an error naming the setting.
TEST(CorunConfig, MpsTerminationCapParsesAndBadValuesNameTheSetting) {
  EXPECT_EQ(ArbiterConfig{}.mps_terminations_per_uid, 4u);
  EXPECT_EQ(ArbiterConfig{}.mps_termination_window, std::chrono::seconds(60));
  auto r = ParseConfigToml("mps_terminations_per_uid = 0\nmps_termination_window = \"5min\"",
                           ArbiterConfig{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->mps_terminations_per_uid, 0u);
  EXPECT_EQ(r->mps_termination_window, std::chrono::minutes(5));
  const std::pair<const char*, const char*> bad[] = {
      {"mps_terminations_per_uid = -1", "mps_terminations_per_uid"},
      {"mps_terminations_per_uid = 10001", "mps_terminations_per_uid"},
      {"mps_terminations_per_uid = \"many\"", "mps_terminations_per_uid"},
      {"mps_termination_window = \"0s\"", "mps_termination_window"},
      {"mps_termination_window = \"25h\"", "mps_termination_window"},
      {"mps_termination_window = \"soon\"", "mps_termination_window"}};
  for (const auto& [text, key] : bad) {
    auto e = ParseConfigToml(text, ArbiterConfig{});
    ASSERT_FALSE(e.ok()) << text;
    EXPECT_NE(e.status().message().find(std::string("config key '") + key + "'"), std::string::npos)
        << text << ": " << e.status().message();
  }
  const char* flag[] = {"gshare-arbiter", "--mps-terminations-per-uid", "x"};
  auto cl = ParseCommandLine(3, flag);
  ASSERT_FALSE(cl.ok());
  EXPECT_NE(cl.status().message().find("--mps-terminations-per-uid"), std::string::npos)
      << cl.status().message();
}

TEST(CorunConfig, MpsSwapsVerifiedParsesAndBadValuesNameTheSetting) {
  EXPECT_FALSE(ArbiterConfig{}.corun.mps_swaps_verified);
  const std::pair<const char*, bool> good[] = {{"mps_swaps_verified = true", true},
                                               {"mps_swaps_verified = false", false},
                                               {"mps_swaps_verified = \"true\"", true},
                                               {"[arbiter]\nmps_swaps_verified = true", true}};
  for (const auto& [text, want] : good) {
    auto r = ParseConfigToml(text, ArbiterConfig{});
    ASSERT_TRUE(r.ok()) << text << ": " << r.status().message();
    EXPECT_EQ(r->corun.mps_swaps_verified, want) << text;
  }
  for (const char* text : {"mps_swaps_verified = \"yes\"", "mps_swaps_verified = 1",
                           "mps_swaps_verified = \"\"", "mps_swaps_verified = \"True\"",
                           "mps_swaps_verified = [true]"}) {
    auto e = ParseConfigToml(text, ArbiterConfig{});
    ASSERT_FALSE(e.ok()) << text;
    EXPECT_NE(e.status().message().find("config key 'mps_swaps_verified'"), std::string::npos)
        << text << ": " << e.status().message();
  }
  auto bad = ParseConfigToml("mps_swaps_verified = \"yes\"", ArbiterConfig{});
  EXPECT_NE(bad.status().message().find("'yes' is neither 'true' nor 'false'"), std::string::npos)
      << bad.status().message();

  const char* on[] = {"gshare-arbiter", "--mps-swaps-verified", "true"};
  auto cl = ParseCommandLine(3, on);
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_TRUE(cl->config.corun.mps_swaps_verified);
  const char* none[] = {"gshare-arbiter"};
  cl = ParseCommandLine(1, none);
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_FALSE(cl->config.corun.mps_swaps_verified);
  const char* maybe[] = {"gshare-arbiter", "--mps-swaps-verified", "maybe"};
  cl = ParseCommandLine(3, maybe);
  ASSERT_FALSE(cl.ok());
  EXPECT_NE(cl.status().message().find("--mps-swaps-verified"), std::string::npos)
      << cl.status().message();
  EXPECT_NE(cl.status().message().find("neither 'true' nor 'false'"), std::string::npos)
      << cl.status().message();
}

}  // namespace
}  // namespace gshare::arbiter
