// Unit tests of ClientTable (arbiter/src/client_table.h): client ids never reused, function ids
// naming one client from Bind to Unbind and reused only after the policy has handled the
// function's FunctionGone (Retire, then Recycle).
#include "client_table.h"

#include <gtest/gtest.h>

namespace gshare::arbiter {
namespace {

Client& AddClient(ClientTable& table) {
  auto c = std::make_unique<Client>();
  c->id = table.NextId();
  Client& added = table.Add(std::move(c));
  added.fid = table.Bind(added.id);
  return added;
}

TEST(ClientTable, ClientsAreFoundByIdAndByFunctionId) {
  ClientTable table;
  Client& a = AddClient(table);
  Client& b = AddClient(table);
  EXPECT_EQ(a.id, 1U);
  EXPECT_EQ(b.id, 2U);
  EXPECT_NE(a.fid, b.fid);
  EXPECT_EQ(table.Find(a.id), &a);
  EXPECT_EQ(table.ByFunction(b.fid), &b);
  EXPECT_EQ(table.Find(3), nullptr);
  EXPECT_EQ(table.ByFunction(b.fid + 1), nullptr);
  EXPECT_EQ(table.ByFunction(policy::kNoFunction), nullptr);
  EXPECT_EQ(table.size(), 2U);
  uint32_t seen = 0;
  for (const auto& [id, c] : table) seen += id;
  EXPECT_EQ(seen, 3U);
}

TEST(ClientTable, ARemovedClientsIdsAreNotGivenOutAgainBeforeRecycle) {
  ClientTable table;
  Client& a = AddClient(table);
  const uint32_t id = a.id;
  const policy::FunctionId fid = a.fid;
  EXPECT_NE(table.Remove(id), nullptr);
  EXPECT_EQ(table.Find(id), nullptr);
  EXPECT_EQ(table.ByFunction(fid), nullptr);  // unbound at once
  EXPECT_EQ(table.Remove(id), nullptr);
  table.Retire(fid);
  // The policy may still be handling the FunctionGone: the id stays out of use.
  Client& b = AddClient(table);
  EXPECT_NE(b.id, id);  // client ids are never reused
  EXPECT_NE(b.fid, fid);
  table.Recycle();
  Client& c = AddClient(table);
  EXPECT_EQ(c.fid, fid);
  EXPECT_EQ(table.ByFunction(fid), &c);
  EXPECT_EQ(table.function_ids(), 2U);
}

TEST(ClientTable, AnUnboundFunctionIdNamesNobodyWhileItsClientStays) {
  // A client whose SLO changes is registered with the policy again under a new function id.
  ClientTable table;
  Client& a = AddClient(table);
  const policy::FunctionId old_fid = a.fid;
  table.Unbind(old_fid);
  a.fid = table.Bind(a.id);
  EXPECT_EQ(table.ByFunction(old_fid), nullptr);
  EXPECT_EQ(table.ByFunction(a.fid), &a);
  // Removing the client unbinds its current id, and the old one stays free of it. (The ids
  // are read before: Remove destroys the client; TSan's whole-suite run of 2026-12-05 caught
  // this test reading a.fid after it.)
  const policy::FunctionId new_fid = a.fid;
  table.Remove(a.id);
  EXPECT_EQ(table.ByFunction(new_fid), nullptr);
  EXPECT_EQ(table.ByFunction(old_fid), nullptr);
  EXPECT_TRUE(table.empty());
}

}  // namespace
}  // namespace gshare::arbiter
