// Human-readable rendering of the arbiter's control replies (docs/operating.md): the tables
// gshare-ctl prints and the panels gshare-top draws. Pure functions of the reply JSON (missing
// fields render as "-"); thread-safe.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gshare::ctl {

// A plain-text table: a header row and rows of cells, columns padded to their widest cell.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // Rendered, one line per row, each ending with '\n'; two spaces between columns.
  std::string str() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string Bytes(const nlohmann::json& v);           // "512 MiB", "-" when not a number
std::string Millis(const nlohmann::json& v);          // "12.3 ms"
std::string Percent(const nlohmann::json& fraction);  // "95.0%", "-" when null
// A client's pod as "namespace/name" from its "namespace" and "pod" fields ("?" for a part it
// did not name), "-" when it named neither (not in Kubernetes, or GSHARE_POD_* unset).
std::string Pod(const nlohmann::json& client);
// A status GPU's token holders as "function (#client)" joined by ", ", with " [co-run]" after a
// set of several (docs/arbiter.md, "Co-running"); "-" when none. Reads "holders", or the
// single "holder" of an older arbiter.
std::string HoldersText(const nlohmann::json& gpu);
// A client's MPS share and whether its GPU's MPS daemon confirmed it ("25% served", "25% not
// served"); "-" when its process is no MPS client (or the arbiter predates co-running).
std::string MpsText(const nlohmann::json& client);

// `gshare-ctl status`: a line about the arbiter, the GPU table (with orphaned bytes), the
// orphans and their counters, recent SLO misses.
std::string RenderStatus(const nlohmann::json& status);
// The `orphans` of a status reply (reservations of live processes the arbiter disconnected;
// docs/arbiter.md) as a table: PID, FUNCTION, CLIENT, GPU, BYTES, REASON, SINCE. "" when none.
std::string RenderOrphans(const nlohmann::json& status);
// One line of the status reply's disconnection and orphan counters ("disconnected alive: ...;
// orphans: ..."), without a newline; counters missing from the reply are left out, "" when
// the reply has none of them.
std::string RenderOrphanCounters(const nlohmann::json& status);
// `gshare-ctl clients`: one row per vGPU.
std::string RenderClients(const nlohmann::json& clients);
// `gshare-ctl instances`: one row per instance, grouped by function, warm ones first.
std::string RenderInstances(const nlohmann::json& instances);
// The one-line answer to drain, undrain, evict and set-slo.
std::string RenderAction(const std::string& command, const nlohmann::json& reply);

}  // namespace gshare::ctl
