// The container tests' node (see container_node.h).
#include "container_node.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace gshare::container_test {
namespace {

namespace fs = std::filesystem;
using arbiter::testing::ExitCode;
using arbiter::testing::ReadFile;
using arbiter::testing::RunTool;
using arbiter::testing::Scaled;
using arbiter::testing::Spawn;
using arbiter::testing::WaitFor;

// Where podman reads CDI specs (it has no setting for it: /etc/cdi and /var/run/cdi).
constexpr const char* kCdiDir = "/var/run/cdi";
constexpr const char* kSampleInImage = "/usr/local/bin/sample-cnn";
constexpr const char* kCtlInImage = "/usr/local/bin/gshare-ctl";

std::string Which(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = dir + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// The sanitizer runtimes' settings in the test's own environment (scripts/sanitize.sh sets them),
// as podman options that set them in a container too, with the suppression files they name
// mounted (read-only, same path): a runtime that cannot read its suppressions aborts. Without
// them a sanitizer build's programs abort at start in the container: the CDI spec preloads the
// ASan-built libgshare.so ahead of the ASan runtime, which only verify_asan_link_order=0 (in
// ASAN_OPTIONS) allows. Nothing in a normal build (the variables are unset).
std::vector<std::string> SanitizerEnvironment() {
  std::vector<std::string> args;
  for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"}) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    args.push_back("-e");
    args.push_back(std::string(name) + "=" + value);
    std::stringstream options(value);  // key=value pairs separated by ':'
    std::string option;
    while (std::getline(options, option, ':')) {
      const std::string key = "suppressions=";
      if (option.rfind(key, 0) != 0) continue;
      const std::string file = option.substr(key.size());
      if (file.empty() || ::access(file.c_str(), R_OK) != 0) continue;
      args.push_back("-v");
      args.push_back(file + ":" + file + ":ro");
    }
  }
  return args;
}

// The shared objects `binary` needs, as ldd resolves them (absolute paths, the loader included),
// except the CUDA driver, which a container gets from its GPU device spec.
std::vector<std::string> SharedLibraries(const std::string& binary, const TempDir& dir, std::string* error) {
  const ToolResult r = RunTool(dir, {"/usr/bin/ldd", binary}, {std::string("LD_LIBRARY_PATH=") + SIMCUDA_LIB_DIR});
  if (r.code != 0) {
    *error = "ldd " + binary + " failed: " + r.out + r.err;
    return {};
  }
  std::vector<std::string> libs;
  std::stringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("libcuda.so") != std::string::npos) continue;
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    libs.push_back(line.substr(slash, line.find(' ', slash) - slash));
  }
  return libs;
}

bool CopyInto(const std::string& root, const std::string& from, const std::string& to, std::string* error) {
  std::error_code ec;
  fs::create_directories(fs::path(root + to).parent_path(), ec);
  fs::copy_file(from, root + to, fs::copy_options::overwrite_existing, ec);
  if (ec) *error = "copy " + from + " into the image: " + ec.message();
  return !ec;
}

bool WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return static_cast<bool>(out);
}

}  // namespace

ContainerNode::ContainerNode(NodeOptions options)
    : options_(std::move(options)),
      registry_("/gshare-container-" + std::to_string(::getpid())),
      rootfs_(dir_ / "rootfs"),
      gshare_spec_(std::string(kCdiDir) + "/gshare-container-test.json"),
      simcuda_spec_(std::string(kCdiDir) + "/simcuda-container-test.json") {
  std::error_code ec;
  fs::create_directories(dir_ / "simcuda", ec);
  for (const std::string& d : {tenant_dir(), operator_dir()}) {
    if (!fs::exists(d, ec)) made_dirs_.push_back(d);
    fs::create_directories(d, ec);
  }
  ::chmod(operator_dir().c_str(), 0700);
  if (options_.default_layout && fs::exists(tenant_dir() + "/arbiter.sock", ec)) {
    error_ = tenant_dir() + "/arbiter.sock exists: an arbiter may run with the default layout here";
    made_dirs_.clear();
    return;
  }
  if (PreparePodman() && PrepareImage() && WriteSpecs()) StartArbiter();
}

