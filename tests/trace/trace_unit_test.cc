// Unit tests of gshare-trace's library (tools/trace): the trace-event format checker rejects
// every kind of malformed trace; records written into a real (anonymous) event ring become the
// expected holds, waits, swaps, bursts with SLO-miss causes and counters; the JSON always
// passes the checker (also for random record sequences and rings that lost records); the
// summary reads the figures back.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gshare/shm/event_ring.h"
#include "gshare/shm/futex.h"
#include "gshare/trace/capture.h"
#include "gshare/trace/chrome_json.h"
#include "gshare/trace/summary.h"
#include "gshare/trace/timeline.h"
#include "gshare/trace/validate.h"

namespace gshare::trace {
namespace {

using nlohmann::json;
using shm::EventType;

constexpr uint64_t kMs = 1'000'000;

// ---- the checker

json Valid() {
  return json::parse(R"({"traceEvents": [
    {"ph": "M", "name": "process_name", "pid": 1, "tid": 1, "args": {"name": "GPU 0"}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "token"}},
    {"ph": "X", "name": "outer", "pid": 1, "tid": 2, "ts": 0, "dur": 10},
    {"ph": "X", "name": "inner", "pid": 1, "tid": 2, "ts": 2, "dur": 3},
    {"ph": "X", "name": "next", "pid": 1, "tid": 2, "ts": 10, "dur": 1.5},
    {"ph": "X", "name": "other thread", "pid": 1, "tid": 3, "ts": 5, "dur": 10},
    {"ph": "B", "name": "b", "pid": 2, "tid": 7, "ts": 1},
    {"ph": "B", "name": "c", "pid": 2, "tid": 7, "ts": 2},
    {"ph": "E", "pid": 2, "tid": 7, "ts": 3},
    {"ph": "E", "name": "b", "pid": 2, "tid": 7, "ts": 4},
    {"ph": "C", "name": "resident", "pid": 1, "ts": 3, "args": {"bytes": 1024}},
    {"ph": "i", "name": "preempt", "s": "t", "pid": 1, "tid": 2, "ts": 4}
  ], "displayTimeUnit": "ms"})");
}

TEST(ValidateTest, AcceptsAWellFormedTrace) {
  const Validation v = ValidateTraceJson(Valid());
  EXPECT_TRUE(v.ok()) << (v.errors.empty() ? "" : v.errors.front());
  EXPECT_EQ(v.phases.at("X"), 4u);
  EXPECT_TRUE(ValidateTraceJson(Valid()["traceEvents"]).ok()) << "the JSON Array Format too";
}

