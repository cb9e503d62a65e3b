// ToolsTest and FakeFunction (see tools_fixture.h).
#include "tools_fixture.h"

#include <thread>

namespace gshare::arbiter::testing {

FakeFunction::FakeFunction(const TempDir& dir, const std::string& socket, const std::string& name,
                           std::vector<std::string> args)
    : out_(dir / (name + ".out")), err_(dir / (name + ".err")) {
  std::vector<std::string> argv = {FAKE_FUNCTION_BIN, "--socket", socket, "--name", name};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_ = Spawn(argv, out_, err_);
}

FakeFunction::~FakeFunction() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    (void)WaitFor(pid_, std::chrono::seconds(30));
  }
}

int FakeFunction::Wait(std::chrono::seconds timeout) {
  const int code = ExitCode(WaitFor(pid_, timeout));
  pid_ = -1;
  return code;
}

void ToolsTest::StartArbiter(std::vector<std::string> extra) {
  std::vector<std::string> args = {"--gpu-memory", "1GiB", "--libcuda", "/nonexistent/libcuda.so.1",
                                   "--slice", "5ms"};
  args.insert(args.end(), extra.begin(), extra.end());
  arb = std::make_unique<ArbiterProcess>(dir, args);
  ASSERT_TRUE(arb->Start()) << ReadFile(arb->log());
}

ToolResult ToolsTest::Ctl(std::vector<std::string> args) {
  args.insert(args.begin(), {GSHARE_CTL_BIN, "--socket", control()});
  return RunTool(dir, args);
}

nlohmann::json ToolsTest::CtlJson(std::vector<std::string> args) {
  args.insert(args.begin(), "--json");
  const ToolResult r = Ctl(args);
  return nlohmann::json::parse(r.out, nullptr, false);
}

bool ToolsTest::WaitForClients(const std::function<bool(const nlohmann::json&)>& pred,
                               std::chrono::seconds timeout) {
  return WaitForReply("clients", [&pred](const nlohmann::json& r) { return pred(r["clients"]); }, timeout);
}

bool ToolsTest::WaitForReply(const std::string& command,
                             const std::function<bool(const nlohmann::json&)>& pred,
                             std::chrono::seconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    const nlohmann::json r = CtlJson({command});
    if (r.is_object() && r.value("ok", false) && pred(r)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace gshare::arbiter::testing
