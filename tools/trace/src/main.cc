// gshare-trace: records the arbiter's node event ring into Chrome/Perfetto trace-event JSON
// (record, dump), prints per-function figures of such a trace (summary) and checks a trace
// against the trace-event format (validate). See docs/tracing.md.
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "fmt/format.h"
#include "gshare/common/units.h"
#include "gshare/trace/capture.h"
#include "gshare/trace/chrome_json.h"
#include "gshare/trace/summary.h"
#include "gshare/trace/timeline.h"
#include "gshare/trace/validate.h"

namespace {

using namespace gshare;
using nlohmann::json;

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop.store(true); }

bool WriteOut(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text;
    return static_cast<bool>(std::cout.flush());
  }
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) std::fprintf(stderr, "gshare-trace: cannot write '%s'\n", path.c_str());
  return static_cast<bool>(out);
}

bool ReadJson(const std::string& path, json* out) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "gshare-trace: cannot open '%s'\n", path.c_str());
    return false;
  }
  *out = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (out->is_discarded()) {
    std::fprintf(stderr, "gshare-trace: '%s' is not JSON\n", path.c_str());
    return false;
  }
  return true;
}

int Record(trace::CaptureOptions options, const std::string& out_path) {
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  options.stop = &g_stop;
  if (options.duration.count() > 0) {
    options.on_started = [&] {
      std::fprintf(stderr, "gshare-trace: recording %s for %.1f s (Ctrl-C ends it early)\n", options.ring_path.c_str(),
                   static_cast<double>(options.duration.count()) / 1e9);
    };
  }
  auto capture = trace::CaptureRing(options);
  if (!capture.ok()) {
    std::fprintf(stderr, "gshare-trace: %s\n", capture.status().ToString().c_str());
    return 1;
  }
  const trace::Timeline t = trace::BuildTimeline(capture->context, capture->events, capture->begin_ns,
                                                 capture->end_ns, capture->lost);
  const json doc = trace::ToChromeJson(t, {options.ring_path});
  if (!WriteOut(out_path, doc.dump() + "\n")) return 1;
  std::fprintf(stderr, "gshare-trace: %zu records (%llu lost), %zu clients, %zu GPUs -> %s\n",
               capture->events.size(), static_cast<unsigned long long>(capture->lost), t.clients.size(),
               t.gpus.size(), out_path.c_str());
  if (capture->lost > 0)
    std::fprintf(stderr, "gshare-trace: warning: the ring overwrote %llu records before they were read "
                 "(a larger event_ring_capacity keeps more)\n",
                 static_cast<unsigned long long>(capture->lost));
  if (capture->ring_replaced)
    std::fprintf(stderr, "gshare-trace: warning: the arbiter replaced its ring while recording (restart?); "
                 "records after that are not in this trace\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gshare-trace: the arbiter's event ring as a Perfetto trace"};
  app.require_subcommand(1);
  trace::CaptureOptions capture;
  capture.ring_path = "/run/gshare-operator/events";  // the example configuration's
  std::string duration = "10s";
  std::string out_path = "trace.json";

  auto* record = app.add_subcommand("record", "record the ring for a while into trace-event JSON");
  record->add_option("--ring", capture.ring_path, "the arbiter's event ring file (--event-ring)")
      ->capture_default_str();
  record->add_option("--duration", duration, "how long to record, e.g. 10s, 500ms")->capture_default_str();
  record->add_flag("--from-start", capture.from_start, "also keep every record already in the ring");
  record->add_option("-o,--output", out_path, "output file ('-' = stdout)")->capture_default_str();

  auto* dump = app.add_subcommand("dump", "convert what is in the ring now");
  dump->add_option("--ring", capture.ring_path, "the arbiter's event ring file")->capture_default_str();
  dump->add_option("-o,--output", out_path, "output file ('-' = stdout)")->capture_default_str();

  std::string in_path;
  bool as_json = false;
  auto* summary = app.add_subcommand("summary", "per-function waits, swaps and SLO misses of a trace");
  summary->add_option("trace", in_path, "a trace written by gshare-trace")->required();
  summary->add_flag("--json", as_json, "print JSON instead of a table");

  auto* validate = app.add_subcommand("validate", "check a trace against the trace-event format");
  validate->add_option("trace", in_path, "a trace-event JSON file")->required();

  CLI11_PARSE(app, argc, argv);

  if (*record || *dump) {
    if (*record) {
      auto d = ParseDuration(duration);
      if (!d.ok() || d->count() <= 0) {
        std::fprintf(stderr, "gshare-trace: --duration '%s': %s\n", duration.c_str(),
                     d.ok() ? "must be positive" : d.status().message().c_str());
        return 2;
      }
      capture.duration = *d;
    } else {
      capture.from_start = true;
      capture.duration = std::chrono::nanoseconds(0);
    }
    return Record(capture, out_path);
  }
  json doc;
  if (!ReadJson(in_path, &doc)) return 1;
  if (*validate) {
    const trace::Validation v = trace::ValidateTraceJson(doc);
    for (const auto& e : v.errors) std::fprintf(stderr, "%s\n", e.c_str());
    std::string phases;
    for (const auto& [ph, n] : v.phases) phases += fmt::format(" {}={}", ph, n);
    std::printf("%s: %s (%zu problems;%s)\n", in_path.c_str(), v.ok() ? "valid" : "INVALID", v.error_count,
                phases.c_str());
    return v.ok() ? 0 : 1;
  }
  auto s = trace::Summarize(doc);
  if (!s.ok()) {
    std::fprintf(stderr, "gshare-trace: %s: %s\n", in_path.c_str(), s.status().ToString().c_str());
    return 1;
  }
  std::fputs(as_json ? (trace::SummaryJson(*s).dump(2) + "\n").c_str() : trace::FormatSummary(*s).c_str(), stdout);
  return 0;
}