// Each mutation of the valid trace must be rejected, with a message naming the problem.
TEST(ValidateTest, RejectsEachKindOfMalformedTrace) {
  struct Case {
    const char* what;
    std::function<void(json&)> mutate;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"not a trace", [](json& t) { t = json::object(); }, "traceEvents"},
      {"bad time unit", [](json& t) { t["displayTimeUnit"] = "s"; }, "displayTimeUnit"},
      {"no ph", [](json& t) { t["traceEvents"][2].erase("ph"); }, "ph"},
      {"unknown ph", [](json& t) { t["traceEvents"][2]["ph"] = "Q"; }, "unknown phase"},
      {"no name", [](json& t) { t["traceEvents"][2].erase("name"); }, "missing name"},
      {"string pid", [](json& t) { t["traceEvents"][2]["pid"] = "1"; }, "pid must be an integer"},
      {"fractional tid", [](json& t) { t["traceEvents"][2]["tid"] = 2.5; }, "tid must be an integer"},
      {"no tid on X", [](json& t) { t["traceEvents"][2].erase("tid"); }, "missing tid"},
      {"negative ts", [](json& t) { t["traceEvents"][2]["ts"] = -1; }, "ts must be"},
      {"string ts", [](json& t) { t["traceEvents"][2]["ts"] = "0"; }, "ts must be"},
      {"X without dur", [](json& t) { t["traceEvents"][4].erase("dur"); }, "missing dur"},
      {"partial overlap", [](json& t) { t["traceEvents"][3]["dur"] = 9; }, "partially overlaps"},
      {"E without B", [](json& t) { t["traceEvents"][6]["ph"] = "X", t["traceEvents"][6]["dur"] = 5; },
       "E without a matching B"},
      {"E closes the wrong B", [](json& t) { t["traceEvents"][8]["name"] = "b"; }, "closes B"},
      {"B never closed", [](json& t) { t["traceEvents"].erase(9); }, "never closed"},
      {"counter not numeric", [](json& t) { t["traceEvents"][10]["args"]["bytes"] = "1k"; }, "not a number"},
      {"counter without args", [](json& t) { t["traceEvents"][10].erase("args"); }, "non-empty args"},
      {"bad instant scope", [](json& t) { t["traceEvents"][11]["s"] = "x"; }, "scope"},
      {"thread_name without a name", [](json& t) { t["traceEvents"][1]["args"] = json::object(); },
       "args.name"},
      {"unknown metadata", [](json& t) { t["traceEvents"][0]["name"] = "process_colour"; }, "unknown metadata"},
      {"args not an object", [](json& t) { t["traceEvents"][2]["args"] = 3; }, "args must be an object"},
  };
  for (const Case& c : cases) {
    json t = Valid();
    c.mutate(t);
    const Validation v = ValidateTraceJson(t);
    EXPECT_FALSE(v.ok()) << c.what;
    bool named = false;
    for (const auto& e : v.errors) named |= e.find(c.message) != std::string::npos;
    EXPECT_TRUE(named) << c.what << ": " << (v.errors.empty() ? "(no message)" : v.errors.front());
  }
}

// ---- ring -> timeline -> JSON

class RingScript {
 public:
  explicit RingScript(uint64_t capacity = 1024)
      : writer_(std::move(shm::EventRingWriter::CreateAnonymous(capacity, 1).value())) {}
  shm::EventRingReader Reader() {
    return std::move(shm::EventRingReader::Attach(shm::UniqueFd(::dup(writer_.fd()))).value());
  }
  uint64_t written() const { return writer_.written(); }
  void Add(uint64_t ts_ms, EventType type, uint32_t client, uint32_t gpu, std::array<uint64_t, 4> args = {}) {
    shm::Event e;
    e.timestamp_ns = base_ + ts_ms * kMs;
    e.type = type;
    e.client_id = client;
    e.gpu = gpu;
    e.args = args;
    writer_.Append(e);
  }
  void Register(uint64_t ts_ms, uint32_t client, const std::string& name, uint32_t slo_ms, uint64_t pid) {
    Add(ts_ms, EventType::kRegister, client, 0, {256ull << 20, slo_ms, pid, 1000});
    Add(ts_ms, EventType::kClientName, client, 0, shm::PackEventName(name));
  }
  uint64_t At(uint64_t ms) const { return base_ + ms * kMs; }
  Timeline Build(uint64_t end_ms) {
    shm::EventRingReader reader = Reader();
    Capture c = CaptureAll(reader);
    return BuildTimeline(c.context, c.events, base_, At(end_ms), c.lost);
  }

 private:
  shm::EventRingWriter writer_;
  uint64_t base_ = 1'000 * kMs;
};

const Slice* Find(const Timeline& t, SliceKind kind, uint32_t client, size_t nth = 0) {
  for (const Slice& s : t.slices)
    if (s.kind == kind && s.client == client && nth-- == 0) return &s;
  return nullptr;
}

