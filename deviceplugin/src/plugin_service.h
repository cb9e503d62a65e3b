// The v1beta1 DevicePlugin service kubelet calls on the plugin's socket, and the gRPC server
// that serves it there. ListAndWatch sends the whole list at once and again on every change the
// ArbiterMonitor reports; GetPreferredAllocation and Allocate answer from the monitor's current
// snapshot (allocator.h). A request that cannot be served gets INVALID_ARGUMENT (or UNAVAILABLE
// while the arbiter's state is unknown) with a message naming what is wrong; nothing a request
// holds can crash the plugin.
// Thread-safety: gRPC calls the service from its own threads; the service holds only const
// configuration and the (thread-safe) monitor.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "arbiter_monitor.h"
#include "config.h"
#include "deviceplugin.grpc.pb.h"

namespace gshare::deviceplugin {

class DevicePluginService final : public v1beta1::DevicePlugin::Service {
 public:
  DevicePluginService(const PluginConfig& config, const ArbiterMonitor& monitor);

  grpc::Status GetDevicePluginOptions(grpc::ServerContext* ctx, const v1beta1::Empty* req,
                                      v1beta1::DevicePluginOptions* resp) override;
  grpc::Status ListAndWatch(grpc::ServerContext* ctx, const v1beta1::Empty* req,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext* ctx,
                                      const v1beta1::PreferredAllocationRequest* req,
                                      v1beta1::PreferredAllocationResponse* resp) override;
  grpc::Status Allocate(grpc::ServerContext* ctx, const v1beta1::AllocateRequest* req,
                        v1beta1::AllocateResponse* resp) override;
  grpc::Status PreStartContainer(grpc::ServerContext* ctx,
                                 const v1beta1::PreStartContainerRequest* req,
                                 v1beta1::PreStartContainerResponse* resp) override;

  // Ends every ListAndWatch stream (before the server shuts down).
  void Stop() { stopping_ = true; }

 private:
  const PluginConfig& config_;
  const ArbiterMonitor& monitor_;
  std::atomic<bool> stopping_{false};
};

// The options the plugin registers with and GetDevicePluginOptions returns.
v1beta1::DevicePluginOptions PluginOptions();

// A gRPC server on the plugin's Unix socket. Start() removes a stale file at the path first;
// the inode of the socket it bound is kept, so the caller can tell when kubelet removed it.
class PluginServer {
 public:
  PluginServer(const PluginConfig& config, const ArbiterMonitor& monitor);
  ~PluginServer();
  PluginServer(const PluginServer&) = delete;
  PluginServer& operator=(const PluginServer&) = delete;

  shm::Status Start();
  void Stop();  // ends streams, shuts the server down, removes its socket if it is still ours
  bool running() const { return server_ != nullptr; }
  // The inode of the socket Start() bound (0 when not running).
  uint64_t inode() const { return inode_; }

 private:
  const PluginConfig& config_;
  const ArbiterMonitor& monitor_;
  std::unique_ptr<DevicePluginService> service_;
  std::unique_ptr<grpc::Server> server_;
  uint64_t inode_ = 0;
};

}  // namespace gshare::deviceplugin
