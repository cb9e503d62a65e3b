// Isolation between tenants and between tenants and the arbiter, with real processes: the test
// (root) starts the real gshare-arbiter and isolation_helper processes, some of which drop to
// other uids (65534, 65533) before acting. See docs/security.md for the threat model.
//   - another uid cannot register through an owner-only socket, nor past the allow-list (which
//     honours supplementary groups);
//   - a shim's debug control socket is owner-only whatever the umask and refuses other uids;
//   - a tenant's channel is sealed, and no other uid can open it (tenant's or arbiter's /proc);
//   - a swapped-out tenant's bytes (the shim's host copy) are in memory no other uid can read;
//   - device memory a new tenant allocates never shows a previous tenant's bytes (simcuda and
//     the shim: the test proves it, both after the first tenant exits and while it lives).
//   - the arbiter's socket files are born with their configured modes whatever the umask, are
//     never placed in a directory another uid could swap them in, and a live socket of another
//     uid at their path is reported with that uid (issue 16, items 16-17);
//   - the event ring is owner-only unless the operator names a mode and a group (item 14).
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

constexpr uint32_t kPattern = 0x5EC12E7A;
constexpr char kPatternHex[] = "5EC12E7A";

// A fresh directory /tmp/gshare-isolation-<pid>-<n>, traversable by every uid (other uids must
// reach the sockets inside), removed on destruction.
class TempDir {
 public:
  TempDir() {
    static int n = 0;
    path_ = "/tmp/gshare-isolation-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
    std::filesystem::remove_all(path_);
    std::filesystem::create_directory(path_);
    ::chmod(path_.c_str(), 0755);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A child process with its stdin and stdout on pipes (stderr inherited: it shows in the log).
struct Child {
  pid_t pid = -1;
  int in = -1;   // write end of the child's stdin
  int out = -1;  // read end of the child's stdout

  Child() = default;
  Child(Child&& o) noexcept : pid(o.pid), in(o.in), out(o.out) { o.pid = o.in = o.out = -1; }
  Child& operator=(Child&&) = delete;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (in >= 0) ::close(in);
    if (out >= 0) ::close(out);
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  void CloseStdin() {
    if (in >= 0) ::close(in);
    in = -1;
  }
  // One line of the child's stdout (without the newline); "" on EOF or after the safety timeout.
  std::string ReadLine(std::chrono::seconds timeout = 60s) {
    std::string line;
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      pollfd p{out, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char ch = 0;
      if (::read(out, &ch, 1) != 1) break;
      if (ch == '\n') return line;
      line.push_back(ch);
    }
    return line;
  }
  // Everything left on stdout, then the exit code (-1 - signal; -100 on the safety timeout).
  int Wait(std::string* output = nullptr, std::chrono::seconds timeout = 120s) {
    CloseStdin();
    std::string all;
    for (std::string l = ReadLine(timeout); !l.empty(); l = ReadLine(timeout)) all += l + "\n";
    if (output) *output = all;
    const auto end = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > end) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        pid = -1;
        return -100;
      }
      std::this_thread::sleep_for(2ms);
    }
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1 - WTERMSIG(status);
  }
};