// Client 1 ("fast", SLO 50 ms): a burst that waits 10 ms and runs 5 ms (no miss), then one that
// waits 60 ms for the token (queueing miss). Client 2 ("swapper", SLO 20 ms): a burst that waits
// for a 30 ms swap-in (swap miss), then one that runs 25 ms itself (execution miss).
void Scenario(RingScript& r) {
  r.Register(0, 1, "fast", 50, 4242);
  r.Add(0, EventType::kReservation, 1, 0, {256ull << 20, 256ull << 20});
  r.Register(1, 2, "swapper", 20, 4343);
  r.Add(1, EventType::kSwapOutBegin, 2, 0, {1, 256ull << 20});
  r.Add(2, EventType::kSwapOutEnd, 2, 0, {1, 0, 1 * kMs, 0});
  // fast, burst 1: 10..25
  r.Add(10, EventType::kBurstStart, 1, kNoGpu, {r.At(10)});
  r.Add(20, EventType::kGrant, 1, 0, {1, r.At(25)});
  r.Add(25, EventType::kYield, 1, 0, {1, 5 * kMs});
  r.Add(25, EventType::kBurstEnd, 1, 0, {r.At(25), 5 * kMs});
  // swapper, burst 1: 30..70 with a swap-in 32..62, held 62..70
  r.Add(30, EventType::kBurstStart, 2, kNoGpu, {r.At(30)});
  r.Add(32, EventType::kSwapInBegin, 2, 0, {2, 256ull << 20});
  r.Add(62, EventType::kSwapInEnd, 2, 0, {2, 100ull << 20, 30 * kMs, 100ull << 20});
  r.Add(62, EventType::kReservation, 2, 0, {512ull << 20, 256ull << 20});
  r.Add(62, EventType::kGrant, 2, 0, {1, r.At(67)});
  r.Add(70, EventType::kYield, 2, 0, {1, 8 * kMs});
  r.Add(70, EventType::kBurstEnd, 2, 0, {r.At(70), 8 * kMs});
  // fast, burst 2: 80..145, waits until 140 (its slice is preempted once in between: 2 waits)
  r.Add(80, EventType::kBurstStart, 1, kNoGpu, {r.At(80)});
  r.Add(100, EventType::kGrant, 1, 0, {2, r.At(105)});
  r.Add(104, EventType::kPreempt, 1, 0, {2});
  r.Add(105, EventType::kYield, 1, 0, {2, 5 * kMs});
  r.Add(140, EventType::kGrant, 1, 0, {3, r.At(145)});
  r.Add(145, EventType::kYield, 1, 0, {3, 5 * kMs});
  r.Add(145, EventType::kBurstEnd, 1, 0, {r.At(145), 10 * kMs});
  // swapper, burst 2: 150..175, held the whole time; an SLO change meanwhile (gshare-ctl
  // set-slo) applies from its next burst on
  r.Add(150, EventType::kBurstStart, 2, kNoGpu, {r.At(150)});
  r.Add(160, EventType::kSloChange, 2, kNoGpu, {500});
  r.Add(150, EventType::kGrant, 2, 0, {2, r.At(155)});
  r.Add(175, EventType::kYield, 2, 0, {2, 25 * kMs});
  r.Add(175, EventType::kBurstEnd, 2, 0, {r.At(175), 25 * kMs});
  // enforcement on swapper (it ignored a preemption), then its restore
  r.Add(180, EventType::kCheckpoint, 2, 0, {0, 0});
  r.Add(180, EventType::kRevoke, 2, 0, {2, 1});
  r.Add(185, EventType::kCheckpoint, 2, 0, {1, 0});
  // a third burst of swapper still running at the end
  r.Add(190, EventType::kBurstStart, 2, kNoGpu, {r.At(190)});
  r.Add(191, EventType::kGrant, 2, 0, {3, r.At(196)});
  r.Add(195, EventType::kUnregister, 1, kNoGpu, {1});  // fast died
}

