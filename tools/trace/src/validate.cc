// ValidateTraceJson: per-event field checks, then per-thread nesting of B/E and X events.
#include "gshare/trace/validate.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

namespace gshare::trace {
namespace {

using nlohmann::json;

class Checker {
 public:
  explicit Checker(size_t max_errors) : max_(max_errors) {}

  void Error(size_t index, const std::string& what) {
    ++v_.error_count;
    if (v_.errors.size() < max_) v_.errors.push_back("event " + std::to_string(index) + ": " + what);
  }
  void TopError(const std::string& what) {
    ++v_.error_count;
    if (v_.errors.size() < max_) v_.errors.push_back(what);
  }

  void Event(size_t i, const json& e);
  void Nesting();
  Validation Take() { return std::move(v_); }

 private:
  struct Timed {
    double ts;
    double dur;  // X only
    char ph;     // 'B', 'E', 'X'
    size_t index;
    std::string name;
  };
  bool Integer(size_t i, const json& e, const char* key, bool required) {
    if (!e.contains(key)) {
      if (required) Error(i, std::string("missing ") + key);
      return false;
    }
    if (!e[key].is_number_integer()) {
      Error(i, std::string(key) + " must be an integer");
      return false;
    }
    return true;
  }
  bool Time(size_t i, const json& e, const char* key) {
    if (!e.contains(key)) {
      Error(i, std::string("missing ") + key);
      return false;
    }
    if (!e[key].is_number() || !std::isfinite(e[key].get<double>()) || e[key].get<double>() < 0) {
      Error(i, std::string(key) + " must be a finite number >= 0 (microseconds)");
      return false;
    }
    return true;
  }
  void Metadata(size_t i, const json& e);

