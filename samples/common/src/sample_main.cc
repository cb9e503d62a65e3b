// The samples' shared main program (see sample_main.h).
#include "sample/sample_main.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "sample/cuda_check.h"
#include "sample/oip_server.h"

namespace sample {
namespace {

struct Options {
  int port = 8000;
  std::string host = "127.0.0.1";
  int device = 0;
  uint64_t seed = 1;
  std::string name;
  int threads = 64;
};

// Retains a device's primary context for the lifetime of the object.
class PrimaryContext {
 public:
  explicit PrimaryContext(CUdevice dev) : dev_(dev) {}
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  ~PrimaryContext() {
    if (ctx_ != nullptr) {
      (void)cuCtxSetCurrent(nullptr);
      (void)cuDevicePrimaryCtxRelease(dev_);
    }
  }
  CUresult Open() {
    const CUresult r = cuDevicePrimaryCtxRetain(&ctx_, dev_);
    if (r != CUDA_SUCCESS) {
      ctx_ = nullptr;
      return r;
    }
    return cuCtxSetCurrent(ctx_);
  }
  CUcontext get() const { return ctx_; }

 private:
  CUdevice dev_;
  CUcontext ctx_ = nullptr;
};

int Serve(const Options& o, const std::string& kind, Model* model, CUcontext ctx,
          const sigset_t& signals) {
  OipServer server(o.name, model, ctx, o.seed, o.threads);
  const int port = server.Bind(o.host, o.port);
  if (port < 0) {
    spdlog::error("{}: cannot listen on {}:{}", kind, o.host, o.port);
    return 1;
  }
  std::printf("PORT=%d\n", port);
  std::fflush(stdout);
  std::thread listener([&server] { server.Listen(); });

  const auto start = std::chrono::steady_clock::now();
  const std::string error = model->Load(o.seed);
  if (!error.empty()) {
    spdlog::error("{}: loading the model failed: {}", kind, error);
    server.Stop();
    listener.join();
    return 1;
  }
  const double load_ms = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - start).count();
  server.SetReady();
  std::printf("READY name=%s weight_bytes=%llu load_ms=%.0f\n", o.name.c_str(),
              static_cast<unsigned long long>(model->weight_bytes()), load_ms);
  std::fflush(stdout);
  spdlog::info("{} '{}' serving on {}:{} ({} MiB of weights, loaded in {:.0f} ms)", kind, o.name,
               o.host, port, model->weight_bytes() >> 20, load_ms);

  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("{} '{}': signal {}, shutting down", kind, o.name, sig);
  server.Stop();
  listener.join();
  return 0;
}

}  // namespace

int RunSample(int argc, char** argv, const std::string& kind,
              const std::function<std::unique_ptr<Model>()>& make) {
  Options o;
  o.name = kind;
  CLI::App app{"sample-" + kind + ": a " + kind +
               " inference server (Open Inference Protocol over HTTP, CUDA driver API)"};
  app.add_option("--port", o.port, "TCP port; 0 picks a free one (printed as PORT=N)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--host", o.host, "address to listen on");
  app.add_option("--device", o.device, "CUDA device ordinal")->check(CLI::NonNegativeNumber);
  app.add_option("--seed", o.seed, "seed of the deterministic weights");
  app.add_option("--name", o.name, "model name served under /v2/models/NAME");
  app.add_option("--threads", o.threads, "HTTP handler threads")->check(CLI::Range(1, 256));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help: 0; every usage error: 2
  }
  if (o.name.empty() || o.name.find('/') != std::string::npos) {
    std::fprintf(stderr, "--name must be non-empty and contain no '/'\n");
    return 2;
  }
  spdlog::set_default_logger(spdlog::stderr_color_mt("sample-" + kind));

  // Signals are handled synchronously by the main thread (sigwait); every thread started from
  // here on inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  CallChecker cu;
  CUdevice dev = 0;
  if (!cu.Ok(cuInit(0), "cuInit") || !cu.Ok(cuDeviceGet(&dev, o.device), "cuDeviceGet")) {
    spdlog::error("{}: {}", kind, cu.error());
    return 1;
  }
  PrimaryContext ctx(dev);
  if (!cu.Ok(ctx.Open(), "cuDevicePrimaryCtxRetain")) {
    spdlog::error("{}: {}", kind, cu.error());
    return 1;
  }
  std::unique_ptr<Model> model = make();
  const int status = Serve(o, kind, model.get(), ctx.get(), signals);
  (void)cuCtxSetCurrent(ctx.get());
  model.reset();  // frees device memory while the context is alive
  return status;
}

}  // namespace sample
