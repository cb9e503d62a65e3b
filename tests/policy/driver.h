// Test helper: drives a Policy with hand-made events and collects its actions, tracking time.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "gshare/policy/policy.h"

namespace gshare::policy::testing {

inline GpuSpec SmallGpu(uint64_t memory = 1ull << 30) {
  GpuSpec g;
  g.memory_bytes = memory;
  g.link_bytes_per_us = 1000.0;  // 1 GB/s: 1 MB per millisecond
  g.restore_overhead = 1000;
  return g;
}

// A function of `mb` MB of weights, no context, executing in `exec_us`, with `slo_us`.
inline FunctionSpec Fn(uint64_t mb, Duration exec_us, Duration slo_us, uint64_t ctx_mb = 0) {
  FunctionSpec f;
  f.model = "m";
  f.weights_bytes = mb * 1'000'000;
  f.context_bytes = ctx_mb * 1'000'000;
  f.exec_p50 = exec_us;
  f.exec_p90 = exec_us;
  f.slo = slo_us;
  return f;
}

class Driver {
 public:
  // `swap_out_copies`: PolicyConfig::swap_out_copies (evictions copy out over the link first).
  Driver(const std::string& name, int gpus, GpuSpec gpu = SmallGpu(), bool swap_out_copies = false)
      : Driver(name, Config(gpus, gpu, swap_out_copies)) {}
  // With a whole configuration (e.g. PolicyConfig::slice).
  Driver(const std::string& name, const PolicyConfig& config) {
    auto made = Make(name, config);
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    policy = std::move(*made);
    Send(0, Started{});
  }

  ActionList Send(Time now, EventBody body) {
    ActionList out;
    policy->Handle(Event{now, std::move(body)}, out);
    return out;
  }

  std::unique_ptr<Policy> policy;

 private:
  static PolicyConfig Config(int gpus, const GpuSpec& gpu, bool swap_out_copies) {
    PolicyConfig config;
    config.swap_out_copies = swap_out_copies;
    config.gpus.assign(static_cast<size_t>(gpus), gpu);
    return config;
  }
};

inline bool Has(const ActionList& actions, ActionKind kind, FunctionId f = kNoFunction,
                GpuId g = kNoGpu) {
  for (const Action& a : actions) {
    if (a.kind == kind && (f == kNoFunction || a.function == f) && (g == kNoGpu || a.gpu == g)) {
      return true;
    }
  }
  return false;
}

// A test name for a policy name parameter (gtest allows no '-').
inline std::string PolicyParamName(const ::testing::TestParamInfo<std::string>& param) {
  std::string n = param.param;
  for (char& ch : n) {
    if (ch == '-') ch = '_';
  }
  return n;
}

inline std::string Describe(const ActionList& actions) {
  std::string s;
  for (const Action& a : actions) {
    s += std::string(ActionKindName(a.kind)) + "(f" + std::to_string(a.function) + ",g" +
         std::to_string(a.gpu) + ") ";
  }
  return s;
}

}  // namespace gshare::policy::testing
