// PrometheusText: every metric family has one HELP and one TYPE line followed by its samples;
// histograms have cumulative _bucket{le=...} samples ending with le="+Inf", then _sum and _count.
#include "metrics_text.h"

#include <cstdio>
#include <sstream>

#include "counters.h"

namespace gshare::arbiter {
namespace {

constexpr const char* kPrefix = "gshare_arbiter_";

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

class Writer {
 public:
  void Family(const std::string& name, const char* type, const char* help) {
    o_ << "# HELP " << kPrefix << name << " " << help << "\n# TYPE " << kPrefix << name << " "
       << type << "\n";
  }
  void Sample(const std::string& name, const std::string& labels, const std::string& value) {
    o_ << kPrefix << name;
    if (!labels.empty()) o_ << "{" << labels << "}";
    o_ << " " << value << "\n";
  }
  void Sample(const std::string& name, const std::string& labels, uint64_t value) {
    Sample(name, labels, std::to_string(value));
  }
  void Histogram(const std::string& name, const std::string& labels, const arbiter::Histogram& h) {
    const std::string sep = labels.empty() ? "" : labels + ",";
    for (size_t i = 0; i < arbiter::Histogram::kBounds.size(); ++i)
      Sample(name + "_bucket", sep + "le=\"" + Num(arbiter::Histogram::kBounds[i]) + "\"",
             h.cumulative(i));
    Sample(name + "_bucket", sep + "le=\"+Inf\"", h.count());
    Sample(name + "_sum", labels, Num(h.sum_seconds()));
    Sample(name + "_count", labels, h.count());
  }
  std::string str() const { return o_.str(); }

