// gshare-cdi: the spec it builds (CDI 0.5.0, gshare.io/vgpu=vgpu, the tenant directory mounted,
// never the socket file, no per-container settings), the validation of every field, and the
// program: atomic writes, a foreign spec kept unless --force, clear errors for bad hosts and
// unwritable directories.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "spec.h"
#include "spec_file.h"
#include "test_util.h"

namespace gshare::cdi {
namespace {

using arbiter::testing::ReadFile;
using arbiter::testing::RunTool;
using arbiter::testing::TempDir;
using arbiter::testing::ToolResult;

SpecOptions Options(const std::string& socket_dir) {
  SpecOptions o;
  o.library = PRELOAD_LIB;
  o.socket_dir = socket_dir;
  return o;
}

TEST(CdiSpec, OneDeviceThatMountsTheLibraryAndTheTenantDirectory) {
  const nlohmann::json spec = BuildSpec(Options("/run/gshare"));
  ASSERT_TRUE(ValidateSpec(spec).ok()) << ValidateSpec(spec).message();
  EXPECT_EQ(spec["cdiVersion"], "0.5.0");
  EXPECT_EQ(spec["kind"], "gshare.io/vgpu");
  ASSERT_EQ(spec["devices"].size(), 1u);
  EXPECT_EQ(spec["devices"][0]["name"], "vgpu");
  const auto& edits = spec["devices"][0]["containerEdits"];
  std::set<std::string> env;
  for (const auto& e : edits["env"]) env.insert(e.get<std::string>());
  EXPECT_TRUE(env.count("LD_PRELOAD=/opt/gshare/lib/libgshare.so")) << edits.dump();
  EXPECT_TRUE(env.count("GSHARE_ARBITER_SOCKET=/run/gshare/arbiter.sock")) << edits.dump();
  for (const std::string& e : env) {  // per-container settings stay out (a CDI env value wins)
    for (const char* user : {"GSHARE_VGPU_MEMORY", "GSHARE_FUNCTION", "GSHARE_SLO_MS"})
      EXPECT_NE(e.rfind(user, 0), 0u) << e;
  }
  ASSERT_EQ(edits["mounts"].size(), 2u);
  EXPECT_EQ(edits["mounts"][0]["hostPath"], PRELOAD_LIB);
  EXPECT_EQ(edits["mounts"][1]["hostPath"], "/run/gshare");  // the directory, not the socket
  EXPECT_EQ(edits["mounts"][1]["containerPath"], "/run/gshare");
  EXPECT_EQ(edits["mounts"][1]["options"][0], "ro");
  EXPECT_TRUE(WrittenByGshareCdi(spec));
}

TEST(CdiSpec, ValidationNamesTheFieldThatBreaksCdi050) {
  const nlohmann::json good = BuildSpec(Options("/run/gshare"));
  auto broken = [&](auto edit) {
    nlohmann::json s = good;
    edit(s);
    const shm::Status st = ValidateSpec(s);
    EXPECT_FALSE(st.ok()) << s.dump();
    return st.message();
  };
  EXPECT_NE(broken([](auto& s) { s["cdiVersion"] = "0.6.0"; }).find("cdiVersion"), std::string::npos);
  EXPECT_NE(broken([](auto& s) { s["kind"] = "vgpu"; }).find("kind"), std::string::npos);
  EXPECT_NE(broken([](auto& s) { s["kind"] = "gshare.io/v.gpu"; }).find("kind"), std::string::npos);
  EXPECT_NE(broken([](auto& s) { s["annotations"] = nlohmann::json::object(); }).find("annotations"),
            std::string::npos);
  EXPECT_NE(broken([](auto& s) { s["devices"][0]["name"] = "-x"; }).find("name"), std::string::npos);
  EXPECT_NE(broken([](auto& s) { s["devices"].push_back(s["devices"][0]); }).find("twice"), std::string::npos);
  EXPECT_NE(broken([](auto& s) { s["devices"][0]["containerEdits"]["env"].push_back("NOEQUALS"); }).find("env"),
            std::string::npos);
  EXPECT_NE(broken([](auto& s) { s["devices"][0]["containerEdits"]["mounts"][1]["hostPath"] = "run/gshare"; })
                .find("mounts[1].hostPath"),
            std::string::npos);
  EXPECT_NE(broken([](auto& s) { s["devices"][0]["containerEdits"]["netDevices"] = nlohmann::json::array(); })
                .find("netDevices"),
            std::string::npos);
  EXPECT_NE(broken([](auto& s) { s["devices"] = nlohmann::json::array(); }).find("devices"), std::string::npos);
}

TEST(CdiSpec, HostChecksRefuseADirectoryHoldingOperatorFiles) {
  TempDir dir;
  std::filesystem::create_directories(dir / "tenant");
  EXPECT_TRUE(CheckHost(Options(dir / "tenant")).ok());
  std::ofstream(dir / "tenant/control.sock") << "";
  const shm::Status st = CheckHost(Options(dir / "tenant"));
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("control.sock"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("operator's controls"), std::string::npos) << st.message();
  EXPECT_FALSE(CheckHost(Options(dir / "missing")).ok());
  SpecOptions not_elf = Options(dir / "tenant");
  not_elf.library = dir / "tenant/control.sock";
  EXPECT_NE(CheckHost(not_elf).message().find("not an ELF"), std::string::npos);
  EXPECT_FALSE(CheckOptions(Options("relative/dir")).ok());
  SpecOptions bad_name = Options("/run/gshare");
  bad_name.socket_name = "../control.sock";
  EXPECT_NE(CheckOptions(bad_name).message().find("--socket-name"), std::string::npos);
}

class CdiProgram : public ::testing::Test {
 protected:
  ToolResult Generate(std::vector<std::string> extra) {
    std::vector<std::string> argv = {CDI_BIN, "generate", "--socket-dir", dir / "tenant", "--library", PRELOAD_LIB};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunTool(dir, argv);
  }
  void SetUp() override { std::filesystem::create_directories(dir / "tenant"); }
  TempDir dir;
};

TEST_F(CdiProgram, WritesAValidSpecAndReplacesItsOwn) {
  const std::string out = dir / "cdi/gshare.json";  // its directory is created
  ToolResult r = Generate({"--output", out});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const nlohmann::json spec = nlohmann::json::parse(ReadFile(out), nullptr, false);
  ASSERT_TRUE(ValidateSpec(spec).ok()) << ReadFile(out);
  struct stat st{};
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  r = Generate({"--output", out});  // its own spec: replaced without --force
  EXPECT_EQ(r.code, 0) << r.err;
  // Nothing but the spec is left in the directory (the temporary file was renamed).
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "cdi")) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1u);
  r = Generate({"--output", "-"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out, nullptr, false), spec);
}

