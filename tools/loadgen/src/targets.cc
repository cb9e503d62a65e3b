// Target parsing and the loopback rule (see targets.h).
#include "gshare/loadgen/targets.h"

#include <arpa/inet.h>

#include <charconv>

#include <toml++/toml.h>

namespace gshare::loadgen {

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr a{};
  if (inet_pton(AF_INET, host.c_str(), &a) != 1) return false;
  return (ntohl(a.s_addr) >> 24) == 127;
}

workload::Result<Target> ParseTargetUrl(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) {
    return workload::Fail("target URL '" + url + "' must start with http:// (https is not supported)");
  }
  const size_t path_at = url.find('/', scheme.size());
  const std::string authority = url.substr(scheme.size(), path_at == std::string::npos
                                                              ? std::string::npos
                                                              : path_at - scheme.size());
  const std::string path = path_at == std::string::npos ? "" : url.substr(path_at);
  Target t;
  t.url = url;
  std::string port_text;
  if (!authority.empty() && authority[0] == '[') {  // [v6]:port
    const size_t close = authority.find(']');
    if (close == std::string::npos) return workload::Fail("target URL '" + url + "': bad IPv6 host");
    t.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') port_text = authority.substr(close + 2);
  } else {
    const size_t colon = authority.rfind(':');
    t.host = authority.substr(0, colon);
    if (colon != std::string::npos) port_text = authority.substr(colon + 1);
  }
  if (t.host.empty()) return workload::Fail("target URL '" + url + "' has no host");
  if (!IsLoopbackHost(t.host)) {
    return workload::Fail("target '" + url + "': host '" + t.host +
                          "' is not a loopback address; gshare-loadgen only drives servers on "
                          "this machine (127.0.0.0/8, ::1, localhost)");
  }
  t.port = 80;
  if (!port_text.empty()) {
    const auto r = std::from_chars(port_text.data(), port_text.data() + port_text.size(), t.port);
    if (r.ec != std::errc() || r.ptr != port_text.data() + port_text.size() || t.port < 1 ||
        t.port > 65535) {
      return workload::Fail("target URL '" + url + "': bad port '" + port_text + "'");
    }
  }
  const std::string prefix = "/v2/models/";
  if (path.rfind(prefix, 0) != 0 || path.size() == prefix.size() ||
      path.find('/', prefix.size()) != std::string::npos) {
    return workload::Fail("target URL '" + url + "' must end in /v2/models/MODEL");
  }
  t.model = path.substr(prefix.size());
  t.name = t.model;
  return t;
}

workload::Result<Target> ParseTargetFlag(const std::string& flag) {
  std::string name, rest = flag;
  const size_t eq = flag.find('=');
  if (eq != std::string::npos && flag.find("://") > eq) {
    name = flag.substr(0, eq);
    rest = flag.substr(eq + 1);
  }
  double slo = 0;
  const size_t at = rest.rfind('@');
  if (at != std::string::npos) {
    const std::string s = rest.substr(at + 1);
    const auto r = std::from_chars(s.data(), s.data() + s.size(), slo);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size() || !(slo > 0)) {
      return workload::Fail("--target '" + flag + "': SLO after '@' must be positive milliseconds");
    }
    rest = rest.substr(0, at);
  }
  auto t = ParseTargetUrl(rest);
  if (!t.ok()) return t;
  if (!name.empty()) t->name = name;
  t->slo_ms = slo;
  return t;
}

workload::Result<std::vector<Target>> LoadTargetsToml(const std::string& path) {
  toml::table root;
  try {  // toml++ is built with exceptions here; nothing escapes this function
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    return workload::Fail(path + ":" + std::to_string(e.source().begin.line) + ": " +
                          std::string(e.description()));
  }
  const double default_slo = root["slo_ms"].value_or(0.0);
  const toml::array* list = root["target"].as_array();
  if (list == nullptr || list->empty()) return workload::Fail(path + ": no [[target]] entries");
  std::vector<Target> out;
  for (const toml::node& n : *list) {
    const toml::table* tt = n.as_table();
    const int line = static_cast<int>(n.source().begin.line);
    const std::string where = path + ":" + std::to_string(line);
    if (tt == nullptr) return workload::Fail(where + ": [[target]] must be a table");
    for (const auto& [key, value] : *tt) {
      if (key != "name" && key != "url" && key != "slo_ms") {
        return workload::Fail(where + ": unknown key '" + std::string(key.str()) + "'");
      }
    }
    const std::optional<std::string> url = (*tt)["url"].value<std::string>();
    if (!url) return workload::Fail(where + ": target needs url = \"http://127.0.0.1:PORT/v2/models/NAME\"");
    auto t = ParseTargetUrl(*url);
    if (!t.ok()) return workload::Fail(where + ": " + t.status().message());
    if (auto name = (*tt)["name"].value<std::string>()) t->name = *name;
    t->slo_ms = (*tt)["slo_ms"].value_or(default_slo);
    if (t->slo_ms < 0) return workload::Fail(where + ": slo_ms must be positive");
    out.push_back(std::move(*t));
  }
  return out;
}

}  // namespace gshare::loadgen