Child Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
            const std::string& stderr_file = "") {
  int in[2];
  int out[2];
  Child c;
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return c;
  c.pid = ::fork();
  if (c.pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    if (!stderr_file.empty()) {
      const int fd = ::open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);  // a daemon's log, whichever stream it uses
        ::dup2(fd, 2);
      }
    }
    for (const auto& kv : env) ::putenv(const_cast<char*>(kv.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  c.in = in[1];
  c.out = out[0];
  return c;
}

// The helper links libcuda.so.1 (the toolkit's stub at link time): every run gets simcuda's.
std::vector<std::string> HelperEnv() { return {std::string("LD_LIBRARY_PATH=") + SIMCUDA_DIR}; }

// Runs the helper (as `uid` when >= 0) to completion; returns its exit code and stdout.
int RunHelper(const std::vector<std::string>& args, int uid = -1, std::string* output = nullptr,
              const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv{ISOLATION_HELPER};
  if (uid >= 0) {
    argv.push_back("--uid");
    argv.push_back(std::to_string(uid));
  }
  argv.insert(argv.end(), args.begin(), args.end());
  Child c = Spawn(argv, env.empty() ? HelperEnv() : env);
  return c.Wait(output);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Entries of a /proc directory (fd, map_files) as full paths.
std::vector<std::string> ProcEntries(pid_t pid, const std::string& dir) {
  std::vector<std::string> out;
  const std::string base = "/proc/" + std::to_string(pid) + "/" + dir;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(base, ec))
    out.push_back(e.path().string());
  return out;
}

// The daemon under test: GSHARE_TEST_ARBITER_BIN (another build, e.g. an older commit's, to
// show what a fix changed) or this build's.
std::string ArbiterBin() {
  const char* other = std::getenv("GSHARE_TEST_ARBITER_BIN");
  return other != nullptr && *other != '\0' ? other : ARBITER_BIN;
}

// The real gshare-arbiter with a fixed 1 GiB GPU (no driver), its socket in `dir`.
class Arbiter {
 public:
  Arbiter(const TempDir& dir, std::vector<std::string> extra)
      : socket_(dir / "arbiter.sock"), log_(dir / "arbiter.log"), child_(Start(extra)) {
    const auto end = std::chrono::steady_clock::now() + 30s;
    while (ReadFile(log_).find("listening on") == std::string::npos &&
           std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(5ms);
    }
  }
  bool ready() const { return ReadFile(log_).find("listening on") != std::string::npos; }
  const std::string& socket() const { return socket_; }
  std::string log() const { return ReadFile(log_); }
  pid_t pid() const { return child_.pid; }

 private:
  Child Start(const std::vector<std::string>& extra) const {
    std::vector<std::string> argv = {ArbiterBin(), "--socket",     socket_,     "--gpu-memory",
                                     "1GiB",       "--libcuda",    "/nonexistent/libcuda.so.1",
                                     "--log-level", "debug"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Spawn(argv, {}, log_);
  }

  std::string socket_;
  std::string log_;
  Child child_;
};

class IsolationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::getuid() != 0) GTEST_SKIP() << "needs root to start processes of other uids";
  }
};

TEST_F(IsolationTest, OwnerOnlySocketRefusesOtherUids) {
  TempDir dir;
  Arbiter arbiter(dir, {"--socket-mode", "0600"});
  ASSERT_TRUE(arbiter.ready()) << arbiter.log();
  std::string out;
  EXPECT_EQ(RunHelper({"register", arbiter.socket()}, 65534, &out), 6) << out;
  EXPECT_NE(out.find("Permission denied"), std::string::npos) << out;
  // The owner (root, the arbiter's uid) can: the refusal above is the file mode.
  EXPECT_EQ(RunHelper({"register", arbiter.socket()}, -1, &out), 0) << out;
}

TEST_F(IsolationTest, AllowListRefusesUnlistedUids) {
  TempDir dir;
  Arbiter arbiter(dir, {"--socket-mode", "0666", "--allowed-uids", "0,65533"});
  ASSERT_TRUE(arbiter.ready()) << arbiter.log();
  std::string out;
  EXPECT_EQ(RunHelper({"register", arbiter.socket()}, 65534, &out), 3) << out;
  EXPECT_NE(out.find("uid 65534 gid 65534 is not allowed to register"), std::string::npos) << out;
  EXPECT_EQ(RunHelper({"register", arbiter.socket()}, 65533, &out), 0) << out;
  EXPECT_EQ(RunHelper({"register", arbiter.socket()}, -1, &out), 0) << out;

  TempDir dir2;
  Arbiter by_group(dir2, {"--socket-mode", "0666", "--allowed-gids", "65534"});
  ASSERT_TRUE(by_group.ready()) << by_group.log();
  EXPECT_EQ(RunHelper({"register", by_group.socket()}, 65534, &out), 0) << out;
  EXPECT_EQ(RunHelper({"register", by_group.socket()}, 65533, &out), 3) << out;
}