TEST(TimelineTest, HoldsWaitsSwapsAndBurstCauses) {
  RingScript r;
  Scenario(r);
  const Timeline t = r.Build(200);
  ASSERT_EQ(t.clients.size(), 2u);
  EXPECT_EQ(t.clients.at(1).name, "fast");
  EXPECT_EQ(t.clients.at(2).pid, 4343);
  EXPECT_EQ(t.clients.at(2).slo_ms, 20u);
  EXPECT_EQ(t.gpus, std::vector<uint32_t>{0});
  EXPECT_EQ(t.lost, 0u);

  const Slice* b = Find(t, SliceKind::kBurst, 1, 0);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->end_ns - b->begin_ns, 15 * kMs);
  EXPECT_FALSE(b->miss);
  b = Find(t, SliceKind::kBurst, 1, 1);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->miss);
  EXPECT_EQ(b->cause, "queueing");
  EXPECT_EQ(b->queue_ns, 55 * kMs);
  b = Find(t, SliceKind::kBurst, 2, 0);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->miss);
  EXPECT_EQ(b->cause, "swap");
  EXPECT_EQ(b->swap_ns, 30 * kMs);
  b = Find(t, SliceKind::kBurst, 2, 1);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->cause, "execution");
  EXPECT_EQ(b->slo_ms, 20u);
  b = Find(t, SliceKind::kBurst, 2, 2);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->slo_ms, 500u);
  EXPECT_TRUE(b->unfinished);
  EXPECT_FALSE(b->miss);

  // fast waited 10 ms, then 20 ms, then 35 ms after its preempted slice.
  std::vector<uint64_t> waits;
  for (size_t i = 0; const Slice* w = Find(t, SliceKind::kWait, 1, i); ++i) waits.push_back(w->end_ns - w->begin_ns);
  EXPECT_EQ(waits, (std::vector<uint64_t>{10 * kMs, 20 * kMs, 35 * kMs}));
  const Slice* s = Find(t, SliceKind::kSwapIn, 2);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->bytes, 100ull << 20);
  EXPECT_EQ(s->begin_ns, r.At(32));
  ASSERT_NE(Find(t, SliceKind::kSwapOut, 2), nullptr);
  const Slice* h = Find(t, SliceKind::kHold, 2, 2);
  ASSERT_NE(h, nullptr);
  EXPECT_TRUE(h->unfinished);
  EXPECT_EQ(h->end_ns, r.At(200));

  bool gpu_reserved_512 = false, gpu_resident_100 = false;
  for (const auto& c : t.counters) {
    gpu_reserved_512 |= c.kind == CounterKind::kGpuReserved && c.bytes == 512ull << 20;
    gpu_resident_100 |= c.kind == CounterKind::kGpuResident && c.id == 0 && c.bytes == 100ull << 20;
  }
  EXPECT_TRUE(gpu_reserved_512);
  EXPECT_TRUE(gpu_resident_100);
}

TEST(TimelineTest, EveryUnregisterReasonHasAName) {
  std::set<std::string> names;
  for (uint64_t reason = 0; reason <= 5; ++reason) {
    const std::string name = UnregisterReasonName(reason);
    EXPECT_NE(name, "unknown") << reason;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), 6u);
  EXPECT_STREQ(UnregisterReasonName(6), "unknown");
}

