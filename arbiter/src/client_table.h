// ClientTable: the arbiter's registered clients, by client id and by policy function id.
//
// Client ids are never reused within an epoch (invariant 5). A policy function id names one
// client from Bind until Unbind; the id is given out again only after the policy has handled
// that function's FunctionGone (policy.h, protocol item 5): Retire puts it aside and Recycle,
// called once no policy delivery is in progress, makes the retired ids reusable.
//
// Thread-safety: plain values, the arbiter's loop thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "arbiter_state.h"
#include "gshare/policy/policy.h"

namespace gshare::arbiter {

using ClientMap = std::map<uint32_t, std::unique_ptr<Client>>;

class ClientTable {
 public:
  // The id the next registered client gets (ids start at 1; 0 means none).
  uint32_t NextId() { return next_id_++; }

  // Adds a client under its id, which must be new. Returns it.
  Client& Add(std::unique_ptr<Client> c);
  // Removes the client and unbinds its function id (the id is not retired: see Retire).
  // Returns it, or null if there is none.
  std::unique_ptr<Client> Remove(uint32_t id);

  Client* Find(uint32_t id) const;
  // The client a function id names, or null (unbound, out of range, or gone).
  Client* ByFunction(policy::FunctionId fid) const;

  // Gives `client_id` a function id: a recycled one if any, else a new one.
  policy::FunctionId Bind(uint32_t client_id);
  // `fid` names no client from now on.
  void Unbind(policy::FunctionId fid);
  // `fid` is reusable after the next Recycle.
  void Retire(policy::FunctionId fid);
  // Every retired id becomes reusable (call when no FunctionGone is still to be handled).
  void Recycle();
  // Function ids given out so far (bound, free or retired).
  size_t function_ids() const { return fid_to_client_.size(); }

  const ClientMap& all() const { return clients_; }
  size_t size() const { return clients_.size(); }
  bool empty() const { return clients_.empty(); }
  ClientMap::iterator begin() { return clients_.begin(); }
  ClientMap::iterator end() { return clients_.end(); }
  ClientMap::const_iterator begin() const { return clients_.begin(); }
  ClientMap::const_iterator end() const { return clients_.end(); }

 private:
  ClientMap clients_;
  uint32_t next_id_ = 1;
  std::vector<uint32_t> fid_to_client_;      // function id -> client id (0 = none)
  std::vector<policy::FunctionId> free_;     // reusable
  std::vector<policy::FunctionId> retired_;  // reusable after Recycle
};

}  // namespace gshare::arbiter
