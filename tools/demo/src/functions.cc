// Parsing of the demo's function mix and per-kind settings; the loadgen targets file.
#include "gshare/demo/functions.h"

#include <charconv>
#include <sstream>

#include <fmt/format.h>

#include "gshare/common/units.h"

namespace gshare::demo {

workload::Result<std::map<std::string, std::string>> ParseKeyValues(const std::string& text) {
  std::map<std::string, std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      return workload::Fail("'" + item + "' is not KEY=VALUE (in '" + text + "')");
    if (!out.emplace(item.substr(0, eq), item.substr(eq + 1)).second)
      return workload::Fail("'" + item.substr(0, eq) + "' is given twice (in '" + text + "')");
  }
  if (out.empty()) return workload::Fail("empty list");
  return out;
}

workload::Result<std::vector<FunctionSpec>> BuildFunctions(const std::string& mix,
                                                           const std::string& quotas,
                                                           const std::string& slos_ms) {
  auto counts = ParseKeyValues(mix);
  if (!counts.ok()) return workload::Fail("--mix: " + counts.status().message());
  auto quota_of = ParseKeyValues(quotas);
  if (!quota_of.ok()) return workload::Fail("--quota: " + quota_of.status().message());
  auto slo_of = ParseKeyValues(slos_ms);
  if (!slo_of.ok()) return workload::Fail("--slo: " + slo_of.status().message());
  // Per kind (in the fixed order cnn, bert, llm, so names and seeds do not depend on the flag
  // order) the list of its servers; then interleaved round-robin across kinds.
  std::vector<std::vector<FunctionSpec>> per_kind;
  for (const char* kind : {"cnn", "bert", "llm"}) {
    auto it = counts->find(kind);
    if (it == counts->end()) continue;
    int count = 0;
    const std::string& c = it->second;
    if (std::from_chars(c.data(), c.data() + c.size(), count).ptr != c.data() + c.size() ||
        count < 0 || count > 256)
      return workload::Fail(fmt::format("--mix: {}={} is not a count in 0..256", kind, c));
    auto q = quota_of->find(kind);
    auto s = slo_of->find(kind);
    if (count > 0 && (q == quota_of->end() || s == slo_of->end()))
      return workload::Fail(fmt::format("kind '{}' needs a --quota and an --slo", kind));
    per_kind.emplace_back();
    for (int i = 0; i < count; ++i) {
      FunctionSpec f;
      f.name = fmt::format("{}-{}", kind, i);
      f.kind = kind;
      f.seed = static_cast<uint64_t>(i) + 1;
      const auto bytes = ParseByteSize(q->second);
      if (!bytes.ok() || *bytes == 0) {
        return workload::Fail(fmt::format("--quota {}: {}", kind, bytes.ok() ? "must be > 0" : bytes.status().message()));
      }
      f.quota_bytes = *bytes;
      const std::string& slo = s->second;
      double ms = 0;
      if (std::from_chars(slo.data(), slo.data() + slo.size(), ms).ptr != slo.data() + slo.size() || !(ms > 0))
        return workload::Fail(fmt::format("--slo {}={}: not a positive number of milliseconds", kind, slo));
      f.slo_ms = ms;
      per_kind.back().push_back(std::move(f));
    }
  }
  std::vector<FunctionSpec> out;
  for (size_t i = 0;; ++i) {
    const size_t before = out.size();
    for (auto& k : per_kind) {
      if (i < k.size()) out.push_back(std::move(k[i]));
    }
    if (out.size() == before) break;
  }
  for (const auto& [kind, count] : *counts) {
    if (kind != "cnn" && kind != "bert" && kind != "llm")
      return workload::Fail("--mix: unknown kind '" + kind + "' (cnn, bert, llm)");
  }
  if (out.empty()) return workload::Fail("--mix: no functions");
  return out;
}

std::string TargetsToml(const std::vector<FunctionSpec>& functions, const std::vector<int>& ports) {
  std::string out = "# Written by gshare-demo: one target per sample server.\n";
  for (size_t i = 0; i < functions.size() && i < ports.size(); ++i) {
    out += fmt::format("[[target]]\nname = \"{}\"\nurl = \"http://127.0.0.1:{}/v2/models/{}\"\nslo_ms = {}\n",
                       functions[i].name, ports[i], functions[i].name, functions[i].slo_ms);
  }
  return out;
}

}  // namespace gshare::demo
