// The configuration packaging/kubernetes/gshare-node.yaml ships, read by the daemons' own
// parsers: the arbiter's arbiter.toml and the device plugin's device-plugin.toml (written out of
// the ConfigMap by configmap_files.py, the CTest fixture k8s_configmap), and the two agree on the
// sockets they share.
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "config.h"
#include "gshare/arbiter/config.h"

namespace gshare::deviceplugin {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ShippedNodeConfig, ArbiterAndDevicePluginParseAndAgree) {
  const std::string dir = CONFIGMAP_DIR;
  const std::string arbiter_text = Read(dir + "/arbiter.toml");
  ASSERT_FALSE(arbiter_text.empty()) << "run the k8s_configmap fixture first";
  const auto arbiter = arbiter::ParseConfigToml(arbiter_text, arbiter::ArbiterConfig{});
  ASSERT_TRUE(arbiter.ok()) << arbiter.status().message();

  PluginConfig plugin;
  const auto s = LoadConfigFile(plugin, dir + "/device-plugin.toml");
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(Validate(plugin).ok());

  EXPECT_EQ(plugin.control_socket_path(), arbiter::ControlSocketPath(*arbiter))
      << "the plugin must read the arbiter's own control socket";
  // Tenants get the registration socket's directory (the CDI spec's --socket-dir): nothing of
  // the operator's may live there.
  const std::string socket = arbiter->socket_path;
  const std::string tenant_dir = socket.substr(0, socket.rfind('/'));
  EXPECT_EQ(tenant_dir, "/run/gshare");
  EXPECT_NE(arbiter::ControlSocketPath(*arbiter).rfind(tenant_dir + "/", 0), 0u)
      << "the control socket is in the tenant directory";
  EXPECT_EQ(plugin.kubelet_socket, "/var/lib/kubelet/device-plugins/kubelet.sock");
  EXPECT_EQ(plugin.cdi_spec, "/etc/cdi/gshare.json");
  EXPECT_EQ(plugin.resource_name, "gshare.io/vgpu-memory");
}

}  // namespace
}  // namespace gshare::deviceplugin
