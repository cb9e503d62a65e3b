// The kubelet side of the device plugin API for tests: kubelet's Registration service on
// <dir>/kubelet.sock (recording every RegisterRequest), and a client of a plugin's DevicePlugin
// service with a ListAndWatch stream read on a thread of its own. Both speak the real v1beta1
// protocol over Unix sockets, as kubelet does.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "deviceplugin.grpc.pb.h"

namespace gshare::deviceplugin::testing {

class FakeKubelet final : public v1beta1::Registration::Service {
 public:
  explicit FakeKubelet(std::string socket_path) : path_(std::move(socket_path)) {}
  ~FakeKubelet() override { Stop(); }

  bool Start();  // removes a stale file, serves Registration at the path
  void Stop();

  grpc::Status Register(grpc::ServerContext* ctx, const v1beta1::RegisterRequest* req,
                        v1beta1::Empty* resp) override;

  // Waits until more than `seen` requests arrived; returns the newest, or nullopt on timeout.
  std::optional<v1beta1::RegisterRequest> WaitForRegistration(size_t seen,
                                                              std::chrono::milliseconds timeout);
  size_t registrations() const;
  // What Register answers (OK unless set).
  void RefuseWith(grpc::Status s);

 private:
  std::string path_;
  std::unique_ptr<grpc::Server> server_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<v1beta1::RegisterRequest> requests_;
  grpc::Status answer_ = grpc::Status::OK;
};

// A connection to a plugin's socket, as kubelet makes after Register.
class PluginClient {
 public:
  explicit PluginClient(const std::string& socket_path);
  ~PluginClient();

  v1beta1::DevicePlugin::Stub& stub() { return *stub_; }

  // Starts reading ListAndWatch; every list received is kept.
  void Watch();
  // Waits for a list, the `from`-th received or later, that satisfies `pred`; returns the newest
  // such list, or nullopt on timeout.
  std::optional<v1beta1::ListAndWatchResponse> WaitForList(
      const std::function<bool(const v1beta1::ListAndWatchResponse&)>& pred,
      std::chrono::milliseconds timeout, size_t from = 0);
  size_t lists() const;
  bool stream_ended() const;

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
  grpc::ClientContext watch_ctx_;
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<v1beta1::ListAndWatchResponse> lists_;
  bool ended_ = false;
};

// Counts of a list: devices, healthy devices, healthy devices of GPU `gpu` (-1: all).
size_t CountHealthy(const v1beta1::ListAndWatchResponse& list, int gpu = -1);
size_t CountOnGpu(const v1beta1::ListAndWatchResponse& list, int gpu);

}  // namespace gshare::deviceplugin::testing