 private:
  std::ostringstream o_;
};

std::string GpuLabel(uint32_t ordinal) { return "gpu=\"" + std::to_string(ordinal) + "\""; }

// function="...", then namespace="..." and pod="..." when known (an empty label is the same as
// none to Prometheus: series of clients that named no pod keep exactly their old labels).
std::string SeriesLabels(const SeriesKey& key) {
  std::string out = "function=\"" + EscapeLabel(key.function) + "\"";
  if (!key.pod_namespace.empty()) out += ",namespace=\"" + EscapeLabel(key.pod_namespace) + "\"";
  if (!key.pod.empty()) out += ",pod=\"" + EscapeLabel(key.pod) + "\"";
  return out;
}

}  // namespace

std::string EscapeLabel(const std::string& value) {
  std::string out;
  for (char ch : value) {
    if (ch == '\\') {
      out += "\\\\";
    } else if (ch == '"') {
      out += "\\\"";
    } else if (ch == '\n') {
      out += "\\n";
    } else {
      out += ch;
    }
  }
  return out;
}

std::string PrometheusText(const MetricsInput& in) {
  Writer w;
  const ArbiterStats& s = in.stats;
  w.Family("clients", "gauge", "Registered clients.");
  w.Sample("clients", "", in.clients);
  // The counters table (counters.h): rows of one family follow each other.
  std::string family;
  for (const CounterInfo& c : Counters()) {
    if ((c.shown & kShownInMetrics) == 0) continue;
    const std::string name = MetricFamily(c);
    if (name != family) {
      w.Family(name, c.type == CounterType::kCounter ? "counter" : "gauge",
               c.metric_help != nullptr ? c.metric_help : c.help);
      family = name;
    }
    w.Sample(name, c.metric_labels != nullptr ? c.metric_labels : "", s.*c.field);
  }

  // Per-GPU memory.
  auto gpu_gauge = [&](const char* name, const char* help, auto get) {
    w.Family(name, "gauge", help);
    for (size_t i = 0; i < s.gpus.size(); ++i) w.Sample(name, GpuLabel(s.gpus[i].ordinal), get(i));
  };
  const auto gm = [&](size_t i) -> const GpuMetrics& {
    static const GpuMetrics kNone;
    return i < in.gpus.size() ? in.gpus[i] : kNone;
  };
  gpu_gauge("gpu_total_bytes", "GPU memory.", [&](size_t i) { return gm(i).total_bytes; });
  gpu_gauge("gpu_usable_bytes", "GPU memory minus the reserve.",
            [&](size_t i) { return s.gpus[i].usable_bytes; });
  gpu_gauge("gpu_reserved_bytes", "Memory reserved by resident vGPUs.",
            [&](size_t i) { return s.gpus[i].reserved_bytes; });
  gpu_gauge("gpu_peak_reserved_bytes", "Most memory ever reserved at once.",
            [&](size_t i) { return s.gpus[i].peak_reserved_bytes; });
  gpu_gauge("gpu_orphaned_bytes",
            "Part of the reserved memory held by live processes the arbiter disconnected.",
            [&](size_t i) { return s.gpus[i].orphaned_bytes; });
  gpu_gauge("gpu_mps_context_bytes",
            "Part of the reserved memory held by the contexts of the GPU's MPS clients.",
            [&](size_t i) { return s.gpus[i].mps_context_bytes; });
  gpu_gauge("gpu_orphans", "Orphan reservations on the GPU.",
            [&](size_t i) { return uint64_t{s.gpus[i].orphans}; });
  gpu_gauge("gpu_resident_bytes", "Quotas of the vGPUs resident on the GPU.",
            [&](size_t i) { return gm(i).resident_bytes; });
  gpu_gauge("gpu_swapped_bytes", "Quotas of the vGPUs swapped out of the GPU to host memory.",
            [&](size_t i) { return gm(i).swapped_bytes; });
  gpu_gauge("gpu_resident_clients", "vGPUs resident on the GPU.",
            [&](size_t i) { return uint64_t{gm(i).resident_clients}; });
  gpu_gauge("gpu_queue_length", "Clients waiting for the GPU's token.",
            [&](size_t i) { return uint64_t{gm(i).queued}; });
  gpu_gauge("gpu_token_held", "1 while a client holds the GPU's token.",
            [&](size_t i) { return uint64_t{gm(i).holder ? 1U : 0U}; });
  gpu_gauge("gpu_drained", "1 while the GPU is drained (gshare-ctl drain).",
            [&](size_t i) { return uint64_t{gm(i).drained ? 1U : 0U}; });

  // Instances of each function now, warm (memory on its GPU) or not: for a platform's router.
  w.Family("function_instances", "gauge",
           "Instances (registered clients) of the function, by whether they are warm (resident).");
  for (const auto& [key, n] : in.instances) {
    const std::string fn = SeriesLabels(key);
    w.Sample("function_instances", fn + ",warm=\"true\"", n.warm);
    w.Sample("function_instances", fn + ",warm=\"false\"", n.total - n.warm);
  }

  const Telemetry* t = in.telemetry;
  if (t == nullptr) return w.str();
  auto tg = [&](size_t i) -> const GpuTelemetry& {  // i: a position in s.gpus, a GPU index
    static const GpuTelemetry kNone;
    const GpuIndex g{static_cast<uint32_t>(i)};
    return t->gpus.contains(g) ? t->gpus[g] : kNone;
  };
  auto gpu_counter = [&](const char* name, const char* help, auto get) {
    w.Family(name, "counter", help);
    for (size_t i = 0; i < s.gpus.size(); ++i) w.Sample(name, GpuLabel(s.gpus[i].ordinal), get(i));
  };
  gpu_counter("gpu_handoffs_total", "Token hand-offs (grants) on the GPU.",
              [&](size_t i) { return tg(i).handoffs; });
  gpu_counter("gpu_slices_expired_total",
              "Token releases with work left (slice end or preemption honoured).",
              [&](size_t i) { return tg(i).slices_expired; });
  w.Family("gpu_busy_seconds_total", "counter", "Time the GPU's token was held (finished holds).");
  for (size_t i = 0; i < s.gpus.size(); ++i)
    w.Sample("gpu_busy_seconds_total", GpuLabel(s.gpus[i].ordinal),
             Num(static_cast<double>(tg(i).held_ns) / 1e9));
  const char* dirs[] = {"in", "out"};
  w.Family("gpu_swaps_total", "counter", "Acknowledged swaps by direction.");
  for (size_t i = 0; i < s.gpus.size(); ++i)
    for (size_t d = 0; d < 2; ++d)
      w.Sample("gpu_swaps_total", GpuLabel(s.gpus[i].ordinal) + ",direction=\"" + dirs[d] + "\"",
               tg(i).swaps[d]);
  w.Family("gpu_swap_bytes_total", "counter", "Bytes moved by acknowledged swaps by direction.");
  for (size_t i = 0; i < s.gpus.size(); ++i)
    for (size_t d = 0; d < 2; ++d)
      w.Sample("gpu_swap_bytes_total",
               GpuLabel(s.gpus[i].ordinal) + ",direction=\"" + dirs[d] + "\"", tg(i).swap_bytes[d]);
  w.Family("swap_duration_seconds", "histogram", "Time of one swap as the client measured it.");
  for (size_t i = 0; i < s.gpus.size(); ++i)
    for (size_t d = 0; d < 2; ++d)
      w.Histogram("swap_duration_seconds",
                  GpuLabel(s.gpus[i].ordinal) + ",direction=\"" + dirs[d] + "\"", tg(i).swap_time[d]);

  // Per function.
  auto fn_label = [](const SeriesKey& key) { return SeriesLabels(key); };
  w.Family("function_requests_total", "counter", "Requests (bursts) completed by the function.");
  for (const auto& [name, f] : t->functions) w.Sample("function_requests_total", fn_label(name), f.bursts);
  w.Family("function_slo_met_total", "counter", "Requests completed within the function's SLO.");
  for (const auto& [name, f] : t->functions) w.Sample("function_slo_met_total", fn_label(name), f.slo_met);
  w.Family("function_slo_missed_total", "counter", "Requests that missed the function's SLO.");
  for (const auto& [name, f] : t->functions)
    w.Sample("function_slo_missed_total", fn_label(name), f.slo_missed);
  w.Family("function_slo_attainment", "gauge",
           "Fraction of the function's requests within its SLO so far (1 before any).");
  for (const auto& [name, f] : t->functions) {
    const uint64_t judged = f.slo_met + f.slo_missed;
    w.Sample("function_slo_attainment", fn_label(name),
             Num(judged == 0 ? 1.0 : static_cast<double>(f.slo_met) / static_cast<double>(judged)));
  }
  w.Family("burst_duration_seconds", "histogram",
           "Request latency: burst start to burst end, waits included.");
  for (const auto& [name, f] : t->functions) w.Histogram("burst_duration_seconds", fn_label(name), f.burst);
  w.Family("token_wait_seconds", "histogram", "Burst start to its first grant, per completed request.");
  for (const auto& [name, f] : t->functions) w.Histogram("token_wait_seconds", fn_label(name), f.wait);
  return w.str();
}

}  // namespace gshare::arbiter
