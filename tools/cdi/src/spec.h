// The CDI spec gshare-cdi writes for a node (docs/containers.md): one device,
// gshare.io/vgpu=vgpu, whose container edits mount libgshare.so and the arbiter's
// tenant-facing socket directory and set LD_PRELOAD and GSHARE_ARBITER_SOCKET. Nothing
// per-container (quota, function name, SLO) goes in it: a CDI env value overrides the one the
// user gives the container. Pure functions over JSON values, except CheckHost (reads the file
// system); thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "gshare/shm/status.h"

namespace gshare::cdi {

// CDI 0.5.0: the newest version podman 4.3 accepts (0.6.0 is "unresolvable"); containerd
// >= 1.7, CRI-O and Docker >= 25 read it too.
inline constexpr const char* kCdiVersion = "0.5.0";
inline constexpr const char* kKind = "gshare.io/vgpu";
inline constexpr const char* kDeviceName = "vgpu";  // the device id: gshare.io/vgpu=vgpu
// Where libgshare.so appears inside a container.
inline constexpr const char* kContainerLibrary = "/opt/gshare/lib/libgshare.so";
// The env entry that marks a spec as written by gshare-cdi (and tells a container so).
inline constexpr const char* kMarkerVariable = "GSHARE_CDI_GENERATOR";

struct SpecOptions {
  std::string library;     // host path of libgshare.so
  std::string socket_dir;  // the arbiter's tenant-facing directory, on the host and in containers
  std::string socket_name = "arbiter.sock";  // the registration socket in it
};

// The spec for `options` (REQUIRES: absolute paths; see CheckOptions).
nlohmann::json BuildSpec(const SpecOptions& options);

// kInvalidArgument naming the option when a path is not absolute or a name is not a plain file
// name.
shm::Status CheckOptions(const SpecOptions& options);

// Whether the host is as the spec says: the library is an ELF shared object, the socket
// directory exists and is a directory holding nothing that tenants must not reach (the arbiter's
// control socket or event ring: a container given the directory would reach the operator's
// controls). kInvalidArgument naming the path otherwise.
shm::Status CheckHost(const SpecOptions& options);

// Checks `spec` against the rules of CDI 0.5.0 for every field it has: cdiVersion, kind
// (vendor.tld/class), device names, only known keys, env entries "NAME=value", mounts with
// absolute hostPath and containerPath. kInvalidArgument naming the field otherwise.
shm::Status ValidateSpec(const nlohmann::json& spec);

// True if `spec` was written by gshare-cdi (its device's env carries kMarkerVariable).
bool WrittenByGshareCdi(const nlohmann::json& spec);

}  // namespace gshare::cdi
