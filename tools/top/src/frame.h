// One gshare-top frame: the arbiter's status and clients replies rendered as text (per GPU:
// utilisation bar, token holder, queue, memory with orphaned bytes, utilisation by tenant; the
// functions; orphans, when there are any; recent SLO misses). Pure function of its inputs;
// thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gshare::top {

struct FrameStyle {
  bool color = false;  // ANSI colours (bold headers, red misses)
  int width = 100;     // terminal columns (lines are cut to fit)
};

std::string RenderFrame(const nlohmann::json& status, const nlohmann::json& clients,
                        const FrameStyle& style);

}  // namespace gshare::top
