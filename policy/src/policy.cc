// The policy factory (Make), the list of policy names, and names of enum values.
#include "gshare/policy/policy.h"

#include <string>
#include <utility>

#include "policies.h"

namespace gshare::policy {

const char* ActionKindName(ActionKind kind) {
  switch (kind) {
    case ActionKind::kActivateGpu: return "activate";
    case ActionKind::kReleaseGpu: return "release";
    case ActionKind::kSwapIn: return "swap-in";
    case ActionKind::kSwapOut: return "swap-out";
    case ActionKind::kDeepEvict: return "deep-evict";
    case ActionKind::kGrant: return "grant";
    case ActionKind::kPreempt: return "preempt";
    case ActionKind::kKeepResident: return "keep-resident";
  }
  return "?";
}

const std::vector<std::string>& PolicyNames() {
  static const auto* names = new std::vector<std::string>{"keepalive", "proxy-swap", "fifo",
                                                          "dual-queue", "aggressive"};
  return *names;
}

namespace {

// Parses "-no-<idea>" suffixes after "aggressive", and the opt-in "-corun-pack"; returns an
// error message or "".
std::string ParseAblations(std::string_view rest, internal::SlackOptions& options) {
  constexpr std::string_view kNo = "-no-";
  constexpr std::string_view kPack = "-corun-pack";
  static constexpr std::string_view kIdeas[] = {"learned", "residency", "prefetch",
                                                "deep-evict", "release", "scale",
                                                "eager", "interference", "edf", "typical", "collisions",
                                                "cold", "rescue", "corun"};
  while (!rest.empty()) {
    if (rest.substr(0, kPack.size()) == kPack &&
        (rest.size() == kPack.size() || rest.substr(kPack.size(), kNo.size()) == kNo)) {
      options.corun_pack = true;
      rest.remove_prefix(kPack.size());
      continue;
    }
    if (rest.substr(0, kNo.size()) != kNo) return "expected -no-<idea> in '" + std::string(rest) + "'";
    rest.remove_prefix(kNo.size());
    bool matched = false;
    for (std::string_view idea : kIdeas) {
      if (rest.substr(0, idea.size()) == idea &&
          (rest.size() == idea.size() || rest.substr(idea.size(), kNo.size()) == kNo)) {
        if (idea == "learned") options.learned = false;
        if (idea == "residency") options.residency = false;
        if (idea == "prefetch") options.prefetch = false;
        if (idea == "deep-evict") options.deep_evict = false;
        if (idea == "release") options.release = false;
        if (idea == "scale") options.scale = false;
        if (idea == "eager") options.eager = false;
        if (idea == "interference") options.interference = false;
        if (idea == "edf") options.edf = false;
        if (idea == "typical") options.typical = false;
        if (idea == "collisions") options.collisions = false;
        if (idea == "cold") options.cold = false;
        if (idea == "rescue") options.rescue = false;
        if (idea == "corun") options.corun = false;
        rest.remove_prefix(idea.size());
        matched = true;
        break;
      }
    }
    if (!matched) {
      return "unknown idea '" + std::string(rest) +
             "' (known: learned, residency, prefetch, deep-evict, release, scale, eager, "
             "interference, edf, typical, collisions, cold, rescue, corun)";
    }
  }
  return "";
}

}  // namespace

Result<std::unique_ptr<Policy>> Make(std::string_view name, const PolicyConfig& config) {
  const auto invalid = [](std::string message) {
    return Status(StatusCode::kInvalidArgument, std::move(message));
  };
  if (config.gpus.empty()) return invalid("the policy needs at least one GPU");
  const std::string n(name);
  if (n == "keepalive") return internal::MakeKeepAlive(n, config);
  if (n == "proxy-swap") return internal::MakeProxySwap(n, config);
  if (n == "fifo") return internal::MakeFifo(n, config);
  if (n == "dual-queue") {
    internal::SlackOptions off{false, false, false, false, false, false, false,
                               false, false, false, false, false, false, false};
    return internal::MakeSlackScheduler(n, config, off);
  }
  if (name.substr(0, 10) == "aggressive") {
    internal::SlackOptions options;
    std::string error = ParseAblations(name.substr(10), options);
    if (!error.empty()) return invalid(std::move(error));
    return internal::MakeSlackScheduler(n, config, options);
  }
  return invalid("unknown policy '" + n +
                 "' (known: keepalive, proxy-swap, fifo, dual-queue, aggressive[-no-<idea>...])");
}

}  // namespace gshare::policy
