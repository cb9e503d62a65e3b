// FakeKubelet and PluginClient (fake_kubelet.h).
#include "fake_kubelet.h"

#include <unistd.h>

namespace gshare::deviceplugin::testing {

bool FakeKubelet::Start() {
  ::unlink(path_.c_str());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path_, grpc::InsecureServerCredentials());
  builder.RegisterService(this);
  server_ = builder.BuildAndStart();
  return server_ != nullptr;
}

void FakeKubelet::Stop() {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_.reset();
}

grpc::Status FakeKubelet::Register(grpc::ServerContext*, const v1beta1::RegisterRequest* req,
                                   v1beta1::Empty*) {
  std::lock_guard lock(mu_);
  requests_.push_back(*req);
  cv_.notify_all();
  return answer_;
}

void FakeKubelet::RefuseWith(grpc::Status s) {
  std::lock_guard lock(mu_);
  answer_ = std::move(s);
}

std::optional<v1beta1::RegisterRequest> FakeKubelet::WaitForRegistration(
    size_t seen, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return requests_.size() > seen; })) return std::nullopt;
  return requests_.back();
}

size_t FakeKubelet::registrations() const {
  std::lock_guard lock(mu_);
  return requests_.size();
}

PluginClient::PluginClient(const std::string& socket_path)
    : channel_(grpc::CreateChannel("unix:" + socket_path, grpc::InsecureChannelCredentials())),
      stub_(v1beta1::DevicePlugin::NewStub(channel_)) {}

PluginClient::~PluginClient() {
  watch_ctx_.TryCancel();
  if (reader_.joinable()) reader_.join();
}

void PluginClient::Watch() {
  reader_ = std::thread([this] {
    v1beta1::Empty empty;
    auto reader = stub_->ListAndWatch(&watch_ctx_, empty);
    v1beta1::ListAndWatchResponse resp;
    while (reader->Read(&resp)) {
      std::lock_guard lock(mu_);
      lists_.push_back(resp);
      cv_.notify_all();
    }
    (void)reader->Finish();
    std::lock_guard lock(mu_);
    ended_ = true;
    cv_.notify_all();
  });
}

std::optional<v1beta1::ListAndWatchResponse> PluginClient::WaitForList(
    const std::function<bool(const v1beta1::ListAndWatchResponse&)>& pred,
    std::chrono::milliseconds timeout, size_t from) {
  std::unique_lock lock(mu_);
  std::optional<v1beta1::ListAndWatchResponse> found;
  cv_.wait_for(lock, timeout, [&] {
    for (size_t i = lists_.size(); i > from; --i)
      if (pred(lists_[i - 1])) {
        found = lists_[i - 1];
        return true;
      }
    return false;
  });
  return found;
}

size_t PluginClient::lists() const {
  std::lock_guard lock(mu_);
  return lists_.size();
}

bool PluginClient::stream_ended() const {
  std::lock_guard lock(mu_);
  return ended_;
}

size_t CountHealthy(const v1beta1::ListAndWatchResponse& list, int gpu) {
  size_t n = 0;
  const std::string prefix = "gpu" + std::to_string(gpu) + "-";
  for (const auto& d : list.devices())
    if (d.health() == "Healthy" && (gpu < 0 || d.id().rfind(prefix, 0) == 0)) ++n;
  return n;
}

size_t CountOnGpu(const v1beta1::ListAndWatchResponse& list, int gpu) {
  size_t n = 0;
  const std::string prefix = "gpu" + std::to_string(gpu) + "-";
  for (const auto& d : list.devices())
    if (d.id().rfind(prefix, 0) == 0) ++n;
  return n;
}

}  // namespace gshare::deviceplugin::testing
