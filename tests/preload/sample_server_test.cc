// The unmodified sample-cnn inference server (samples/) under libgshare.so on simcuda: its
// inference results (logits digest) are identical to a server without the shim, also after the
// vGPU was swapped out (the next request swaps it back in).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "child_process.h"

namespace gshare::test {
namespace {

// POSTs `body` to 127.0.0.1:port`path` (HTTP/1.1, Connection: close); returns the response body.
std::string HttpPost(int port, const std::string& path, const std::string& body) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {};
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                                "Content-Type: application/json\r\nConnection: close\r\n" +
                                "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                                body;
    size_t off = 0;
    while (off < request.size()) {
      const ssize_t n = send(fd, request.data() + off, request.size() - off, MSG_NOSIGNAL);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) response.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  const size_t header_end = response.find("\r\n\r\n");
  return header_end == std::string::npos ? std::string() : response.substr(header_end + 4);
}

// The value of the "digest" output in an OIP infer response ("" when absent): the only output
// whose data is a string array.
std::string Digest(const std::string& response) {
  if (response.find("\"digest\"") == std::string::npos) return {};
  const std::string marker = "\"data\":[\"";
  const size_t at = response.find(marker);
  if (at == std::string::npos) return {};
  const size_t begin = at + marker.size();
  const size_t end = response.find('"', begin);
  return end == std::string::npos ? std::string() : response.substr(begin, end - begin);
}

std::string InferBody() {
  std::string data;
  for (int i = 0; i < 2 * 3 * 32 * 32; ++i) {
    if (i > 0) data += ",";
    data += std::to_string(static_cast<double>((i * 37) % 101) / 101.0);
  }
  return R"({"inputs":[{"name":"image","shape":[2,3,32,32],"datatype":"FP32","data":[)" + data +
         "]}]}";
}

// Starts a sample server and waits for READY; returns its port (0 on failure).
int StartServer(ChildProcess* server) {
  std::string line;
  int port = 0;
  while (server->ReadLine(&line, std::chrono::seconds(120))) {
    if (line.rfind("PORT=", 0) == 0) port = std::stoi(line.substr(5));
    if (line.rfind("READY", 0) == 0) return port;
  }
  return 0;
}

TEST(SampleServer, InferenceIdenticalWithTheShimAndAcrossASwap) {
  static std::atomic<int> counter{0};
  const std::string tag = std::to_string(getpid()) + "-" + std::to_string(counter++);
  const std::string registry = "/gshare-preload-sample-" + tag;
  const auto dir = std::filesystem::temp_directory_path() / ("gshare-preload-sample-" + tag);
  std::filesystem::create_directories(dir);
  const std::string control = (dir / "control.sock").string();
  std::map<std::string, std::string> env = {
      {"LD_LIBRARY_PATH", GSHARE_SIMCUDA_DIR}, {"SIMCUDA_DEVICES", "1x2GiB"},
      {"SIMCUDA_REGISTRY", registry},          {"SIMCUDA_KERNELS", GSHARE_SIMCUDA_KERNELS},
      {"SIMCUDA_LINK_GBPS", "0"},              {"GSHARE_LOG_LEVEL", ""},
      {"GSHARE_LOG_FILE", ""},                 {"LD_PRELOAD", ""},
      {"GSHARE_CONTROL_SOCKET", ""}};
  auto shim_env = env;
  shim_env["LD_PRELOAD"] = GSHARE_PRELOAD_LIB;
  shim_env["GSHARE_VGPU_MEMORY"] = "512MiB";
  shim_env["GSHARE_CONTROL_SOCKET"] = control;
  {
    ChildProcess plain({GSHARE_SAMPLE_CNN, "--port", "0"}, env);
    ChildProcess shim({GSHARE_SAMPLE_CNN, "--port", "0"}, shim_env);
    const int plain_port = StartServer(&plain);
    const int shim_port = StartServer(&shim);
    ASSERT_GT(plain_port, 0);
    ASSERT_GT(shim_port, 0);
    const std::string body = InferBody();
    const std::string first = HttpPost(plain_port, "/v2/models/cnn/infer", body);
    const std::string expected = Digest(first);
    ASSERT_FALSE(expected.empty()) << first.substr(0, 300);
    EXPECT_EQ(Digest(HttpPost(shim_port, "/v2/models/cnn/infer", body)), expected);
    const std::string out = UnixRequest(control, "swap-out");
    EXPECT_EQ(out.rfind("ok bytes=", 0), 0u) << out;
    EXPECT_NE(UnixRequest(control, "stats").find("resident=0"), std::string::npos);
    EXPECT_EQ(Digest(HttpPost(shim_port, "/v2/models/cnn/infer", body)), expected);
    EXPECT_NE(UnixRequest(control, "stats").find("resident=1"), std::string::npos);
    kill(plain.pid(), SIGTERM);
    kill(shim.pid(), SIGTERM);
    EXPECT_EQ(plain.Wait(), 0) << plain.err();
    EXPECT_EQ(shim.Wait(), 0) << shim.err();
  }
  shm_unlink(registry.c_str());
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace gshare::test
