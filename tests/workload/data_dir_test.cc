// Tests of the shipped-data lookup: found next to the executable (the build copies the data to
// <build>/share/gshare/workload, as an install does under its prefix), and the environment
// override, which must point at a real data directory.
#include "gshare/workload/data_dir.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "test_util.h"

namespace gshare::workload {
namespace {

namespace fs = std::filesystem;

// Sets or clears an environment variable for one test and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value, 1); else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1); else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(DataDir, FoundRelativeToTheExecutable) {
  ScopedEnv env("GSHARE_WORKLOAD_DATA_DIR", nullptr);
  Result<fs::path> dir = ShippedDataDir();
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  const fs::path exe = fs::read_symlink("/proc/self/exe");
  EXPECT_EQ(fs::weakly_canonical(*dir),
            fs::weakly_canonical(exe.parent_path().parent_path() / "share/gshare/workload"));
  Result<fs::path> trace = ShippedAzureLlmTracePath();
  ASSERT_TRUE(trace.ok());
  EXPECT_TRUE(fs::is_regular_file(*trace)) << *trace;
  Result<fs::path> catalog = ShippedCatalogPath();
  ASSERT_TRUE(catalog.ok());
  EXPECT_TRUE(fs::is_regular_file(*catalog)) << *catalog;
  EXPECT_TRUE(fs::is_regular_file(dir->string() + "/azure-llm-2023/README.md"));
}

TEST(DataDir, EnvironmentOverride) {
  testing::TempDir tmp;
  {
    ScopedEnv env("GSHARE_WORKLOAD_DATA_DIR", tmp.path().c_str());
    Result<fs::path> missing = ShippedDataDir();
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.status().message().find("GSHARE_WORKLOAD_DATA_DIR"), std::string::npos);
    tmp.Write("default-catalog.toml", "");
    Result<fs::path> dir = ShippedDataDir();
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    EXPECT_EQ(*dir, tmp.path());
  }
}

}  // namespace
}  // namespace gshare::workload
