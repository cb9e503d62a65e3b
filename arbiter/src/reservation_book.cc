// ReservationBook (reservation_book.h): per-GPU reserved bytes kept as the sums of their holders.
#include "reservation_book.h"

#include <algorithm>

namespace gshare::arbiter {

ReservationBook::ReservationBook(std::vector<uint64_t> usable) {
  for (const uint64_t u : usable) gpus_.push_back(Gpu{.usable = u});
}

uint64_t ReservationBook::unreserved(GpuIndex g) const {
  const Gpu& gpu = gpus_[g];
  return gpu.usable - std::min(gpu.usable, gpu.reserved);
}

bool ReservationBook::Fits(GpuIndex g, uint64_t bytes) const { return bytes <= unreserved(g); }

void ReservationBook::Add(GpuIndex g, uint64_t bytes) {
  Gpu& gpu = gpus_[g];
  gpu.reserved += bytes;
  gpu.peak = std::max(gpu.peak, gpu.reserved);
}

void ReservationBook::Remove(GpuIndex g, uint64_t bytes) {
  Gpu& gpu = gpus_[g];
  gpu.reserved -= std::min(gpu.reserved, bytes);
}

bool ReservationBook::ReserveClient(uint32_t client_id, GpuIndex g, uint64_t bytes) {
  if (!gpus_.contains(g) || clients_.count(client_id) != 0) return false;
  clients_.emplace(client_id, Entry{g, bytes});
  Add(g, bytes);
  return true;
}

bool ReservationBook::ReleaseClient(uint32_t client_id) {
  const auto it = clients_.find(client_id);
  if (it == clients_.end()) return false;
  Remove(it->second.gpu, it->second.bytes);
  clients_.erase(it);
  return true;
}

std::optional<GpuIndex> ReservationBook::ClientGpu(uint32_t client_id) const {
  const auto it = clients_.find(client_id);
  if (it == clients_.end()) return std::nullopt;
  return it->second.gpu;
}

uint64_t ReservationBook::ClientBytes(uint32_t client_id) const {
  const auto it = clients_.find(client_id);
  return it == clients_.end() ? 0 : it->second.bytes;
}

std::vector<uint32_t> ReservationBook::ClientsOn(GpuIndex g) const {
  std::vector<uint32_t> ids;
  for (const auto& [id, e] : clients_)
    if (e.gpu == g) ids.push_back(id);
  return ids;
}

bool ReservationBook::ReserveContext(uint32_t client_id, GpuIndex g, uint64_t bytes) {
  if (!gpus_.contains(g) || contexts_.count(client_id) != 0) return false;
  contexts_.emplace(client_id, Entry{g, bytes});
  Add(g, bytes);
  gpus_[g].contexts += bytes;
  if (gpus_[g].reserved > gpus_[g].usable) ++gpus_[g].overshoot_events;
  return true;
}

bool ReservationBook::ReleaseContext(uint32_t client_id) {
  const auto it = contexts_.find(client_id);
  if (it == contexts_.end()) return false;
  Gpu& gpu = gpus_[it->second.gpu];
  Remove(it->second.gpu, it->second.bytes);
  gpu.contexts -= std::min(gpu.contexts, it->second.bytes);
  contexts_.erase(it);
  return true;
}

uint64_t ReservationBook::ContextBytes(uint32_t client_id) const {
  const auto it = contexts_.find(client_id);
  return it == contexts_.end() ? 0 : it->second.bytes;
}

bool ReservationBook::HandToOrphan(uint32_t client_id, uint32_t orphan_id) {
  const auto quota = clients_.find(client_id);
  const auto context = contexts_.find(client_id);
  if (orphans_.count(orphan_id) != 0) return false;
  if (quota == clients_.end() && context == contexts_.end()) return false;
  if (quota != clients_.end() && context != contexts_.end() &&
      quota->second.gpu != context->second.gpu)
    return false;
  Entry e{quota != clients_.end() ? quota->second.gpu : context->second.gpu, 0};
  if (quota != clients_.end()) {
    e.bytes += quota->second.bytes;
    clients_.erase(quota);
  }
  if (context != contexts_.end()) {
    e.bytes += context->second.bytes;
    gpus_[e.gpu].contexts -= std::min(gpus_[e.gpu].contexts, context->second.bytes);
    contexts_.erase(context);
  }
  orphans_.emplace(orphan_id, e);
  gpus_[e.gpu].orphaned += e.bytes;
  return true;
}

void ReservationBook::AddOrphan(uint32_t orphan_id, GpuIndex g, uint64_t bytes) {
  if (!gpus_.contains(g) || orphans_.count(orphan_id) != 0) return;
  orphans_.emplace(orphan_id, Entry{g, bytes});
  Add(g, bytes);
  gpus_[g].orphaned += bytes;
  if (gpus_[g].reserved > gpus_[g].usable) ++gpus_[g].overshoot_events;
}

bool ReservationBook::ReleaseOrphan(uint32_t orphan_id) {
  const auto it = orphans_.find(orphan_id);
  if (it == orphans_.end()) return false;
  Gpu& gpu = gpus_[it->second.gpu];
  Remove(it->second.gpu, it->second.bytes);
  gpu.orphaned -= std::min(gpu.orphaned, it->second.bytes);
  orphans_.erase(it);
  return true;
}

std::optional<GpuIndex> ReservationBook::OrphanGpu(uint32_t orphan_id) const {
  const auto it = orphans_.find(orphan_id);
  if (it == orphans_.end()) return std::nullopt;
  return it->second.gpu;
}

uint64_t ReservationBook::OrphanBytes(uint32_t orphan_id) const {
  const auto it = orphans_.find(orphan_id);
  return it == orphans_.end() ? 0 : it->second.bytes;
}

std::string ReservationBook::CheckInvariants() const {
  ByGpu<uint64_t> reserved(std::vector<uint64_t>(gpus_.size(), 0));
  ByGpu<uint64_t> orphaned(std::vector<uint64_t>(gpus_.size(), 0));
  for (const auto& [id, e] : clients_) {
    if (!gpus_.contains(e.gpu)) return "client " + std::to_string(id) + " is reserved on no GPU";
    reserved[e.gpu] += e.bytes;
  }
  ByGpu<uint64_t> contexts(std::vector<uint64_t>(gpus_.size(), 0));
  for (const auto& [id, e] : contexts_) {
    if (!gpus_.contains(e.gpu)) return "client " + std::to_string(id) + "'s context is on no GPU";
    reserved[e.gpu] += e.bytes;
    contexts[e.gpu] += e.bytes;
  }
  for (const auto& [id, e] : orphans_) {
    if (!gpus_.contains(e.gpu)) return "orphan " + std::to_string(id) + " is reserved on no GPU";
    reserved[e.gpu] += e.bytes;
    orphaned[e.gpu] += e.bytes;
  }
  for (const GpuIndex g : gpus_.indices()) {
    const Gpu& gpu = gpus_[g];
    const std::string name = "GPU index " + std::to_string(g.value());
    if (gpu.reserved != reserved[g])
      return name + " reserves " + std::to_string(gpu.reserved) + " bytes, its holders " +
             std::to_string(reserved[g]);
    if (gpu.orphaned != orphaned[g])
      return name + " counts " + std::to_string(gpu.orphaned) + " orphaned bytes, its orphans " +
             std::to_string(orphaned[g]);
    if (gpu.contexts != contexts[g])
      return name + " counts " + std::to_string(gpu.contexts) + " context bytes, its clients " +
             std::to_string(contexts[g]);
    if (gpu.reserved > gpu.usable && gpu.overshoot_events == 0)
      return name + " reserves more than it has without an overshoot counted";
    if (gpu.peak < gpu.reserved) return name + "'s peak is below what it reserves";
  }
  return "";
}

}  // namespace gshare::arbiter
