// Brute-force exact solver: every (GPU, start step) or drop (unless serve_all) for every request, symmetric GPUs
// tried in first-use order, overlapping placements pruned, each complete assignment evaluated
// by EvaluateAssignment (see exact.h). For tiny instances only.
#include <chrono>
#include <vector>

#include "gshare/policy/exact.h"

namespace gshare::policy {

namespace {

class BruteForce final : public ExactSolver {
 public:
  const char* name() const override { return "brute-force"; }

  Result<ExactSolution> Solve(const ExactInstance& in) override {
    const auto t0 = std::chrono::steady_clock::now();
    in_ = &in;
    best_ = ExactSolution{};
    gpu_.assign(in.requests.size(), -1);
    start_.assign(in.requests.size(), 0);
    Search(0, 0);
    best_.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return best_;
  }

 private:
  bool Overlaps(size_t r, int g, int s) const {
    for (size_t o = 0; o < r; ++o) {
      if (gpu_[o] != g) continue;
      const int e1 = s + in_->requests[r].exec, e2 = start_[o] + in_->requests[o].exec;
      if (s < e2 && start_[o] < e1) return true;
    }
    return false;
  }

  void Search(size_t r, int used) {
    if (r == in_->requests.size()) {
      const int64_t cost = EvaluateAssignment(*in_, gpu_, start_);
      if (cost < 0) return;
      if (!best_.feasible || served_ > best_.served || (served_ == best_.served && cost < best_.cost)) {
        best_.feasible = true;
        best_.cost = cost;
        best_.served = served_;
        best_.gpu = gpu_;
        best_.start = start_;
      }
      return;
    }
    const ExactRequest& q = in_->requests[r];
    gpu_[r] = -1;  // drop it
    if (!in_->serve_all) Search(r + 1, used);
    ++served_;
    for (int g = 0; g < in_->gpus && g <= used; ++g) {
      for (int s = q.arrival; s + q.exec <= q.deadline; ++s) {
        if (Overlaps(r, g, s)) continue;
        gpu_[r] = g;
        start_[r] = s;
        Search(r + 1, g == used ? used + 1 : used);
      }
    }
    --served_;
    gpu_[r] = -1;
  }

  const ExactInstance* in_ = nullptr;
  ExactSolution best_;
  std::vector<int> gpu_, start_;
  int served_ = 0;
};

}  // namespace

std::unique_ptr<ExactSolver> MakeBruteForceSolver() { return std::make_unique<BruteForce>(); }

}  // namespace gshare::policy