ContainerNode::~ContainerNode() {
  for (const std::string& name : containers_) {
    const ToolResult logs = Podman({"logs", name});
    WriteText(dir_ / (name + ".log"), logs.out + logs.err);
    (void)Podman({"rm", "-f", "-t", "0", name});
  }
  if (arbiter_ > 0) {
    ::kill(arbiter_, SIGKILL);
    (void)WaitFor(arbiter_, Scaled(std::chrono::seconds(30)));
  }
  if (options_.default_layout && error_.find("an arbiter may run") == std::string::npos) {
    for (const char* f : {"/run/gshare/arbiter.sock", "/run/gshare-operator/control.sock"}) ::unlink(f);
    for (int i = 0; i < arbiter_starts_; ++i) ::unlink((operator_dir() + "/events" + std::to_string(i)).c_str());
  }
  for (const std::string& d : made_dirs_) ::rmdir(d.c_str());
  ::unlink(gshare_spec_.c_str());
  ::unlink(simcuda_spec_.c_str());
  ::unlink((dir_ / "simcuda" + registry_).c_str());
  if (std::getenv("GSHARE_CONTAINER_KEEP") != nullptr) {  // for a post-mortem: keep the logs
    std::error_code ec;
    fs::create_directories(dir_.path() + "-kept", ec);
    for (const auto& e : fs::directory_iterator(dir_.path(), ec))
      if (e.is_regular_file()) fs::copy_file(e.path(), dir_.path() + "-kept/" + e.path().filename().string(), ec);
  }
}

std::string ContainerNode::Container(const std::string& name) const {
  return "gshare-test-" + std::to_string(::getpid()) + "-" + name;
}

ToolResult ContainerNode::Podman(const std::vector<std::string>& args, std::chrono::seconds timeout) {
  static const std::string podman = Which("podman");
  std::vector<std::string> argv = {podman};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunTool(dir_, argv, {"CONTAINERS_CONF=" + (dir_ / "containers.conf")}, timeout);
}

bool ContainerNode::PreparePodman() {
  if (Which("podman").empty() || Which("runc").empty()) {
    error_ = "podman and runc are needed (scripts/install-deps.sh installs them); PATH has " +
             std::string(Which("podman").empty() ? "no podman" : "no runc");
    return false;
  }
  if (::geteuid() != 0) {
    error_ = "the container tests run rootful podman (CDI specs in /var/run/cdi, checkpoints of "
             "other processes): run them as root";
    return false;
  }
  // The two settings these machines need: runc (crun cannot run on cgroup v1 hybrid hosts) and
  // ulimits within the hard limits (podman's defaults exceed them; root lacks CAP_SYS_RESOURCE).
  rlimit nofile{};
  ::getrlimit(RLIMIT_NOFILE, &nofile);
  const std::string n = std::to_string(nofile.rlim_max);
  WriteText(dir_ / "containers.conf", "[containers]\ndefault_ulimits = [\"nofile=" + n + ":" + n +
                                          "\", \"nproc=32768:32768\"]\n[engine]\nruntime = \"runc\"\n");
  const ToolResult info = Podman({"info", "--format", "{{.Host.OCIRuntime.Name}}"});
  if (info.code != 0 || info.out.find("runc") == std::string::npos) {
    error_ = "podman cannot run here (podman info: exit " + std::to_string(info.code) + "): " + info.out + info.err;
    return false;
  }
  // Another gshare.io/vgpu spec (a real installation's) would make the device ambiguous.
  for (const char* d : {"/etc/cdi", kCdiDir}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(d, ec)) {
      if (e.path() == gshare_spec_ || e.path() == simcuda_spec_) continue;
      if (ReadFile(e.path()).find("\"gshare.io/vgpu\"") != std::string::npos) {
        error_ = e.path().string() + " already defines gshare.io/vgpu: the tests' spec would be ambiguous";
        return false;
      }
    }
  }
  return true;
}

bool ContainerNode::PrepareImage() {
  // The programs, the libraries they and the injected libraries need, a shell and a few tools.
  const std::vector<std::pair<std::string, std::string>> programs = {
      {SAMPLE_BIN, kSampleInImage}, {CTL_BIN, kCtlInImage}, {"/bin/sh", "/bin/sh"},
      {"/bin/ls", "/bin/ls"},       {"/usr/bin/find", "/usr/bin/find"}};
  std::set<std::string> libs;
  for (const std::string& binary : {std::string(SAMPLE_BIN), std::string(CTL_BIN), std::string("/bin/sh"),
                                    std::string("/bin/ls"), std::string("/usr/bin/find"), std::string(PRELOAD_LIB),
                                    std::string(SIMCUDA_LIB_DIR) + "/libcuda.so.1", std::string(SIMCUDA_KERNELS_LIB)}) {
    for (const std::string& lib : SharedLibraries(binary, dir_, &error_)) libs.insert(lib);
    if (!error_.empty()) return false;
  }
  for (const auto& [from, to] : programs) {
    if (!CopyInto(rootfs_, from, to, &error_)) return false;
  }
  for (const std::string& lib : libs) {
    if (!CopyInto(rootfs_, fs::canonical(lib).string(), lib, &error_)) return false;
  }
  std::error_code ec;
  for (const char* d : {"/proc", "/sys", "/dev", "/tmp", "/run", "/etc"}) fs::create_directories(rootfs_ + d, ec);
  ::chmod((rootfs_ + "/tmp").c_str(), 01777);
  return true;
}

