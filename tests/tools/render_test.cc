// gshare-ctl's and gshare-top's rendering of a GPU's token holders (tools/ctl's HoldersText):
// one holder, a co-run set (several at once, marked), none, and an older arbiter's reply with
// only "holder"; a client's MPS share and confinement in the clients table.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gshare/ctl/render.h"

namespace gshare::ctl {
namespace {

using nlohmann::json;

// `gshare-ctl clients`: a client's MPS share with the daemon's confirmation, and a client
// confined to the GPUs its process sees marked in the GPU column.
TEST(Render, ClientsShowTheirMpsCheckAndConfinement) {
  EXPECT_EQ(MpsText({{"mps_share", 25}, {"mps_check", "served"}}), "25% served");
  EXPECT_EQ(MpsText({{"mps_share", 25}, {"mps_check", "not served"}}), "25% not served");
  EXPECT_EQ(MpsText({{"mps_share", 0}, {"mps_check", "not an MPS client"}}), "-");
  EXPECT_EQ(MpsText(json::object()), "-");  // an arbiter before co-running
  const json reply = {{"clients", json::array({json{{"client", 1}, {"function", "cnn"}, {"gpu", 1},
                                                    {"confined", true}, {"mps_share", 50},
                                                    {"mps_check", "served"}}})}};
  const std::string table = RenderClients(reply);
  EXPECT_NE(table.find("MPS"), std::string::npos) << table;
  EXPECT_NE(table.find("1 (confined)"), std::string::npos) << table;
  EXPECT_NE(table.find("50% served"), std::string::npos) << table;
}

TEST(Render, HoldersOfAGpuIncludingACoRunSet) {
  const json one = {{"client", 3}, {"function", "cnn-a"}, {"pid", 10}, {"held_ms", 1.5}};
  const json two = {{"client", 4}, {"function", "cnn-b"}, {"pid", 11}, {"held_ms", 0.5}};
  EXPECT_EQ(HoldersText({{"holder", one}, {"holders", json::array({one})}}), "cnn-a (#3)");
  EXPECT_EQ(HoldersText({{"holder", one}, {"holders", json::array({one, two})}}),
            "cnn-a (#3), cnn-b (#4) [co-run]");
  EXPECT_EQ(HoldersText({{"holder", nullptr}, {"holders", json::array()}}), "-");
  EXPECT_EQ(HoldersText({{"holder", one}}), "cnn-a (#3)");  // an arbiter before co-running
  EXPECT_EQ(HoldersText(json::object()), "-");
  // The status table shows the whole set in its HOLDER column.
  const json status = {{"policy", "aggressive"}, {"uptime_s", 1.0}, {"clients", 2},
                       {"gpus", json::array({{{"gpu", 0}, {"holder", one}, {"holders", json::array({one, two})},
                                              {"queue", json::array()}, {"busy", 0.5}, {"drained", false}}})}};
  EXPECT_NE(RenderStatus(status).find("cnn-a (#3), cnn-b (#4) [co-run]"), std::string::npos)
      << RenderStatus(status);
}

}  // namespace
}  // namespace gshare::ctl