TEST(TimelineTest, JsonIsValidAndTheSummaryReadsItBack) {
  RingScript r;
  Scenario(r);
  const json doc = ToChromeJson(r.Build(200), {"test"});
  const Validation v = ValidateTraceJson(doc);
  ASSERT_TRUE(v.ok()) << v.errors.front();
  EXPECT_GT(v.phases.at("C"), 0u);
  EXPECT_GT(v.phases.at("M"), 0u);
  EXPECT_EQ(v.phases.at("i"), 5u);
  bool died = false;
  for (const auto& e : doc["traceEvents"])
    died |= e["name"] == "unregister" && e["args"]["reason"] == "died" && e["args"]["function"] == "fast";
  EXPECT_TRUE(died);
  // The GPU track shows who held the token, named by function.
  bool gpu_track = false;
  for (const auto& e : doc["traceEvents"])
    gpu_track |= e["ph"] == "X" && e["pid"] == kGpuPidBase && e["name"] == "swapper";
  EXPECT_TRUE(gpu_track);

  auto s = Summarize(doc);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->functions.size(), 2u);
  const FunctionSummary& fast = s->functions[0];
  EXPECT_EQ(fast.name, "fast");
  EXPECT_EQ(fast.bursts, 2u);
  EXPECT_EQ(fast.misses, 1u);
  EXPECT_EQ(fast.miss_causes.at("queueing"), 1u);
  EXPECT_EQ(fast.wait_us.size(), 3u);
  EXPECT_EQ(fast.preemptions, 1u);
  const FunctionSummary& sw = s->functions[1];
  EXPECT_EQ(sw.name, "swapper");
  EXPECT_EQ(sw.bursts, 2u);
  EXPECT_EQ(sw.unfinished, 1u);
  EXPECT_EQ(sw.miss_causes.at("swap"), 1u);
  EXPECT_EQ(sw.miss_causes.at("execution"), 1u);
  EXPECT_EQ(sw.swap_ins, 1u);
  EXPECT_EQ(sw.swap_in_bytes, 100ull << 20);
  EXPECT_DOUBLE_EQ(sw.swap_in_us, 30'000);
  EXPECT_EQ(sw.swap_outs, 1u);
  EXPECT_EQ(sw.revokes, 1u);
  EXPECT_EQ(sw.checkpoints, 1u);
  EXPECT_EQ(sw.restores, 1u);
  const std::string text = FormatSummary(*s);
  EXPECT_NE(text.find("swapper"), std::string::npos) << text;
  EXPECT_NE(text.find("queueing 1, swap 0, execution 0"), std::string::npos) << text;
  EXPECT_NE(text.find("queueing 0, swap 1, execution 1 (1 unfinished at the end); token revoked 1x, "
                      "checkpointed 1x, restored 1x"),
            std::string::npos)
      << text;
  EXPECT_EQ(SummaryJson(*s)["functions"][1]["slo_miss_causes"]["swap"], 1);
  EXPECT_FALSE(Summarize(json::parse(R"({"traceEvents": []})")).ok()) << "not ours";
}

// A ring too small for what was written while a reader was attached: the reader counts what
// it lost, and whatever is left (ends without begins, grants without yields) still renders as a
// valid trace that reports the loss.
TEST(TimelineTest, LostRecordsAreCountedAndTheRestStaysValid) {
  RingScript r(8);
  auto reader = r.Reader();  // attached before anything is written: it expects record 0
  Scenario(r);
  std::vector<shm::Event> events(64);
  events.resize(reader.Read(events));
  EXPECT_EQ(events.size(), 8u);
  EXPECT_EQ(reader.stats().lost, r.written() - 8);
  const Timeline t = BuildTimeline({}, events, r.At(0), r.At(200), reader.stats().lost);
  const json doc = ToChromeJson(t, {});
  const Validation v = ValidateTraceJson(doc);
  EXPECT_TRUE(v.ok()) << v.errors.front();
  EXPECT_EQ(doc["otherData"]["lost_records"], r.written() - 8);
  auto s = Summarize(doc);
  ASSERT_TRUE(s.ok());
  EXPECT_NE(FormatSummary(*s).find("lost (the ring wrapped"), std::string::npos) << FormatSummary(*s);
}