  size_t max_;
  Validation v_;
  std::map<std::pair<int64_t, int64_t>, std::vector<Timed>> tracks_;
};

void Checker::Metadata(size_t i, const json& e) {
  static const std::set<std::string> kNames = {"process_name", "process_labels", "process_sort_index",
                                               "thread_name", "thread_sort_index"};
  const std::string name = e["name"].get<std::string>();
  if (kNames.count(name) == 0) return Error(i, "unknown metadata name '" + name + "'");
  if (!e.contains("args") || !e["args"].is_object()) return Error(i, "metadata needs args");
  const json& a = e["args"];
  if (name.starts_with("thread_")) (void)Integer(i, e, "tid", true);
  if (name.ends_with("_name") && !(a.contains("name") && a["name"].is_string()))
    Error(i, name + " needs args.name (a string)");
  if (name.ends_with("_sort_index") && !(a.contains("sort_index") && a["sort_index"].is_number_integer()))
    Error(i, name + " needs args.sort_index (an integer)");
  if (name == "process_labels" && !(a.contains("labels") && a["labels"].is_string()))
    Error(i, "process_labels needs args.labels (a string)");
}

void Checker::Event(size_t i, const json& e) {
  if (!e.is_object()) return Error(i, "not an object");
  if (!e.contains("ph") || !e["ph"].is_string() || e["ph"].get<std::string>().size() != 1)
    return Error(i, "ph must be a one-character string");
  const char ph = e["ph"].get<std::string>()[0];
  ++v_.phases[std::string(1, ph)];
  static const std::string kKnown = "BEXiICMbenstfPONDR";
  if (kKnown.find(ph) == std::string::npos) return Error(i, std::string("unknown phase '") + ph + "'");
  const bool has_name = e.contains("name") && e["name"].is_string();
  if (!has_name && ph != 'E') Error(i, "missing name (a string)");
  if (e.contains("name") && !e["name"].is_string()) Error(i, "name must be a string");
  if (e.contains("args") && !e["args"].is_object()) Error(i, "args must be an object");
  if (e.contains("cat") && !e["cat"].is_string()) Error(i, "cat must be a string");
  const bool pid_ok = Integer(i, e, "pid", true);
  if (ph == 'M') {
    if (has_name) Metadata(i, e);
    return;
  }
  const bool ts_ok = Time(i, e, "ts");
  const bool thread_scoped = ph == 'B' || ph == 'E' || ph == 'X' || ((ph == 'i' || ph == 'I') && e.value("s", "t") == "t");
  const bool tid_ok = Integer(i, e, "tid", thread_scoped);
  switch (ph) {
    case 'X': {
      const bool dur_ok = Time(i, e, "dur");
      if (pid_ok && tid_ok && ts_ok && dur_ok)
        tracks_[{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}].push_back(
            {e["ts"].get<double>(), e["dur"].get<double>(), 'X', i, has_name ? e["name"].get<std::string>() : ""});
      break;
    }
    case 'B':
    case 'E':
      if (pid_ok && tid_ok && ts_ok)
        tracks_[{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}].push_back(
            {e["ts"].get<double>(), 0, ph, i, has_name ? e["name"].get<std::string>() : ""});
      break;
    case 'C':
      if (!e.contains("args") || !e["args"].is_object() || e["args"].empty()) {
        Error(i, "a counter needs a non-empty args object");
        break;
      }
      for (const auto& [k, val] : e["args"].items())
        if (!val.is_number() || !std::isfinite(val.get<double>())) Error(i, "counter value '" + k + "' is not a number");
      break;
    case 'i':
    case 'I':
      if (e.contains("s") && (!e["s"].is_string() || std::string("gpt").find(e["s"].get<std::string>()) == std::string::npos ||
                              e["s"].get<std::string>().size() != 1))
        Error(i, "instant scope s must be g, p or t");
      break;
    default:
      break;
  }
}

void Checker::Nesting() {
  constexpr double kEps = 1e-3;  // 1 ns: rounding of microsecond doubles
  for (auto& [track, v] : tracks_) {
    const std::string where = "pid " + std::to_string(track.first) + " tid " + std::to_string(track.second);
    // B/E: in time order (stable: file order breaks ties), a stack per thread.
    std::vector<Timed> be;
    std::vector<Timed> xs;
    for (const Timed& t : v) (t.ph == 'X' ? xs : be).push_back(t);
    std::stable_sort(be.begin(), be.end(), [](const Timed& a, const Timed& b) { return a.ts < b.ts; });
    std::vector<const Timed*> open;
    for (const Timed& t : be) {
      if (t.ph == 'B') {
        open.push_back(&t);
      } else if (open.empty()) {
        Error(t.index, "E without a matching B on " + where);
      } else {
        if (!t.name.empty() && t.name != open.back()->name)
          Error(t.index, "E '" + t.name + "' closes B '" + open.back()->name + "' on " + where);
        open.pop_back();
      }
    }
    for (const Timed* t : open) Error(t->index, "B '" + t->name + "' is never closed on " + where);
    // X: sorted by start, longer first; each must end within every slice still open around it.
    std::stable_sort(xs.begin(), xs.end(), [](const Timed& a, const Timed& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur;
    });
    std::vector<const Timed*> stack;
    for (const Timed& t : xs) {
      while (!stack.empty() && stack.back()->ts + stack.back()->dur <= t.ts + kEps) stack.pop_back();
      if (!stack.empty() && t.ts + t.dur > stack.back()->ts + stack.back()->dur + kEps)
        Error(t.index, "X '" + t.name + "' partially overlaps X '" + stack.back()->name + "' (event " +
                           std::to_string(stack.back()->index) + ") on " + where);
      stack.push_back(&t);
    }
  }
}

}  // namespace

Validation ValidateTraceJson(const json& trace, size_t max_errors) {
  Checker c(max_errors);
  const json* events = nullptr;
  if (trace.is_array()) {
    events = &trace;
  } else if (trace.is_object() && trace.contains("traceEvents") && trace["traceEvents"].is_array()) {
    events = &trace["traceEvents"];
    if (trace.contains("displayTimeUnit") &&
        !(trace["displayTimeUnit"] == "ms" || trace["displayTimeUnit"] == "ns"))
      c.TopError("displayTimeUnit must be \"ms\" or \"ns\"");
  } else {
    c.TopError("the trace must be an array of events or an object with a traceEvents array");
    return c.Take();
  }
  for (size_t i = 0; i < events->size(); ++i) c.Event(i, (*events)[i]);
  c.Nesting();
  return c.Take();
}

}  // namespace gshare::trace
