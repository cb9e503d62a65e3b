// PlotLatencyCdf: data files and a gnuplot script for the latency CDF, then gnuplot.
#include "gshare/demo/plot.h"

#include <unistd.h>

#include <fstream>

#include <fmt/format.h>

#include "gshare/demo/child_process.h"

namespace gshare::demo {
namespace {

bool RunGnuplot(const std::string& script, const std::string& log) {
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/bin"}) {
    const std::string bin = std::string(dir) + "/gnuplot";
    if (access(bin.c_str(), X_OK) != 0) continue;
    auto child = ChildProcess::Spawn({{bin, script}, CurrentEnvironment(), log, log});
    if (!child.ok()) return false;
    const auto status = child->Wait(std::chrono::seconds(60));
    if (!status) child->Stop(std::chrono::seconds(1));
    return status && *status == 0;
  }
  return false;
}

}  // namespace

workload::Result<std::string> PlotLatencyCdf(const std::string& dir,
                                             const std::vector<PlotSeries>& series,
                                             const std::string& title) {
  std::string plots;
  for (size_t s = 0; s < series.size(); ++s) {
    const auto& lat = series[s].sorted_latencies_ms;
    if (lat.empty()) continue;
    const std::string data = fmt::format("{}/latency-cdf.dat.{}", dir, s);
    std::ofstream out(data);
    for (size_t i = 0; i < lat.size(); ++i)
      out << fmt::format("{:.3f} {:.6f}\n", lat[i], static_cast<double>(i + 1) / static_cast<double>(lat.size()));
    if (!out) return workload::Fail("cannot write " + data);
    if (!plots.empty()) plots += ", ";
    plots += fmt::format("'{}' using 1:2 with lines linewidth 2 title '{}'", data, series[s].title);
  }
  if (plots.empty()) return workload::Fail("no latencies to plot");
  // Terminals in order of preference; gnuplot exits non-zero for an unknown one.
  const std::vector<std::pair<std::string, std::string>> terminals = {
      {"pngcairo size 900,540", "png"}, {"png size 900,540", "png"}, {"svg size 900,540", "svg"}};
  for (const auto& [terminal, ext] : terminals) {
    const std::string image = fmt::format("{}/latency-cdf.{}", dir, ext);
    const std::string script = dir + "/latency-cdf.gp";
    std::ofstream gp(script);
    gp << "set terminal " << terminal << "\n"
       << "set output '" << image << "'\n"
       << "set title '" << title << "' noenhanced\n"
       << "set xlabel 'latency (ms, log scale)'\nset ylabel 'fraction of correct answers'\n"
       << "set logscale x\nset grid\nset key bottom right noenhanced\nset yrange [0:1]\n"
       << "plot " << plots << "\n";
    gp.close();
    if (RunGnuplot(script, dir + "/gnuplot.log")) return image;
  }
  return workload::Fail("gnuplot failed (see " + dir + "/gnuplot.log)");
}

}  // namespace gshare::demo
