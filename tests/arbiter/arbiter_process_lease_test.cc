// The sole tenant's lease with real processes (docs/arbiter.md, "The lease"): the real
// gshare-arbiter and arbiter_fake_function processes (the shim's ArbiterClient over a fake GPU
// host). Assertions are on counters and the event ring, never on time: a sole tenant's later
// requests take the lease (no round trip), a second tenant or a swap order revokes it, and
// take-versus-revoke races never leave two functions submitting at once.
#include <algorithm>
#include <deque>
#include <string>
#include <map>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "fake_function_util.h"
#include "test_util.h"

namespace gshare::arbiter::testing {
namespace {

using std::chrono::seconds;

constexpr uint64_t kLeaseTaken = 1;
constexpr uint64_t kLeaseRevoked = 2;
constexpr uint64_t kLeaseRevokeLost = 3;

std::vector<std::string> ArbiterArgs() {
  return {"--gpu-memory", "1GiB", "--libcuda", "/nonexistent/libcuda.so.1"};
}

// Lease records of the ring by what they say, per client.
std::map<uint64_t, std::map<uint32_t, int>> LeaseRecords(const std::vector<shm::Event>& events) {
  std::map<uint64_t, std::map<uint32_t, int>> out;
  for (const auto& e : events)
    if (e.type == shm::EventType::kLease) ++out[e.args[0]][e.client_id];
  return out;
}

// One line per record (µs, type, client, first args): context for a failure.
std::string Describe(const shm::Event& e) {
  return std::to_string(e.timestamp_ns / 1000) + " us type " + std::to_string(static_cast<int>(e.type)) +
         " client " + std::to_string(e.client_id) + " args " + std::to_string(e.args[0]) + "," +
         std::to_string(e.args[1]) + "," + std::to_string(e.args[2]) + "\n";
}

// The records around every preemption and every revocation lost to a take (where a grant nobody
// asked for would come from): context for a failure of the grant count.
std::string AroundLeaseRaces(const std::vector<shm::Event>& events) {
  std::string out;
  for (size_t i = 0; i < events.size(); ++i) {
    const shm::Event& e = events[i];
    const bool race = e.type == shm::EventType::kPreempt ||
                      (e.type == shm::EventType::kLease && e.args[0] == kLeaseRevokeLost);
    if (!race) continue;
    out += "-- around record " + std::to_string(i) + ":\n";
    for (size_t j = i >= 8 ? i - 8 : 0; j < std::min(events.size(), i + 12); ++j) out += Describe(events[j]);
  }
  return out;
}

TEST(ArbiterLease, SoleTenantsLaterRequestsTakeTheLeaseWithoutARoundTrip) {
  TempDir dir;
  ArbiterProcess arb(dir, ArbiterArgs());
  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  // 20 requests 20 ms apart, each released after 300 us of idleness: 20 bursts.
  const Function f = StartFunction(dir, arb, "sole",
                                   {"--quota-mib", "128", "--slo-ms", "50", "--requests", "20",
                                    "--submissions", "4", "--work-us", "1000", "--gap-us",
                                    "20000", "--idle-release-us", "300"});
  ASSERT_EQ(ExitCode(WaitFor(f.pid, Scaled(seconds(60)))), 0)
      << ReadFile(f.out) << ReadFile(arb.log());
  const auto report = LastJsonLine(f.out);
  const auto summary = arb.Stop();
  ASSERT_TRUE(summary.is_object());
  const int takes = report.value("lease_takes", -1);
  const int waited = report.value("waited_grants", -1);
  const int acquisitions = takes + waited;  // one per burst (fewer if a release came late)
  // The first request asks the arbiter; later ones find a lease unless the arbiter had not yet
  // seen the previous release (a loaded machine): most of them must take it.
  // (Under heavy load a release can come after the next request: fewer acquisitions.)
  EXPECT_GE(acquisitions, 2) << ReadFile(f.out);
  EXPECT_GE(takes, 1) << ReadFile(f.out);
  EXPECT_GE(takes, (acquisitions - 1) / 2) << ReadFile(f.out);
  EXPECT_GE(waited, 1);
  EXPECT_EQ(summary.value("lease_takes", -1), takes) << summary.dump();
  EXPECT_EQ(summary.value("grants", -1), acquisitions) << "a take counts as a grant";
  EXPECT_EQ(summary.value("lease_unconfirmed", -1), 0) << "the policy grants a take at once";
  EXPECT_EQ(summary.value("preemptions", -1), 0);
  // The ring shows every take as a grant (args[2] = 1) inside a burst the policy saw end.
  int lease_grants = 0;
  int bursts_started = 0;
  int bursts_ended = 0;
  const auto events = ReadEvents(arb.events());
  for (const auto& e : events) {
    if (e.type == shm::EventType::kGrant && e.args[2] == 1) ++lease_grants;
    if (e.type == shm::EventType::kBurstStart) ++bursts_started;
    if (e.type == shm::EventType::kBurstEnd) ++bursts_ended;
  }
  std::string ring;
  for (const auto& e : events)
    if (e.type != shm::EventType::kReservation && e.type != shm::EventType::kClientName) ring += Describe(e);
  EXPECT_EQ(lease_grants, takes);
  EXPECT_EQ(bursts_started, acquisitions) << ring << ReadFile(f.out);
  EXPECT_EQ(bursts_ended, acquisitions) << ring;
  int ring_takes = 0;
  const auto records = LeaseRecords(events);
  if (records.count(kLeaseTaken) != 0)
    for (const auto& [client, n] : records.at(kLeaseTaken)) ring_takes += n;
  EXPECT_EQ(ring_takes, takes);
}

TEST(ArbiterLease, WithoutTheLeaseEveryRequestWaitsForAGrant) {
  TempDir dir;
  ArbiterProcess arb(dir, ArbiterArgs());
  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  const Function f = StartFunction(dir, arb, "nolease",
                                   {"--quota-mib", "128", "--slo-ms", "50", "--requests", "8",
                                    "--submissions", "2", "--work-us", "500", "--gap-us", "10000",
                                    "--lease", "0"});
  ASSERT_EQ(ExitCode(WaitFor(f.pid, Scaled(seconds(60)))), 0)
      << ReadFile(f.out) << ReadFile(arb.log());
  const auto report = LastJsonLine(f.out);
  const auto summary = arb.Stop();
  const int waited = report.value("waited_grants", -1);
  EXPECT_EQ(report.value("lease_takes", -1), 0);
  EXPECT_GE(waited, 1) << ReadFile(f.out);  // 8 requests (fewer bursts if a release came late)
  EXPECT_EQ(summary.value("grants", -1), waited);
  EXPECT_EQ(summary.value("lease_takes", -1), 0);
  // An offer after each burst; those it did not take were withdrawn when it asked the normal
  // way (the last one stood until it exited).
  EXPECT_GE(summary.value("lease_offers", 0), waited - 1) << summary.dump();
  EXPECT_GE(summary.value("lease_revokes", 0), summary.value("lease_offers", 0) - 1);
}

// "first" runs one request and then idles (a lease offered) for 1.5 s before its second;
// "second" (same quota) arrives meanwhile on the same GPU and runs `second_requests`. Both must
// finish with exclusion and data intact, and the offer must have been withdrawn.
struct ArrivalRun {
  nlohmann::json first_report;
  nlohmann::json summary;
  std::vector<shm::Event> events;
};
ArrivalRun IdleLeaseHolderThenArrival(const std::string& quota_mib, const std::string& second_requests) {
  ArrivalRun run;
  TempDir dir;
  ArbiterProcess arb(dir, ArbiterArgs());
  EXPECT_TRUE(arb.Start()) << ReadFile(arb.log());
  const std::string shared = MakeSharedFile(dir);
  const Function first = StartFunction(dir, arb, "first",
                                       {"--quota-mib", quota_mib, "--slo-ms", "200", "--requests",
                                        "2", "--gap-us", "1500000", "--shared", shared});
  const Function second = StartFunction(dir, arb, "second",
                                        {"--quota-mib", quota_mib, "--slo-ms", "200", "--requests",
                                         second_requests, "--gap-us", "20000", "--start-delay-us",
                                         "400000", "--shared", shared});
  for (const auto* f : {&first, &second})
    EXPECT_EQ(ExitCode(WaitFor(f->pid, Scaled(seconds(60)))), 0)
        << ReadFile(f->out) << ReadFile(arb.log());
  run.first_report = LastJsonLine(first.out);
  run.summary = arb.Stop();
  EXPECT_TRUE(run.summary.is_object());
  EXPECT_GE(run.summary.value("lease_revokes", 0) + run.summary.value("lease_revokes_lost", 0), 1)
      << run.summary.dump() << ReadFile(arb.log());
  run.events = ReadEvents(arb.events());
  return run;
}

TEST(ArbiterLease, SecondTenantRevokesTheLeaseAndGetsTheGpu) {
  const ArrivalRun run = IdleLeaseHolderThenArrival("128", "5");
  // The first client's offer was revoked before the second client's first grant.
  uint32_t first_id = 0;
  for (const auto& e : run.events)
    if (e.type == shm::EventType::kGrant) {
      first_id = e.client_id;
      break;
    }
  ASSERT_NE(first_id, 0U);
  bool revoked = false;
  bool second_granted_after_revoke = false;
  for (const auto& e : run.events) {
    if (e.type == shm::EventType::kLease && e.client_id == first_id &&
        (e.args[0] == kLeaseRevoked || e.args[0] == kLeaseRevokeLost))
      revoked = true;
    if (e.type == shm::EventType::kGrant && e.client_id != first_id) {
      second_granted_after_revoke = revoked;
      break;
    }
  }
  EXPECT_TRUE(second_granted_after_revoke);
}

// Two 768 MiB vGPUs on a 1 GiB GPU: the second can run only after the first (idle, leased) is
// swapped out; the first's second request then needs it swapped back in.
TEST(ArbiterLease, SwapOrderRevokesTheLeaseAndDataSurvives) {
  const ArrivalRun run = IdleLeaseHolderThenArrival("768", "3");
  EXPECT_GE(run.first_report.value("swap_outs", 0), 1) << run.first_report.dump();
  EXPECT_EQ(run.first_report.value("corrupt", -1), 0);
  // Every swap-out of a client that had an offer came after the offer was withdrawn.
  std::set<uint32_t> offered;
  for (const auto& e : run.events) {
    if (e.type == shm::EventType::kLease) {
      if (e.args[0] == 0) {
        offered.insert(e.client_id);
      } else {
        offered.erase(e.client_id);
      }
    }
    if (e.type == shm::EventType::kSwapOutBegin) {
      EXPECT_EQ(offered.count(e.client_id), 0U) << "swap-out beside a standing lease";
    }
  }
}

// A sole tenant that keeps coming back after short idle gaps (a lease offered and taken every
// time) must not starve a function that arrives and needs the GPU (here it needs the tenant
// swapped out first): the newcomer is served while the tenant still has requests to run, not
// after it finished.
TEST(ArbiterLease, TenantThatKeepsRetakingItsLeaseDoesNotStarveANewcomer) {
  TempDir dir;
  ArbiterProcess arb(dir, ArbiterArgs());
  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  const std::string shared = MakeSharedFile(dir);
  const Function tenant = StartFunction(dir, arb, "tenant",
                                        {"--quota-mib", "768", "--slo-ms", "100", "--requests",
                                         "600", "--submissions", "1", "--work-us", "200",
                                         "--gap-us", "500", "--idle-release-us", "200",
                                         "--shared", shared});
  const Function newcomer = StartFunction(dir, arb, "newcomer",
                                          {"--quota-mib", "768", "--slo-ms", "100", "--requests",
                                           "3", "--gap-us", "10000", "--start-delay-us", "150000",
                                           "--shared", shared});
  for (const auto* f : {&tenant, &newcomer})
    EXPECT_EQ(ExitCode(WaitFor(f->pid, Scaled(seconds(90)))), 0)
        << ReadFile(f->out) << ReadFile(arb.log());
  EXPECT_GT(LastJsonLine(tenant.out).value("lease_takes", 0), 0) << ReadFile(tenant.out);
  ASSERT_TRUE(arb.Stop().is_object());
  uint32_t tenant_id = 0;
  uint32_t newcomer_id = 0;
  std::vector<uint32_t> grants;  // client ids in grant order
  for (const auto& e : ReadEvents(arb.events())) {
    if (e.type == shm::EventType::kRegister) (tenant_id == 0 ? tenant_id : newcomer_id) = e.client_id;
    if (e.type == shm::EventType::kGrant) grants.push_back(e.client_id);
  }
  ASSERT_NE(newcomer_id, 0U);
  const auto first_newcomer = std::find(grants.begin(), grants.end(), newcomer_id);
  ASSERT_NE(first_newcomer, grants.end()) << "the newcomer was never granted";
  // The tenant had requests left when the newcomer got in (it was not made to wait them out).
  EXPECT_NE(std::find(first_newcomer, grants.end(), tenant_id), grants.end())
      << "the newcomer was served only after the tenant had finished";
}

// Two 600 MiB functions on one 1 GiB GPU with gaps longer than the idle release and different
// periods (so their phases drift): the one resident is the sole tenant (offered a lease) and
// the other arrives at every moment of that, before, during or after a take, and needs it
// swapped out (revoking the lease): takes and revocations race all the time. Exclusion and
// data are checked at every submission.
TEST(ArbiterLease, TakeVersusRevokeRacesNeverLeaveTwoHolders) {
  TempDir dir;
  ArbiterProcess arb(dir, ArbiterArgs());
  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  const std::string shared = MakeSharedFile(dir);
  std::vector<Function> fns;
  for (const char* gap : {"1500", "1100"})
    fns.push_back(StartFunction(dir, arb, std::string("gap") + gap,
                                {"--quota-mib", "600", "--slo-ms", "100", "--requests", "150",
                                 "--submissions", "1", "--work-us", "150", "--gap-us", gap,
                                 "--idle-release-us", "200", "--shared", shared}));
  int takes = 0;
  int acquisitions = 0;
  for (const auto& f : fns) {
    const int code = ExitCode(WaitFor(f.pid, Scaled(seconds(90))));
    if (code != 0) {  // the last records say what it waited for
      std::string last;
      const std::vector<shm::Event> events = ReadEvents(arb.events());
      for (size_t i = events.size() > 40 ? events.size() - 40 : 0; i < events.size(); ++i)
        last += Describe(events[i]);
      ADD_FAILURE() << f.out << " exited " << code << "\n" << ReadFile(f.out) << last
                    << AroundLeaseRaces(events) << ReadFile(arb.log());
      continue;
    }
    const auto r = LastJsonLine(f.out);
    EXPECT_EQ(r.value("overlaps", -1), 0) << ReadFile(f.out);
    takes += r.value("lease_takes", 0);
    acquisitions += r.value("lease_takes", 0) + r.value("waited_grants", 0);
  }
  const auto summary = arb.Stop();
  ASSERT_TRUE(summary.is_object());
  // Every grant answered one acquisition (a take just before a function exited may go unseen).
  // A grant issued when a swap-in completed used to be taken for released at once (the
  // previous grant's release) and granted again: more grants than acquisitions.
  EXPECT_LE(summary.value("lease_takes", -1), takes);
  EXPECT_GE(summary.value("lease_takes", -1), takes - 2);
  const std::vector<shm::Event> events = ReadEvents(arb.events());
  EXPECT_LE(summary.value("grants", -1), acquisitions)
      << summary.dump() << "\n" << AroundLeaseRaces(events) << ReadFile(fns[0].out) << ReadFile(fns[1].out);
  EXPECT_GE(summary.value("grants", -1), acquisitions - 2) << summary.dump();
  EXPECT_GT(summary.value("lease_offers", 0), 0);
  std::printf("lease stress: %d takes, %d offers, %d revoked, %d revocations lost, %d unconfirmed\n",
              takes, summary.value("lease_offers", 0), summary.value("lease_revokes", 0),
              summary.value("lease_revokes_lost", 0), summary.value("lease_unconfirmed", 0));
  // One holder per GPU in the ring: grants and yields alternate per GPU.
  std::map<uint32_t, uint32_t> holder;
  std::deque<std::string> recent;  // context for a failure
  for (const auto& e : events) {
    recent.push_back(Describe(e));
    if (recent.size() > 16) recent.pop_front();
    if (e.type == shm::EventType::kGrant) {
      std::string context;
      for (const std::string& r : recent) context += r;
      EXPECT_EQ(holder[e.gpu], 0U) << "client " << e.client_id << " granted while client "
                                   << holder[e.gpu] << " holds GPU " << e.gpu << "\n"
                                   << context << ReadFile(arb.log());
      holder[e.gpu] = e.client_id;
    }
    if (e.type == shm::EventType::kYield && holder[e.gpu] == e.client_id) holder[e.gpu] = 0;
    if (e.type == shm::EventType::kRevoke && holder[e.gpu] == e.client_id) holder[e.gpu] = 0;
    if (e.type == shm::EventType::kUnregister)  // a finished function exits holding: reclaimed
      for (auto& [gpu, id] : holder)
        if (id == e.client_id) id = 0;
  }
}

}  // namespace
}  // namespace gshare::arbiter::testing
