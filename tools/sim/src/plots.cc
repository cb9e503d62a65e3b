// SVG plots of gshare-sim runs through gnuplot (gnuplot-nox): data files and a script are
// written to the plot directory, then gnuplot is run on the script (see report.h).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "fmt/format.h"
#include "gshare/sim/report.h"

namespace gshare::sim {

namespace {

std::string RunGnuplot(const std::filesystem::path& script) {
  const pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    execlp("gnuplot", "gnuplot", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return "waitpid failed";
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return fmt::format("gnuplot {} failed (exit {}); is gnuplot-nox installed?", script.string(),
                       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return "";
}

std::string Quote(const std::string& s) {
  std::string out;
  for (char c : s) out += (c == '"' || c == '\\') ? '_' : c;
  return out;
}

}  // namespace

std::string WritePlots(const std::vector<RunResult>& runs, const std::string& dir) {
  std::error_code ec;
  const std::filesystem::path d(dir);
  std::filesystem::create_directories(d, ec);
  if (ec) return fmt::format("cannot create {}: {}", dir, ec.message());
  std::string gpus_cmd, cdf_cmd;
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunResult& r = runs[i];
    const auto gpus_dat = d / fmt::format("gpus_{}.dat", i);
    const auto cdf_dat = d / fmt::format("cdf_{}.dat", i);
    {
      std::ofstream g(gpus_dat);
      g << "# time_s active_gpus (" << r.policy << ")\n0 0\n";
      for (const auto& [t, n] : r.timeline) g << static_cast<double>(t) / 1e6 << ' ' << n << '\n';
      g << static_cast<double>(r.end_time) / 1e6 << ' '
        << (r.timeline.empty() ? 0 : r.timeline.back().second) << '\n';
      if (!g) return "cannot write " + gpus_dat.string();
    }
    {
      std::vector<Duration> lat;
      for (Duration l : r.latencies) {
        if (l >= 0) lat.push_back(l);
      }
      std::sort(lat.begin(), lat.end());
      std::ofstream c(cdf_dat);
      c << "# latency_ms cumulative_fraction (" << r.policy << ")\n";
      const size_t step = std::max<size_t>(1, lat.size() / 2000);
      for (size_t k = 0; k < lat.size(); k += step) {
        c << static_cast<double>(lat[k]) / 1000.0 << ' '
          << static_cast<double>(k + 1) / static_cast<double>(r.requests) << '\n';
      }
      if (!lat.empty()) {
        c << static_cast<double>(lat.back()) / 1000.0 << ' '
          << static_cast<double>(lat.size()) / static_cast<double>(r.requests) << '\n';
      }
      if (!c) return "cannot write " + cdf_dat.string();
    }
    const std::string sep = i == 0 ? "plot " : ", ";
    gpus_cmd += fmt::format("{}\"{}\" using 1:2 with steps title \"{}\"", sep, gpus_dat.string(), Quote(r.policy));
    cdf_cmd += fmt::format("{}\"{}\" using 1:2 with lines title \"{}\"", sep, cdf_dat.string(), Quote(r.policy));
  }
  const auto script = d / "plots.gp";
  {
    std::ofstream s(script);
    s << "set terminal svg size 900,500 dynamic\n"
      << "set key outside right\n"
      << "set output \"" << (d / "gpus.svg").string() << "\"\n"
      << "set title \"GPUs in use\"\nset xlabel \"time (s)\"\nset ylabel \"active GPUs\"\n"
      << gpus_cmd << "\n"
      << "set output \"" << (d / "latency_cdf.svg").string() << "\"\n"
      << "set title \"Request latency CDF\"\nset xlabel \"latency (ms)\"\nset logscale x\n"
      << "set ylabel \"fraction of requests\"\nset yrange [0:1]\n"
      << cdf_cmd << "\n";
    if (!s) return "cannot write " + script.string();
  }
  if (runs.empty()) return "";
  return RunGnuplot(script);
}

}  // namespace gshare::sim