bool ContainerNode::WriteSpecs() {
  std::error_code ec;
  fs::create_directories(kCdiDir, ec);
  // gshare's spec, as an operator makes it.
  const ToolResult cdi = RunTool(dir_, {CDI_BIN, "generate", "--output", gshare_spec_, "--socket-dir", tenant_dir(),
                                        "--library", PRELOAD_LIB, "--force"});
  if (cdi.code != 0) {
    error_ = "gshare-cdi generate failed (exit " + std::to_string(cdi.code) + "): " + cdi.out + cdi.err;
    return false;
  }
  // The simulated GPUs' spec: the driver library and the node-wide directory.
  const std::string simcuda_dir = dir_ / "simcuda";
  const nlohmann::json spec = {
      {"cdiVersion", "0.5.0"},
      {"kind", "simcuda.gshare.io/gpu"},
      {"devices",
       {{{"name", "all"},
         {"containerEdits",
          {{"env",
            {"SIMCUDA_DEVICES=" + options_.devices, "SIMCUDA_REGISTRY=" + registry_, "SIMCUDA_DIR=" + simcuda_dir,
             "SIMCUDA_KERNELS=/opt/simcuda/libsimcuda_kernels.so", "SIMCUDA_LINK_GBPS=" + options_.link_gbps}},
           {"mounts",
            {{{"hostPath", std::string(SIMCUDA_LIB_DIR) + "/libcuda.so.1"},
              {"containerPath", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"},
              {"options", {"ro", "bind"}}},
             {{"hostPath", SIMCUDA_KERNELS_LIB},
              {"containerPath", "/opt/simcuda/libsimcuda_kernels.so"},
              {"options", {"ro", "bind"}}},
             {{"hostPath", simcuda_dir}, {"containerPath", simcuda_dir}, {"options", {"rw", "bind"}}}}}}}}}}};
  if (!WriteText(simcuda_spec_, spec.dump(2))) {
    error_ = "cannot write " + simcuda_spec_;
    return false;
  }
  return true;
}

bool ContainerNode::StartArbiter() {
  std::vector<std::string> argv = {ARBITER_BIN, "--event-ring", operator_dir() + "/events" + std::to_string(arbiter_starts_++),
                                   "--summary", dir_ / "summary.json", "--log-level", "debug"};
  if (!options_.default_layout) {  // else the arbiter's defaults: nothing said about the sockets
    for (const std::string& a : {std::string("--socket"), tenant_dir() + "/arbiter.sock", std::string("--control-socket"),
                                 control_socket()})
      argv.push_back(a);
  }
  argv.insert(argv.end(), options_.arbiter_args.begin(), options_.arbiter_args.end());
  const std::string log = dir_ / "arbiter.log";
  const size_t before = ReadFile(log).size();
  arbiter_ = Spawn(argv, "", log,
                   {std::string("LD_LIBRARY_PATH=") + SIMCUDA_LIB_DIR, "SIMCUDA_DEVICES=" + options_.devices,
                    "SIMCUDA_REGISTRY=" + registry_, "SIMCUDA_DIR=" + (dir_ / "simcuda"),
                    "SIMCUDA_LINK_GBPS=" + options_.link_gbps});
  const auto end = std::chrono::steady_clock::now() + Scaled(std::chrono::seconds(20));
  while (ReadFile(log).find("listening on", before) == std::string::npos) {
    int status = 0;
    if (arbiter_ <= 0 || ::waitpid(arbiter_, &status, WNOHANG) == arbiter_ || std::chrono::steady_clock::now() > end) {
      error_ = "the arbiter did not start: " + ReadFile(log).substr(before);
      if (arbiter_ > 0) ::kill(arbiter_, SIGKILL);
      arbiter_ = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

nlohmann::json ContainerNode::StopArbiter() {
  if (arbiter_ <= 0) return nullptr;
  ::kill(arbiter_, SIGTERM);
  const int status = WaitFor(arbiter_, Scaled(std::chrono::seconds(30)));
  arbiter_ = -1;
  if (ExitCode(status) != 0) return nullptr;
  return nlohmann::json::parse(ReadFile(dir_ / "summary.json"), nullptr, false);
}

std::string ContainerNode::ArbiterLog() const { return ReadFile(dir_ / "arbiter.log"); }

pid_t ContainerNode::StartSample(const std::string& name, int port, const std::string& quota, Gshare gshare,
                                 const std::vector<std::string>& env) {
  const std::string container = Container(name);
  // --rootfs: the first argument after the options is the image folder.
  std::vector<std::string> args = {"run", "-d", "--name", container, "--network", "host", "--rootfs",
                                   "--device", "simcuda.gshare.io/gpu=all"};
  for (const std::string& a : SanitizerEnvironment()) args.push_back(a);
  if (gshare == Gshare::kDevice) {
    args.push_back("--device");
    args.push_back("gshare.io/vgpu=vgpu");
  } else if (gshare == Gshare::kSocketFileMount) {
    for (const std::string& a :
         {std::string("-v"), tenant_dir() + "/arbiter.sock:/run/gshare-file/arbiter.sock", std::string("-v"),
          std::string(PRELOAD_LIB) + ":/opt/gshare/lib/libgshare.so:ro", std::string("-e"),
          std::string("LD_PRELOAD=/opt/gshare/lib/libgshare.so"), std::string("-e"),
          std::string("GSHARE_ARBITER_SOCKET=/run/gshare-file/arbiter.sock")})
      args.push_back(a);
  }
  if (gshare != Gshare::kNone) {
    for (const std::string& a : {std::string("-e"), "GSHARE_VGPU_MEMORY=" + quota, std::string("-e"),
                                 "GSHARE_FUNCTION=" + name, std::string("-e"), std::string("GSHARE_SLO_MS=500"),
                                 std::string("-e"), std::string("GSHARE_LOG_LEVEL=info")})
      args.push_back(a);
  }
  for (const std::string& kv : env) {
    args.push_back("-e");
    args.push_back(kv);
  }
  for (const std::string& a : {rootfs_ + ":O", std::string(kSampleInImage), std::string("--port"), std::to_string(port),
                               std::string("--threads"), std::string("8")})
    args.push_back(a);
  const ToolResult run = Podman(args);
  containers_.push_back(container);
  if (run.code != 0) {
    error_ = "podman run " + name + " failed (exit " + std::to_string(run.code) + "): " + run.out + run.err;
    return -1;
  }
  const ToolResult pid = Podman({"inspect", "-f", "{{.State.Pid}}", container});
  const pid_t host_pid = static_cast<pid_t>(std::atoi(pid.out.c_str()));
  if (host_pid <= 0) error_ = "podman inspect " + name + ": " + pid.out + pid.err;
  return host_pid > 0 ? host_pid : -1;
}

ToolResult ContainerNode::RunInContainer(const std::vector<std::string>& argv) {
  std::vector<std::string> args = {"run",      "--rm",     "--network", "host", "--rootfs", "--device",
                                   "gshare.io/vgpu=vgpu", "--device", "simcuda.gshare.io/gpu=all"};
  for (const std::string& a : SanitizerEnvironment()) args.push_back(a);
  args.push_back(rootfs_ + ":O");
  args.insert(args.end(), argv.begin(), argv.end());
  return Podman(args);
}

void ContainerNode::KillContainer(const std::string& name) { (void)Podman({"kill", "-s", "KILL", Container(name)}); }

std::string ContainerNode::ContainerLog(const std::string& name) {
  const ToolResult logs = Podman({"logs", Container(name)});
  return logs.out + logs.err;
}

std::string ContainerNode::Logs() {
  std::string all = "--- arbiter\n" + ArbiterLog();
  for (const std::string& name : containers_) {
    const ToolResult logs = Podman({"logs", name});
    all += "--- " + name + "\n" + logs.out + logs.err;
  }
  return all;
}

nlohmann::json ContainerNode::Ctl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {CTL_BIN, "--socket", control_socket(), "--json"};
  argv.insert(argv.end(), args.begin(), args.end());
  return nlohmann::json::parse(RunTool(dir_, argv).out, nullptr, false);
}

bool ContainerNode::WaitForClients(size_t n, std::chrono::seconds timeout) {
  const auto end = std::chrono::steady_clock::now() + Scaled(timeout);
  while (std::chrono::steady_clock::now() < end) {
    const nlohmann::json reply = Ctl({"clients"});
    if (reply.is_object() && reply.contains("clients") && reply["clients"].size() == n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

ToolResult ContainerNode::Load(const std::vector<std::pair<std::string, int>>& targets, int rate, int seconds) {
  std::vector<std::string> argv = {LOADGEN_BIN, "--rate", std::to_string(rate), "--duration", std::to_string(seconds),
                                   "--concurrency", "3", "--wait-ready", "60", "--timeout-s", "30"};
  for (const auto& [name, port] : targets) {
    argv.push_back("--target");
    argv.push_back(name + "=http://127.0.0.1:" + std::to_string(port) + "/v2/models/cnn@2000");
  }
  return RunTool(dir_, argv, {}, Scaled(std::chrono::seconds(seconds + 120)));
}

}  // namespace gshare::container_test
