// DevicePluginService and PluginServer (plugin_service.h).
#include "plugin_service.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <spdlog/spdlog.h>

#include "allocator.h"

namespace gshare::deviceplugin {
namespace {

grpc::Status ToGrpc(const shm::Status& s) {
  const auto code = s.code() == shm::StatusCode::kUnavailable ? grpc::StatusCode::UNAVAILABLE
                                                              : grpc::StatusCode::INVALID_ARGUMENT;
  return grpc::Status(code, s.message());
}

v1beta1::ListAndWatchResponse ToResponse(const Snapshot& snapshot) {
  v1beta1::ListAndWatchResponse resp;
  for (const auto& d : snapshot.Devices()) {
    auto* dev = resp.add_devices();
    dev->set_id(d.id);
    dev->set_health(d.healthy ? kHealthy : kUnhealthy);
  }
  return resp;
}

std::vector<std::string> Ids(const google::protobuf::RepeatedPtrField<std::string>& field) {
  return {field.begin(), field.end()};
}

}  // namespace

v1beta1::DevicePluginOptions PluginOptions() {
  v1beta1::DevicePluginOptions o;
  o.set_pre_start_required(false);
  o.set_get_preferred_allocation_available(true);
  return o;
}

DevicePluginService::DevicePluginService(const PluginConfig& config, const ArbiterMonitor& monitor)
    : config_(config), monitor_(monitor) {}

grpc::Status DevicePluginService::GetDevicePluginOptions(grpc::ServerContext*,
                                                         const v1beta1::Empty*,
                                                         v1beta1::DevicePluginOptions* resp) {
  *resp = PluginOptions();
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::ListAndWatch(
    grpc::ServerContext* ctx, const v1beta1::Empty*,
    grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  uint64_t generation = 0;
  Snapshot snapshot = monitor_.Current(&generation);
  spdlog::info("ListAndWatch: kubelet is watching ({} device(s))", snapshot.Devices().size());
  for (;;) {
    if (!writer->Write(ToResponse(snapshot))) {
      spdlog::info("ListAndWatch: the stream closed (kubelet went away)");
      return grpc::Status::OK;
    }
    for (;;) {
      if (stopping_ || ctx->IsCancelled() || monitor_.stopped()) return grpc::Status::OK;
      const uint64_t now = monitor_.WaitForChange(generation, std::chrono::milliseconds(200));
      if (now != generation) break;
    }
    snapshot = monitor_.Current(&generation);
  }
}

grpc::Status DevicePluginService::GetPreferredAllocation(
    grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* req,
    v1beta1::PreferredAllocationResponse* resp) {
  const Snapshot snapshot = monitor_.Current();
  for (int i = 0; i < req->container_requests_size(); ++i) {
    const auto& c = req->container_requests(i);
    auto chosen = PreferredAllocation(snapshot, Ids(c.available_deviceids()),
                                      Ids(c.must_include_deviceids()), c.allocation_size());
    if (!chosen.ok()) {
      spdlog::warn("GetPreferredAllocation: container {}: {}", i, chosen.status().message());
      return ToGrpc(shm::Status(chosen.status().code(),
                                "container " + std::to_string(i) + ": " + chosen.status().message()));
    }
    auto* out = resp->add_container_responses();
    for (const auto& id : *chosen) out->add_deviceids(id);
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* req,
                                           v1beta1::AllocateResponse* resp) {
  const Snapshot snapshot = monitor_.Current();
  if (req->container_requests_size() == 0)
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "Allocate: no container requests");
  std::optional<CdiEdits> edits;
  if (config_.strategy != DeviceListStrategy::kCdi) {
    auto read = ReadCdiEdits(config_.cdi_spec, config_.cdi_device);
    if (!read.ok()) {
      spdlog::error("Allocate: {}", read.status().message());
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, read.status().message());
    }
    edits = std::move(*read);
  }
  for (int i = 0; i < req->container_requests_size(); ++i) {
    const auto ids = Ids(req->container_requests(i).devices_ids());
    auto grant = GrantFor(snapshot, ids);
    if (!grant.ok()) {
      spdlog::warn("Allocate: container {}: {}", i, grant.status().message());
      return ToGrpc(shm::Status(grant.status().code(),
                                "container " + std::to_string(i) + ": " + grant.status().message()));
    }
    const ContainerEdits e = EditsFor(config_, *grant, edits ? &*edits : nullptr);
    auto* out = resp->add_container_responses();
    for (const auto& [k, v] : e.envs) (*out->mutable_envs())[k] = v;
    for (const auto& [k, v] : e.annotations) (*out->mutable_annotations())[k] = v;
    for (const auto& m : e.mounts) {
      auto* mount = out->add_mounts();
      mount->set_host_path(m.host_path);
      mount->set_container_path(m.container_path);
      mount->set_read_only(m.read_only);
    }
    for (const auto& name : e.cdi_devices) out->add_cdi_devices()->set_name(name);
    spdlog::info("Allocate: container {}: {} unit(s) -> GSHARE_VGPU_MEMORY={}", i, grant->units,
                 QuotaText(grant->quota_bytes));
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::PreStartContainer(grpc::ServerContext*,
                                                    const v1beta1::PreStartContainerRequest*,
                                                    v1beta1::PreStartContainerResponse*) {
  return grpc::Status::OK;  // registered with pre_start_required = false: nothing to do
}

PluginServer::PluginServer(const PluginConfig& config, const ArbiterMonitor& monitor)
    : config_(config), monitor_(monitor) {}

PluginServer::~PluginServer() { Stop(); }

shm::Status PluginServer::Start() {
  Stop();
  const std::string path = config_.plugin_socket_path();
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return shm::Status::FromErrno("removing the stale socket " + path, errno);
  service_ = std::make_unique<DevicePluginService>(config_, monitor_);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    service_.reset();
    return shm::Status(shm::StatusCode::kOsError,
                       "cannot serve the device plugin on " + path +
                           " (gRPC could not bind it: is the directory writable?)");
  }
  struct stat st{};
  inode_ = ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
  spdlog::info("serving the device plugin API on {}", path);
  return {};
}

void PluginServer::Stop() {
  if (server_ == nullptr) return;
  service_->Stop();
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_.reset();
  service_.reset();
  const std::string path = config_.plugin_socket_path();
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0 && st.st_ino == inode_) ::unlink(path.c_str());
  inode_ = 0;
}

}  // namespace gshare::deviceplugin