// `record` without --from-start: records already in the ring only say who the clients are
// (context); the window holds what was written after the start; a wrong file is refused.
TEST(CaptureTest, RecordKeepsIdentityFromBeforeTheStartAndEventsAfterIt) {
  char tmpl[] = "/tmp/gshare-trace-capture-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/events";
  auto w = shm::EventRingWriter::CreateFile(path, 64, 5, 0600);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  auto add = [&](EventType type, std::array<uint64_t, 4> args) {
    shm::Event e;
    e.timestamp_ns = shm::MonotonicNowNs();
    e.type = type;
    e.client_id = 1;
    e.gpu = 0;
    e.args = args;
    w->Append(e);
  };
  add(EventType::kRegister, {1 << 20, 25, 99, 0});
  add(EventType::kClientName, shm::PackEventName("early"));
  add(EventType::kGrant, {1, 0});  // before the window: not in it
  add(EventType::kYield, {1, 10});
  std::atomic<bool> stop{false};
  CaptureOptions o;
  o.ring_path = path;
  o.duration = std::chrono::seconds(120);  // a safety net: the test stops it
  o.poll = std::chrono::milliseconds(1);
  o.stop = &stop;
  o.on_started = [&] {
    add(EventType::kGrant, {2, 0});
    add(EventType::kYield, {2, 10});
    stop.store(true);
  };
  auto c = CaptureRing(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->writer_epoch, 5u);
  EXPECT_EQ(c->lost, 0u);
  ASSERT_EQ(c->events.size(), 2u);
  EXPECT_EQ(c->events[0].args[0], 2u);
  ASSERT_EQ(c->context.size(), 2u);
  const Timeline t = BuildTimeline(c->context, c->events, c->begin_ns, c->end_ns, c->lost);
  EXPECT_EQ(t.clients.at(1).name, "early");
  EXPECT_EQ(t.clients.at(1).slo_ms, 25u);
  size_t holds = 0;
  for (const Slice& s : t.slices) holds += s.kind == SliceKind::kHold;
  EXPECT_EQ(holds, 1u);

  {
    std::ofstream(std::string(tmpl) + "/junk") << "not a ring";
  }
  CaptureOptions bad;
  bad.ring_path = std::string(tmpl) + "/junk";
  EXPECT_EQ(CaptureRing(bad).status().code(), shm::StatusCode::kMalformed);
  std::filesystem::remove_all(tmpl);
}

// Random record sequences (any order, any client, missing halves) always give a valid trace.
TEST(TimelineTest, RandomRecordSequencesAlwaysGiveValidJson) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<shm::Event> events;
    uint64_t ts = 5 * kMs;
    const int n = static_cast<int>(rng() % 80);
    for (int i = 0; i < n; ++i) {
      shm::Event e;
      ts += rng() % (3 * kMs);
      e.timestamp_ns = ts;
      e.type = static_cast<EventType>(1 + rng() % shm::kMaxEventType);
      e.client_id = static_cast<uint32_t>(rng() % 4);
      e.gpu = rng() % 5 == 0 ? kNoGpu : static_cast<uint32_t>(rng() % 2);
      for (auto& a : e.args) a = rng() % 3 == 0 ? ts - rng() % (10 * kMs) : rng() % (64 * kMs);
      events.push_back(e);
    }
    const Timeline t = BuildTimeline({}, events, 4 * kMs, ts + kMs, 0);
    const Validation v = ValidateTraceJson(ToChromeJson(t, {}));
    ASSERT_TRUE(v.ok()) << "round " << round << ": " << v.errors.front();
  }
}

TEST(EventNameTest, PacksUpTo32BytesAndRoundTrips) {
  EXPECT_EQ(shm::UnpackEventName(shm::PackEventName("resnet50")), "resnet50");
  EXPECT_EQ(shm::UnpackEventName(shm::PackEventName("")), "");
  const std::string long_name(40, 'x');
  EXPECT_EQ(shm::UnpackEventName(shm::PackEventName(long_name)), std::string(32, 'x'));
}

TEST(SummaryTest, NearestRankPercentile) {
  EXPECT_EQ(Percentile({}, 50), 0);
  EXPECT_EQ(Percentile({3, 1, 2}, 50), 2);
  EXPECT_EQ(Percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99), 10);
  EXPECT_EQ(Percentile({5}, 0), 5);
}

}  // namespace
}  // namespace gshare::trace
