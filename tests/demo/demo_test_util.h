// What the demo's end-to-end tests share: reading a file whole, and their safety-net waits
// scaled for slow builds (GSHARE_TEST_TIME_SCALE, which scripts/sanitize.sh sets: 3 under ASan,
// 10 under TSan, where the preloaded servers alone take a minute to come up).
#pragma once

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace gshare::demo::test_util {

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::chrono::seconds Scaled(std::chrono::seconds safety_net) {
  const char* text = std::getenv("GSHARE_TEST_TIME_SCALE");
  const int scale = text != nullptr ? std::atoi(text) : 1;
  return safety_net * (scale > 0 ? scale : 1);
}

}  // namespace gshare::demo::test_util