TEST_F(CdiProgram, KeepsASpecItDidNotWriteUnlessForced) {
  const std::string out = dir / "nvidia.json";
  const std::string foreign = R"({"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": []})";
  std::ofstream(out) << foreign;
  ToolResult r = Generate({"--output", out});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(out), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  EXPECT_EQ(ReadFile(out), foreign);
  r = Generate({"--output", out, "--force"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(WrittenByGshareCdi(nlohmann::json::parse(ReadFile(out), nullptr, false)));
}

TEST_F(CdiProgram, BadHostsAndUnwritableDirectoriesAreNamed) {
  ToolResult r = RunTool(dir, {CDI_BIN, "generate", "--socket-dir", dir / "nowhere", "--library", PRELOAD_LIB,
                               "--output", dir / "x.json"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(dir / "nowhere"), std::string::npos) << r.err;
  r = Generate({"--output", "/proc/gshare-cdi-test.json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/proc"), std::string::npos) << r.err;
  r = RunTool(dir, {CDI_BIN, "generate", "--socket-dir", dir / "tenant", "--library", dir / "tenant",
                    "--output", dir / "x.json"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--library"), std::string::npos) << r.err;
  r = RunTool(dir, {CDI_BIN, "generate", "--bogus"});
  EXPECT_EQ(r.code, 2);
}

}  // namespace
}  // namespace gshare::cdi