// allowed_gids matches supplementary groups too (SO_PEERGROUPS), not only the primary gid.
TEST_F(IsolationTest, AllowListAcceptsSupplementaryGroups) {
  TempDir dir;
  Arbiter arbiter(dir, {"--socket-mode", "0666", "--allowed-gids", "4242"});
  ASSERT_TRUE(arbiter.ready()) << arbiter.log();
  std::string out;
  // uid/gid 65534 with supplementary group 4242: allowed.
  EXPECT_EQ(RunHelper({"--groups", "100,4242", "register", arbiter.socket()}, 65534, &out), 0)
      << out;
  // The same uid without that group (only another supplementary group): refused.
  EXPECT_EQ(RunHelper({"--groups", "100", "register", arbiter.socket()}, 65534, &out), 3) << out;
  EXPECT_NE(out.find("uid 65534 gid 65534 is not allowed to register"), std::string::npos) << out;
  EXPECT_EQ(RunHelper({"register", arbiter.socket()}, 65533, &out), 3) << out;
}

TEST_F(IsolationTest, ChannelIsSealedAndUnreachableForOtherUids) {
  TempDir dir;
  Arbiter arbiter(dir, {"--socket-mode", "0666"});
  ASSERT_TRUE(arbiter.ready()) << arbiter.log();
  Child tenant = Spawn({ISOLATION_HELPER, "--uid", "65534", "hold-registration", arbiter.socket()},
                       HelperEnv());
  const std::string line = tenant.ReadLine();
  int fd = -1;
  int seals = 0;
  int truncate_errno = 0;
  ASSERT_EQ(std::sscanf(line.c_str(), "fd=%d seals=%d truncate_errno=%d", &fd, &seals,
                        &truncate_errno), 3) << line;
  // Sealed against resizing (and against new seals) before the fd left the arbiter.
  EXPECT_EQ(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
            F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) << line;
  EXPECT_EQ(truncate_errno, EPERM) << line;

  // Every route to the channel from a third uid: the tenant's fd, the arbiter's fds and
  // mappings. Root can open the tenant's (so the paths are right and the refusals are the
  // uid checks).
  const std::string tenant_fd = "/proc/" + std::to_string(tenant.pid) + "/fd/" + std::to_string(fd);
  {
    const int mine = ::open(tenant_fd.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(mine, 0) << tenant_fd;
    if (mine >= 0) ::close(mine);
  }
  std::vector<std::string> targets{tenant_fd};
  for (const auto& p : ProcEntries(arbiter.pid(), "fd")) targets.push_back(p);
  const auto maps = ProcEntries(arbiter.pid(), "map_files");
  EXPECT_FALSE(maps.empty());
  for (const auto& p : maps) targets.push_back(p);
  targets.push_back("/proc/" + std::to_string(arbiter.pid()) + "/mem");
  targets.push_back("/proc/" + std::to_string(tenant.pid) + "/mem");
  std::vector<std::string> args{"try-open"};
  args.insert(args.end(), targets.begin(), targets.end());
  std::string out;
  EXPECT_EQ(RunHelper(args, 65533, &out), 0) << out;
  EXPECT_EQ(tenant.Wait(), 0);
}

// simcuda (and, for the shim cases, libgshare.so) for the tenants of one test.
class CudaEnv {
 public:
  explicit CudaEnv(const TempDir& dir)
      : registry_("/gshare-isolation-" + std::to_string(::getpid()) + "-" +
                  std::to_string(counter_++)),
        control_(dir / "control.sock") {}
  ~CudaEnv() { ::shm_unlink(registry_.c_str()); }
  std::vector<std::string> Direct() const {
    return {std::string("LD_LIBRARY_PATH=") + SIMCUDA_DIR, "SIMCUDA_DEVICES=1x1GiB",
            "SIMCUDA_REGISTRY=" + registry_, "SIMCUDA_LINK_GBPS=0"};
  }
  std::vector<std::string> Shim(bool control) const {
    auto env = Direct();
    env.push_back(std::string("LD_PRELOAD=") + PRELOAD_LIB);
    env.push_back("GSHARE_VGPU_MEMORY=512MiB");
    if (control) env.push_back("GSHARE_CONTROL_SOCKET=" + control_);
    return env;
  }
  const std::string& control() const { return control_; }

 private:
  static inline int counter_ = 0;
  std::string registry_;
  std::string control_;
};

// Sends one line to the shim's control socket; returns the reply line.
std::string Control(const std::string& path, const std::string& command) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  std::string reply;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string line = command + "\n";
    if (::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size())) {
      char ch = 0;
      while (::read(fd, &ch, 1) == 1 && ch != '\n') reply.push_back(ch);
    }
  }
  ::close(fd);
  return reply;
}

