// The exact model as a time-indexed integer program solved by CBC (see exact.h):
//   y[r,g,s]  request r starts on GPU g at step s (s within its window)
//   z[f,g,t]  f is resident (usable) on g at step t
//   u[f,g,t]  a load of f onto g starts at step t (occupies t .. t+load-1)
//   a[g,t]    g is active at step t
//   d[r]      request r is dropped (fixed to 0 with serve_all)
// minimise sum a + (G*H + 1) sum d  subject to
//   sum_{g,s} y[r,g,s] + d[r] = 1                              every request runs once or drops
//   sum_{r,s covering t} y[r,g,s] <= 1                         one request at a time per GPU
//   sum_{s covering t} y[r,g,s] - z[f_r,g,t] <= 0              resident while running
//   z[f,g,t] - z[f,g,t-1] - u[f,g,t-load_f] <= 0               residency begins after a load
//   sum_f bytes_f (z[f,g,t] + sum_{k in (t-load_f, t]} u[f,g,k]) <= memory   (scaled)
//   sum_f sum_{k in (t-load_f, t]} u[f,g,k] <= 1                 one load at a time per link
//   a[g,t] - z[f,g,t] - sum_{k in (t-load_f, t]} u[f,g,k] >= 0   active while anything is there
//   sum_t a[g,t] >= sum_t a[g+1,t]                              symmetry: GPUs by activity
#include <chrono>
#include <algorithm>
#include <cmath>
#include <vector>

#include "CbcModel.hpp"
#include "CoinModel.hpp"
#include "OsiClpSolverInterface.hpp"
#include "gshare/policy/exact.h"

namespace gshare::policy {

namespace {

constexpr double kTimeLimitSeconds = 300;  // beyond it: an error, not a wrong optimum

class Cbc final : public ExactSolver {
 public:
  const char* name() const override { return "cbc"; }

