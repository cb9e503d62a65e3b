// The arbiter's registered clients by id and by policy function id (see client_table.h).
#include "client_table.h"

#include <utility>

namespace gshare::arbiter {

Client& ClientTable::Add(std::unique_ptr<Client> c) {
  Client& added = *c;
  clients_.emplace(added.id, std::move(c));
  return added;
}

std::unique_ptr<Client> ClientTable::Remove(uint32_t id) {
  auto it = clients_.find(id);
  if (it == clients_.end()) return nullptr;
  std::unique_ptr<Client> c = std::move(it->second);
  clients_.erase(it);
  if (c->fid < fid_to_client_.size() && fid_to_client_[c->fid] == id) Unbind(c->fid);
  return c;
}

Client* ClientTable::Find(uint32_t id) const {
  auto it = clients_.find(id);
  return it == clients_.end() ? nullptr : it->second.get();
}

Client* ClientTable::ByFunction(policy::FunctionId fid) const {
  if (fid >= fid_to_client_.size() || fid_to_client_[fid] == 0) return nullptr;
  return Find(fid_to_client_[fid]);
}

policy::FunctionId ClientTable::Bind(uint32_t client_id) {
  if (!free_.empty()) {
    const policy::FunctionId fid = free_.back();
    free_.pop_back();
    fid_to_client_[fid] = client_id;
    return fid;
  }
  fid_to_client_.push_back(client_id);
  return static_cast<policy::FunctionId>(fid_to_client_.size() - 1);
}

void ClientTable::Unbind(policy::FunctionId fid) {
  if (fid < fid_to_client_.size()) fid_to_client_[fid] = 0;
}

void ClientTable::Retire(policy::FunctionId fid) { retired_.push_back(fid); }

void ClientTable::Recycle() {
  free_.insert(free_.end(), retired_.begin(), retired_.end());
  retired_.clear();
}

}  // namespace gshare::arbiter
