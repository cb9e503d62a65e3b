// The demo's plot: the latency CDF of the gshare run and the dedicated baseline, drawn by
// gnuplot (data and script are left beside the image so it can be redrawn).
//
// Thread-safety: one call at a time per output directory.
#pragma once

#include <string>
#include <vector>

#include "gshare/workload/result.h"

namespace gshare::demo {

struct PlotSeries {
  std::string title;
  std::vector<double> sorted_latencies_ms;
};

// Writes DIR/latency-cdf.{dat.N,gp} and runs `gnuplot` (from PATH) to produce DIR/latency-cdf.png
// (pngcairo, else png, else svg). Returns the image's path.
workload::Result<std::string> PlotLatencyCdf(const std::string& dir,
                                             const std::vector<PlotSeries>& series,
                                             const std::string& title);

}  // namespace gshare::demo