  Result<ExactSolution> Solve(const ExactInstance& in) override {
    const auto t0 = std::chrono::steady_clock::now();
    ExactSolution sol;
    const int G = in.gpus, H = in.horizon, F = static_cast<int>(in.functions.size());
    const int R = static_cast<int>(in.requests.size());
    // Memory unit: exact bytes for small memories; ~1e5 units per GPU otherwise (function sizes
    // round up, capacity down: never more permissive than the true constraint).
    const double unit = std::max(1.0, std::floor(static_cast<double>(in.gpu_memory) / 1e5));
    CoinModel m;
    int cols = 0;
    auto add_col = [&](double cost) {
      m.setColumnBounds(cols, 0.0, 1.0);
      m.setColumnObjective(cols, cost);
      m.setColumnIsInteger(cols, true);
      return cols++;
    };
    auto zi = [&](int f, int g, int t) { return (f * G + g) * H + t; };
    std::vector<int> z(static_cast<size_t>(F * G * H)), u(z.size()), a(static_cast<size_t>(G * H));
    for (size_t i = 0; i < z.size(); ++i) z[i] = add_col(0.0);
    for (size_t i = 0; i < u.size(); ++i) u[i] = add_col(0.0);
    for (size_t i = 0; i < a.size(); ++i) a[i] = add_col(1.0);
    struct Y {
      int r, g, s, col;
    };
    std::vector<Y> ys;
    for (int r = 0; r < R; ++r) {
      const ExactRequest& q = in.requests[static_cast<size_t>(r)];
      for (int g = 0; g < G; ++g) {
        for (int s = q.arrival; s + q.exec <= q.deadline; ++s) ys.push_back({r, g, s, add_col(0.0)});
      }
    }
    std::vector<int> idx;
    std::vector<double> val;
    auto row = [&](double lo, double hi) {
      m.addRow(static_cast<int>(idx.size()), idx.data(), val.data(), lo, hi);
      idx.clear();
      val.clear();
    };
    auto term = [&](int col, double v) {
      idx.push_back(col);
      val.push_back(v);
    };
    // Dropping a request costs more than every GPU-step of the instance.
    const double drop_cost = static_cast<double>(G) * H + 1.0;
    std::vector<int> drop(static_cast<size_t>(R));
    for (int r = 0; r < R; ++r) {
      drop[static_cast<size_t>(r)] = add_col(drop_cost);
      if (in.serve_all) m.setColumnBounds(drop[static_cast<size_t>(r)], 0.0, 0.0);
      for (const Y& y : ys) {
        if (y.r == r) term(y.col, 1.0);
      }
      term(drop[static_cast<size_t>(r)], 1.0);
      row(1.0, 1.0);
    }
    for (int g = 0; g < G; ++g) {
      for (int t = 0; t < H; ++t) {
        for (const Y& y : ys) {
          if (y.g == g && y.s <= t && t < y.s + in.requests[static_cast<size_t>(y.r)].exec) term(y.col, 1.0);
        }
        if (!idx.empty()) row(-COIN_DBL_MAX, 1.0);
        for (int r = 0; r < R; ++r) {
          const ExactRequest& q = in.requests[static_cast<size_t>(r)];
          for (const Y& y : ys) {
            if (y.r == r && y.g == g && y.s <= t && t < y.s + q.exec) term(y.col, 1.0);
          }
          if (idx.empty()) continue;
          term(z[static_cast<size_t>(zi(q.function, g, t))], -1.0);
          row(-COIN_DBL_MAX, 0.0);
        }
        for (int f = 0; f < F; ++f) {
          const int load = in.functions[static_cast<size_t>(f)].load;
          term(z[static_cast<size_t>(zi(f, g, t))], 1.0);
          if (t > 0) term(z[static_cast<size_t>(zi(f, g, t - 1))], -1.0);
          if (t - load >= 0) term(u[static_cast<size_t>(zi(f, g, t - load))], -1.0);
          row(-COIN_DBL_MAX, 0.0);
        }
        for (int f = 0; f < F; ++f) {  // memory, in units that keep coefficients moderate
          const double units = std::ceil(static_cast<double>(in.functions[static_cast<size_t>(f)].bytes) / unit);
          Occupancy(in, f, g, t, z, u, zi, units, term);
        }
        row(-COIN_DBL_MAX, std::floor(static_cast<double>(in.gpu_memory) / unit));
        for (int f = 0; f < F; ++f) {  // one load at a time on g's link
          const int load = in.functions[static_cast<size_t>(f)].load;
          for (int k = std::max(0, t - load + 1); k <= t; ++k) term(u[static_cast<size_t>(zi(f, g, k))], 1.0);
        }
        row(-COIN_DBL_MAX, 1.0);
        for (int f = 0; f < F; ++f) {  // activity
          term(a[static_cast<size_t>(g * H + t)], 1.0);
          Occupancy(in, f, g, t, z, u, zi, -1.0, term);
          row(0.0, COIN_DBL_MAX);
        }
      }
    }
    // The GPUs are identical: order them by active steps (any solution relabels to one that
    // is), which spares the search its G! mirror images.
    for (int g = 0; g + 1 < G; ++g) {
      for (int t = 0; t < H; ++t) {
        term(a[static_cast<size_t>(g * H + t)], 1.0);
        term(a[static_cast<size_t>((g + 1) * H + t)], -1.0);
      }
      row(0.0, COIN_DBL_MAX);
    }
    OsiClpSolverInterface solver;
    solver.loadFromCoinModel(m);
    solver.messageHandler()->setLogLevel(0);
    CbcModel model(solver);
    model.setLogLevel(0);
    model.setMaximumSeconds(kTimeLimitSeconds);
    model.branchAndBound();
    if (!model.isProvenOptimal()) {
      if (!model.isProvenInfeasible()) {
        return Status(StatusCode::kTimeout, "CBC stopped without a proven optimum");
      }
      return Done(sol, t0);
    }
    const double* x = model.bestSolution();
    sol.feasible = true;
    sol.gpu.assign(static_cast<size_t>(R), -1);
    sol.start.assign(static_cast<size_t>(R), 0);
    for (const Y& y : ys) {
      if (x[y.col] > 0.5) {
        sol.gpu[static_cast<size_t>(y.r)] = y.g;
        sol.start[static_cast<size_t>(y.r)] = y.s;
      }
    }
    for (int r = 0; r < R; ++r) sol.served += sol.gpu[static_cast<size_t>(r)] >= 0 ? 1 : 0;
    sol.cost = EvaluateAssignment(in, sol.gpu, sol.start);
    if (sol.cost < 0) return Status(StatusCode::kMalformed, "CBC's solution breaks the model");
    return Done(sol, t0);
  }

 private:
  template <class Zi, class Term>
  static void Occupancy(const ExactInstance& in, int f, int g, int t, const std::vector<int>& z,
                        const std::vector<int>& u, Zi zi, double coef, Term term) {
    const int load = in.functions[static_cast<size_t>(f)].load;
    term(z[static_cast<size_t>(zi(f, g, t))], coef);
    for (int k = std::max(0, t - load + 1); k <= t; ++k) term(u[static_cast<size_t>(zi(f, g, k))], coef);
  }

  static ExactSolution Done(ExactSolution sol, std::chrono::steady_clock::time_point t0) {
    sol.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return sol;
  }
};

}  // namespace

std::unique_ptr<ExactSolver> MakeCbcSolver() { return std::make_unique<Cbc>(); }

}  // namespace gshare::policy