// Whether `pid`'s readable memory contains 64 bytes of kPattern (read as root).
bool MemoryHoldsPattern(pid_t pid) {
  const std::string base = "/proc/" + std::to_string(pid);
  std::ifstream maps(base + "/maps");
  const int mem = ::open((base + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (mem < 0) return false;
  std::vector<uint32_t> needle(16, kPattern);
  std::vector<char> buf(1 << 20);
  bool found = false;
  std::string line;
  while (!found && std::getline(maps, line)) {
    unsigned long lo = 0;
    unsigned long hi = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r') continue;
    if (line.find("[vvar]") != std::string::npos || line.find("[vsyscall]") != std::string::npos)
      continue;
    // A sanitizer runtime's shadow (terabytes of readable, mostly unbacked address space: the
    // scan never ended under ASan and TSan), never the tenant's swapped-out copy (64 MiB here).
    if (hi - lo > (64ul << 30)) continue;
    for (unsigned long at = lo; at < hi && !found; at += buf.size()) {
      const size_t want = std::min<unsigned long>(buf.size(), hi - at);
      const ssize_t n = ::pread(mem, buf.data(), want, static_cast<off_t>(at));
      if (n <= 0) break;
      found = std::search(buf.begin(), buf.begin() + n, reinterpret_cast<const char*>(needle.data()),
                          reinterpret_cast<const char*>(needle.data()) + 64) != buf.begin() + n;
    }
  }
  ::close(mem);
  return found;
}

TEST_F(IsolationTest, SwappedOutBytesAreUnreadableForOtherUids) {
  TempDir dir;
  CudaEnv cuda(dir);
  Child tenant = Spawn({ISOLATION_HELPER, "hold-device", "64", kPatternHex}, cuda.Shim(true));
  ASSERT_EQ(tenant.ReadLine(), "ready");
  const std::string reply = Control(cuda.control(), "swap-out");
  ASSERT_EQ(reply.rfind("ok bytes=", 0), 0u) << reply;
  // The swapped-out copy is in the tenant's host memory (root sees it) ...
  EXPECT_TRUE(MemoryHoldsPattern(tenant.pid));
  // ... and another uid reaches none of it: not its memory, not its fds, not its mappings.
  std::vector<std::string> args{"try-open", "/proc/" + std::to_string(tenant.pid) + "/mem"};
  for (const auto& p : ProcEntries(tenant.pid, "fd")) args.push_back(p);
  for (const auto& p : ProcEntries(tenant.pid, "map_files")) args.push_back(p);
  ASSERT_GT(args.size(), 3u);
  std::string out;
  EXPECT_EQ(RunHelper(args, 65534, &out), 0) << out;
  // Nor the tenant's control socket (another uid must not be able to swap or inspect it).
  struct stat st {};
  ASSERT_EQ(::stat(cuda.control().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0002, 0u) << "control socket is world-writable: mode " << std::oct
                                   << (st.st_mode & 0777);
  // The tenant swaps back in on its next access and finds its data intact.
  EXPECT_EQ(tenant.Wait(), 0);
}

// The shim's debug control socket is owner-only whatever the umask, and refuses a peer of
// another uid even when the file mode would let it connect (SO_PEERCRED).
TEST_F(IsolationTest, ShimControlSocketIsOwnerOnly) {
  TempDir dir;
  // A directory the tenant (uid 65534) can create its socket in, like /tmp.
  const std::string home = dir / "tenant";
  ASSERT_TRUE(std::filesystem::create_directory(home));
  ASSERT_EQ(::chmod(home.c_str(), 01777), 0);
  CudaEnv cuda(dir);
  auto env = cuda.Shim(false);
  const std::string control = home + "/control.sock";
  env.push_back("GSHARE_CONTROL_SOCKET=" + control);
  const mode_t old_umask = ::umask(0);  // the tenant would create a 0777 socket if the mode followed it
  Child tenant =
      Spawn({ISOLATION_HELPER, "--uid", "65534", "hold-device", "16", kPatternHex}, env);
  ::umask(old_umask);
  ASSERT_EQ(tenant.ReadLine(), "ready");
  struct stat st {};
  ASSERT_EQ(::lstat(control.c_str(), &st), 0) << control;
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_uid, 65534u);
  EXPECT_EQ(st.st_mode & 07777, 0600u) << std::oct << (st.st_mode & 07777);
  std::string out;
  // Another uid cannot connect (the file mode) ...
  EXPECT_EQ(RunHelper({"control", control, "stats"}, 65533, &out), 6) << out;
  // ... and, were the mode opened up, is refused by the server (peer credentials).
  ASSERT_EQ(::chmod(control.c_str(), 0666), 0);
  EXPECT_EQ(RunHelper({"control", control, "swap-out"}, 65533, &out), 0) << out;
  EXPECT_NE(out.find("reply: error permission denied"), std::string::npos) << out;
  // The owner is served.
  EXPECT_EQ(RunHelper({"control", control, "stats"}, 65534, &out), 0) << out;
  EXPECT_NE(out.find("reply: ok "), std::string::npos) << out;
  EXPECT_EQ(tenant.Wait(), 0);
}

// Runs gshare-arbiter (no driver, 1 GiB) to its exit with `args`; returns its exit code (the
// safety timeout kills it: -100) and its log in `log`. For starts that must be refused.
int RunArbiterToExit(const TempDir& dir, std::vector<std::string> args, std::string* log) {
  std::vector<std::string> argv = {ArbiterBin(), "--gpu-memory", "1GiB", "--libcuda",
                                   "/nonexistent/libcuda.so.1"};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string log_file = dir / "refused.log";
  std::filesystem::remove(log_file);
  Child c = Spawn(argv, {}, log_file);
  const int code = c.Wait(nullptr, 30s);
  *log = ReadFile(log_file);
  return code;
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 07777;
}

// Item 16: the sockets' modes are set on the socket before bind (never by chmod on a path
// another uid could have swapped), and are exact whatever the umask: narrower (umask 0 would
// leave 0777) and wider (umask 077 would leave 0600) than the umask.
TEST_F(IsolationTest, ArbiterSocketModesAreExactWhateverTheUmask) {
  TempDir dir;
  const mode_t old_umask = ::umask(0);
  {
    Arbiter arbiter(dir, {"--socket-mode", "0600", "--control-socket-mode", "0600"});
    ::umask(old_umask);
    ASSERT_TRUE(arbiter.ready()) << arbiter.log();
    EXPECT_EQ(ModeOf(arbiter.socket()), 0600u) << std::oct << ModeOf(arbiter.socket());
    EXPECT_EQ(ModeOf(dir / "control.sock"), 0600u) << std::oct << ModeOf(dir / "control.sock");
  }
  TempDir dir2;
  ::umask(077);
  Arbiter arbiter(dir2, {"--socket-mode", "0666", "--control-socket-mode", "0660"});
  ::umask(old_umask);
  ASSERT_TRUE(arbiter.ready()) << arbiter.log();
  EXPECT_EQ(ModeOf(arbiter.socket()), 0666u) << std::oct << ModeOf(arbiter.socket());
  EXPECT_EQ(ModeOf(dir2 / "control.sock"), 0660u) << std::oct << ModeOf(dir2 / "control.sock");
  std::string out;
  EXPECT_EQ(RunHelper({"register", arbiter.socket()}, 65534, &out), 0) << out;
}

// Item 16: in a directory another uid can write without the sticky bit (or that another uid
// owns), that uid can rename a symlink over the fresh socket between bind and chmod: root then
// made a root-owned 0600 file 0666. Such directories are refused, naming the directory and why;
// a sticky one (like /tmp) is fine.
TEST_F(IsolationTest, SocketDirectoriesOtherUidsCouldSwapFilesInAreRefused) {
  TempDir dir;
  std::string log;
  const std::string open_dir = dir / "open";
  ASSERT_TRUE(std::filesystem::create_directory(open_dir));
  ASSERT_EQ(::chmod(open_dir.c_str(), 0777), 0);
  EXPECT_EQ(RunArbiterToExit(dir, {"--socket", open_dir + "/arbiter.sock"}, &log), 2) << log;
  EXPECT_NE(log.find("socket: directory '" + open_dir + "'"), std::string::npos) << log;
  EXPECT_NE(log.find("without the sticky bit"), std::string::npos) << log;
  EXPECT_FALSE(std::filesystem::exists(open_dir + "/arbiter.sock"));

  const std::string group_dir = dir / "group";
  ASSERT_TRUE(std::filesystem::create_directory(group_dir));
  ASSERT_EQ(::chmod(group_dir.c_str(), 0775), 0);
  EXPECT_EQ(RunArbiterToExit(dir, {"--socket", group_dir + "/arbiter.sock"}, &log), 2) << log;
  EXPECT_NE(log.find("writable by its group"), std::string::npos) << log;

  const std::string theirs = dir / "theirs";
  ASSERT_TRUE(std::filesystem::create_directory(theirs));
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
  EXPECT_EQ(RunArbiterToExit(dir, {"--socket", theirs + "/arbiter.sock"}, &log), 2) << log;
  EXPECT_NE(log.find("'" + theirs + "' is owned by uid 65534"), std::string::npos) << log;

  // The control socket is checked the same way (the registration socket's directory is fine).
  EXPECT_EQ(RunArbiterToExit(dir, {"--socket", dir / "arbiter.sock", "--control-socket",
                                   open_dir + "/control.sock"},
                             &log),
            2)
      << log;
  EXPECT_NE(log.find("control_socket: directory '" + open_dir + "'"), std::string::npos) << log;
  // And the event ring's directory.
  EXPECT_EQ(RunArbiterToExit(dir, {"--socket", dir / "arbiter.sock", "--event-ring",
                                   open_dir + "/events"},
                             &log),
            2)
      << log;
  EXPECT_NE(log.find("event_ring: directory '" + open_dir + "'"), std::string::npos) << log;

  TempDir sticky;
  ASSERT_EQ(::chmod((sticky / ".").c_str(), 01777), 0);
  Arbiter arbiter(sticky, {});
  EXPECT_TRUE(arbiter.ready()) << arbiter.log();
}

// Item 17: a live socket of another uid at the arbiter's path (an impostor tenants would talk
// to) makes the arbiter refuse to start with a message naming that uid and the path; the
// impostor's socket is not replaced (the operator must find out who put it there). The same
// for the control socket.
TEST_F(IsolationTest, ImpostorSocketIsReportedWithItsOwner) {
  TempDir dir;
  const std::string shared = dir / "shared";  // like /tmp: anyone may create files there
  ASSERT_TRUE(std::filesystem::create_directory(shared));
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  const std::string path = shared + "/arbiter.sock";
  Child impostor =
      Spawn({ISOLATION_HELPER, "--uid", "65534", "listen", path, "seqpacket"}, HelperEnv());
  ASSERT_EQ(impostor.ReadLine(), "listening");
  std::string log;
  EXPECT_EQ(RunArbiterToExit(dir, {"--socket", path}, &log), 2) << log;
  EXPECT_NE(log.find("'" + path + "' is a live socket owned by uid 65534"), std::string::npos)
      << log;
  EXPECT_NE(log.find("listened on by pid " + std::to_string(impostor.pid) + " (uid 65534)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("not replaced"), std::string::npos) << log;
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);  // still the impostor's

  const std::string control = shared + "/control.sock";
  Child control_impostor =
      Spawn({ISOLATION_HELPER, "--uid", "65534", "listen", control, "stream"}, HelperEnv());
  ASSERT_EQ(control_impostor.ReadLine(), "listening");
  EXPECT_EQ(RunArbiterToExit(dir, {"--socket", dir / "arbiter.sock", "--control-socket", control},
                             &log),
            2)
      << log;
  EXPECT_NE(log.find("control_socket: '" + control + "' is a live socket owned by uid 65534"),
            std::string::npos)
      << log;
  EXPECT_EQ(impostor.Wait(), 0);
  EXPECT_EQ(control_impostor.Wait(), 0);
}

// Item 14: the event ring names every tenant's functions, pids and uids. It is owner-only by
// default (it was 0644: any uid could read it); event_ring_mode / event_ring_group open it to
// one group, and only to it.
TEST_F(IsolationTest, EventRingIsOwnerOnlyUnlessAGroupIsNamed) {
  TempDir dir;
  {
    Arbiter arbiter(dir, {"--event-ring", dir / "events"});
    ASSERT_TRUE(arbiter.ready()) << arbiter.log();
    EXPECT_EQ(ModeOf(dir / "events"), 0600u) << std::oct << ModeOf(dir / "events");
    std::string out;
    EXPECT_EQ(RunHelper({"try-open", dir / "events"}, 65534, &out), 0) << out;
  }
  TempDir dir2;
  Arbiter arbiter(dir2, {"--event-ring", dir2 / "events", "--event-ring-mode", "0640",
                         "--event-ring-group", "4242"});
  ASSERT_TRUE(arbiter.ready()) << arbiter.log();
  struct stat st {};
  ASSERT_EQ(::stat((dir2 / "events").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u) << std::oct << (st.st_mode & 07777);
  EXPECT_EQ(st.st_gid, 4242u);
  std::string out;
  EXPECT_EQ(RunHelper({"--groups", "4242", "try-open", dir2 / "events"}, 65534, &out), 1) << out;
  EXPECT_EQ(RunHelper({"try-open", dir2 / "events"}, 65534, &out), 0) << out;
}

// Device memory of a tenant that exited (or still runs) never shows up in a new tenant's
// allocation of the same size on the same simulated GPU: with simcuda alone and under the shim.
class FreshMemoryTest : public IsolationTest, public ::testing::WithParamInterface<bool> {};

TEST_P(FreshMemoryTest, NewTenantNeverSeesPreviousTenantsBytes) {
  TempDir dir;
  CudaEnv cuda(dir);
  const auto env = GetParam() ? cuda.Shim(false) : cuda.Direct();
  std::string out;
  ASSERT_EQ(RunHelper({"device-write", "64", kPatternHex}, -1, &out, env), 0) << out;
  EXPECT_EQ(RunHelper({"device-read", "64", kPatternHex}, -1, &out, env), 0) << out;
  EXPECT_NE(out.find("pattern_words=0 nonzero_bytes=0"), std::string::npos) << out;
  // While the first tenant still holds its memory, too.
  Child holder = Spawn({ISOLATION_HELPER, "hold-device", "64", kPatternHex}, env);
  ASSERT_EQ(holder.ReadLine(), "ready");
  EXPECT_EQ(RunHelper({"device-read", "64", kPatternHex}, -1, &out, env), 0) << out;
  EXPECT_NE(out.find("pattern_words=0 nonzero_bytes=0"), std::string::npos) << out;
  EXPECT_EQ(holder.Wait(), 0);
}

INSTANTIATE_TEST_SUITE_P(SimcudaAndShim, FreshMemoryTest, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "Shim" : "Simcuda"; });

}  // namespace
