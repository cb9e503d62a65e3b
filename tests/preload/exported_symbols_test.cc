// Symbol hygiene of libgshare.so: it exports exactly the hooked driver entry points (the
// generated table) and dlsym under GLIBC_2.2.5 and GLIBC_2.34, and depends on no shared spdlog,
// fmt, Boost or libcuda that could clash with the application's.
#include <cstdio>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "runtime/symbols.h"

namespace gshare::preload {
namespace {

std::string RunCommand(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  pclose(pipe);
  return out;
}

TEST(ExportedSymbols, ExactlyTheHookTableAndDlsym) {
  const std::string nm = RunCommand(std::string("nm -D --defined-only ") + GSHARE_PRELOAD_LIB);
  ASSERT_FALSE(nm.empty());
  std::set<std::string> functions, others;
  std::istringstream in(nm);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string a, b, c;
    fields >> a >> b >> c;
    if (b == "T" || b == "W" || b == "i") {
      functions.insert(c);
    } else {
      others.insert(b + " " + c);
    }
  }
  std::set<std::string> expected = {"dlsym@GLIBC_2.2.5", "dlsym@@GLIBC_2.34"};
  for (size_t i = 0; i < HookedExportCount(); ++i) {
    expected.insert(std::string(HookedExportName(i)) + "@@GSHARE_CUDA");
  }
  EXPECT_EQ(functions, expected);
  // Version definitions appear as absolute symbols.
  EXPECT_EQ(others,
            (std::set<std::string>{"A GLIBC_2.2.5", "A GLIBC_2.34", "A GSHARE_CUDA"}));
}

TEST(ExportedSymbols, NoClashingSharedDependencies) {
  const std::string needed = RunCommand(std::string("readelf -d ") + GSHARE_PRELOAD_LIB);
  ASSERT_NE(needed.find("NEEDED"), std::string::npos);
  for (const char* lib : {"libspdlog", "libfmt", "libboost", "libcuda", "libunwind"}) {
    EXPECT_EQ(needed.find(lib), std::string::npos) << lib;
  }
}

}  // namespace
}  // namespace gshare::preload
