// Registration wire format (docs/protocol.md, "Registration messages"): fixed-size, versioned
// binary messages exchanged over the arbiter's SOCK_SEQPACKET Unix socket, one message per
// packet, in host byte order (both ends run on the same node). Every message starts with a
// WireHeader {magic, abi version, type, length}. Decoding is strict: a wrong magic, version,
// type or length, a non-zero reserved field, an unterminated or non-printable string or an
// absurd value is rejected with a Status naming the problem; nothing is ever read out of bounds.
// Pure functions; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "gshare/shm/status.h"

namespace gshare::shm {

inline constexpr uint32_t kWireMagic = 0x52485347;  // "GSHR" read as little-endian bytes
// 2 (issue 18): RegisterRequest gained pod_namespace and pod_name (the Kubernetes pod, for
// attribution) and the flag kFlagLate; a version-1 peer is refused with kVersionMismatch.
// 3 (issue 20): RegisterRequest gained mps_share, compute_demand_pct and bandwidth_demand_pct
// (co-running: what the process's MPS client got, what its kernels need).
// 4 (issue 20): the message types ShareQuery and ShareAnswer (the MPS share a function would be
// given, asked before the process's real cuInit on a connection of its own).
// 5 (issue 20): ShareAnswer gained gpu_uuid and mps_pipe_directory (which GPU, and which MPS
// control daemon a co-run process must join: several GPUs may be marked, each with its own).
// 6: RegisterRequest gained device_count and device_uuids (the GPUs the process's driver shows
// it, in its own order: CUDA_VISIBLE_DEVICES, a container given some GPUs, an MPS client), and
// RegisterReply device_count and device_gpus (the arbiter's ordinal of each of them).
inline constexpr uint16_t kWireAbiVersion = 6;

enum class MessageType : uint16_t {
  kRegisterRequest = 1,  // client -> arbiter
  kRegisterReply = 2,    // arbiter -> client (+ channel and doorbell fds when accepted)
  kGoodbye = 3,          // either way: "I am going away", with a reason (e.g. arbiter SIGTERM)
  kShareQuery = 4,       // client -> arbiter, before its real cuInit: which MPS share for me?
  kShareAnswer = 5,      // arbiter -> client; the connection then closes
};

// Limits that make a value "absurd" (rejected by the decoder).
inline constexpr uint64_t kMaxQuotaBytes = uint64_t{1} << 44;  // 16 TiB
inline constexpr uint32_t kMaxSloMs = 3'600'000;               // one hour
inline constexpr uint32_t kMaxGpus = 1024;
// Device bytes a client reports holding or moving may exceed its quota by this much (granule
// rounding of small quotas, memory the shim accounts beside the application's allocations).
inline constexpr uint64_t kResidentSlackBytes = uint64_t{64} << 20;
inline constexpr size_t kFunctionNameSize = 128;  // bytes including the terminating NUL
inline constexpr size_t kReasonSize = 192;        // bytes including the terminating NUL
// The pod's namespace (a DNS-1123 label, <= 63 bytes) and name (a DNS-1123 subdomain, <= 253
// bytes), NUL-terminated and zero-padded; empty when unknown (GSHARE_POD_NAMESPACE/_NAME).
inline constexpr size_t kPodNamespaceSize = 64;
inline constexpr size_t kPodNameSize = 256;
inline constexpr size_t kMaxPodNamespaceLength = 63;
inline constexpr size_t kMaxPodNameLength = 253;
// A co-run GPU's MPS pipe directory, NUL-terminated and zero-padded. At most 99 bytes long: its
// control socket (<dir>/control) must fit a Unix socket's 108-byte path.
inline constexpr size_t kMpsPipeDirectorySize = 128;
inline constexpr size_t kMaxMpsPipeDirectoryLength = 99;

// Request flags.
inline constexpr uint32_t kFlagReRegister = 1U << 0;  // the client ran before (arbiter restart)
inline constexpr uint32_t kFlagResident = 1U << 1;    // re-registering client is resident on gpu
// A first registration made after the process ran stand-alone (no arbiter when it started):
// like a re-registration it describes what it holds (resident, current_gpu, resident_bytes),
// but it never had a client id (previous_client_id 0). Excludes kFlagReRegister.
inline constexpr uint32_t kFlagLate = 1U << 2;
inline constexpr uint32_t kKnownRequestFlags = kFlagReRegister | kFlagResident | kFlagLate;
inline constexpr uint32_t kNoGpu = 0xFFFFFFFF;
// The most devices a registration describes by UUID (the process's devices 0..15; one it sees
// beyond them is one the arbiter never places it on).
inline constexpr size_t kMaxReportedDevices = 16;

#pragma pack(push, 1)
struct WireHeader {
  uint32_t magic;        // kWireMagic
  uint16_t abi_version;  // kWireAbiVersion
  uint16_t type;         // MessageType
  uint32_t length;       // total message bytes, header included
  uint32_t reserved;     // must be 0
};

struct RegisterRequestWire {
  WireHeader header;
  uint64_t quota_bytes;   // vGPU memory quota; 1 .. kMaxQuotaBytes
  uint32_t slo_ms;        // latency target; 1 .. kMaxSloMs
  uint32_t flags;         // kFlag*; unknown bits rejected
  uint32_t previous_client_id;  // with kFlagReRegister: the id the old arbiter gave, else 0
  uint32_t current_gpu;   // resident: its GPU; re-registering swapped out: its process's GPU
                          // (or kNoGpu); a first registration: kNoGpu
  uint64_t resident_bytes;  // with kFlagReRegister: device bytes it holds now (<= quota + slack)
  char function_name[kFunctionNameSize];  // printable ASCII, NUL-terminated, zero-padded
  char pod_namespace[kPodNamespaceSize];   // "" or a DNS-1123 label, NUL-terminated, zero-padded
  char pod_name[kPodNameSize];             // "" or a DNS-1123 subdomain, same rules
  // Co-running (docs/arbiter.md, "Co-running"). mps_share: the compute share in percent its
  // process's MPS client runs at (1-100; the driver reported MPS enabled), 0 when it is not an
  // MPS client. The demands: the fraction of the GPU's SMs and memory bandwidth its kernels use
  // running alone, in percent (1-100), as the tenant declares them (GSHARE_CORUN_DEMAND); 0:
  // unknown (taken as filling the GPU: it never co-runs).
  uint32_t mps_share;
  uint8_t compute_demand_pct;
  uint8_t bandwidth_demand_pct;
  uint16_t reserved2;  // must be 0
  // The process's view of the GPUs (docs/protocol.md, "Which GPU is which"): device_count 0 (not
  // reported: its device d is the arbiter's GPU d) or 1..kMaxReportedDevices, and the driver's
  // UUID of each of its devices 0..device_count-1 (all 0: unknown); the rest all 0. When
  // reported, current_gpu is the process's device index (< device_count), not an ordinal.
  uint32_t device_count;
  uint32_t reserved3;  // must be 0
  uint8_t device_uuids[kMaxReportedDevices][16];
};

struct RegisterReplyWire {
  WireHeader header;
  uint32_t accepted;      // 1 accepted (2 fds attached), 0 refused (no fds)
  uint32_t gpu;           // assigned GPU (< kMaxGpus) if accepted, else kNoGpu
  uint32_t client_id;     // non-zero if accepted, else 0
  uint32_t channel_size;  // bytes of the channel memfd if accepted, else 0
  uint64_t quota_bytes;   // granted quota if accepted, else 0
  uint64_t arbiter_epoch; // changes on every arbiter start; non-zero
  char reason[kReasonSize];  // why refused (non-empty), or an optional note; NUL-terminated
  // Accepted and the request reported its devices (and the arbiter knows its GPUs' UUIDs):
  // device_count is the request's, and device_gpus[d] the arbiter's ordinal of the process's
  // device d (kNoGpu: not a GPU it manages); else 0. Entries past device_count are 0.
  uint32_t device_count;
  uint32_t reserved2;  // must be 0
  uint32_t device_gpus[kMaxReportedDevices];
};

struct GoodbyeWire {
  WireHeader header;
  char reason[kReasonSize];
};

// Co-running (docs/protocol.md, "Share query"): what a function would register as, asked before
// its process initialises CUDA (the MPS share is fixed at cuInit). Identity (uid, pid) comes from
// the kernel, as for a registration.
struct ShareQueryWire {
  WireHeader header;
  uint64_t quota_bytes;  // 0 (not known yet) or 1 .. kMaxQuotaBytes
  uint32_t slo_ms;       // 1 .. kMaxSloMs
  uint8_t compute_demand_pct;    // 0 (unknown) or 1..100, as in RegisterRequestWire
  uint8_t bandwidth_demand_pct;
  uint16_t reserved;     // must be 0
  char function_name[kFunctionNameSize];
};

struct ShareAnswerWire {
  WireHeader header;
  uint32_t gpu;          // the GPU it would be registered on (< kMaxGpus), or kNoGpu
  uint32_t corun;        // 1: that GPU is marked for co-running, start it at share_pct; 0: not
  uint32_t share_pct;    // corun 1: 1..100; corun 0: 0
  uint32_t reserved;     // must be 0
  uint64_t memory_limit_bytes;  // corun 1: 0 (none) or the device-memory cap; corun 0: 0
  uint64_t arbiter_epoch;       // non-zero
  char reason[kReasonSize];     // corun 0: why not (may be empty); corun 1: optional note
  uint8_t gpu_uuid[16];         // the GPU's UUID as the driver reports it; all 0: not known
  // corun 1: "" (the arbiter runs no daemon for the GPU) or the CUDA_MPS_PIPE_DIRECTORY of the
  // GPU's MPS control daemon, absolute; corun 0: "".
  char mps_pipe_directory[kMpsPipeDirectorySize];
};
#pragma pack(pop)

static_assert(sizeof(WireHeader) == 16);
static_assert(sizeof(RegisterRequestWire) == 16 + 32 + kFunctionNameSize + kPodNamespaceSize +
                                                 kPodNameSize + 8 + 8 + 16 * kMaxReportedDevices);
static_assert(sizeof(RegisterRequestWire) == 768);
static_assert(offsetof(RegisterRequestWire, device_uuids) == 512);
static_assert(offsetof(RegisterRequestWire, mps_share) == 496);
static_assert(offsetof(RegisterRequestWire, function_name) == 48);
static_assert(offsetof(RegisterRequestWire, pod_namespace) == 176);
static_assert(offsetof(RegisterRequestWire, pod_name) == 240);
static_assert(sizeof(RegisterReplyWire) == 16 + 32 + kReasonSize + 8 + 4 * kMaxReportedDevices);
static_assert(offsetof(RegisterReplyWire, device_gpus) == 248);
static_assert(offsetof(RegisterReplyWire, reason) == 48);
static_assert(sizeof(GoodbyeWire) == 16 + kReasonSize);
static_assert(sizeof(ShareQueryWire) == 160);
static_assert(offsetof(ShareQueryWire, function_name) == 32);
static_assert(sizeof(ShareAnswerWire) == 240 + 16 + kMpsPipeDirectorySize);
static_assert(offsetof(ShareAnswerWire, reason) == 48);
static_assert(offsetof(ShareAnswerWire, gpu_uuid) == 240);
static_assert(offsetof(ShareAnswerWire, mps_pipe_directory) == 256);
static_assert(std::is_trivially_copyable_v<RegisterRequestWire>);
static_assert(std::is_trivially_copyable_v<RegisterReplyWire>);
inline constexpr size_t kMaxMessageSize = sizeof(RegisterRequestWire) > sizeof(RegisterReplyWire)
                                              ? sizeof(RegisterRequestWire)
                                              : sizeof(RegisterReplyWire);

// Decoded, validated forms.
struct RegisterRequest {
  uint64_t quota_bytes = 0;
  uint32_t slo_ms = 0;
  uint32_t flags = 0;
  uint32_t previous_client_id = 0;
  uint32_t current_gpu = kNoGpu;
  uint64_t resident_bytes = 0;
  std::string function_name;  // may be empty
  std::string pod_namespace;  // may be empty; else PodNamespaceProblem() is ""
  std::string pod_name;       // may be empty; else PodNameProblem() is ""
  uint32_t mps_share = 0;           // 0 or 1..100
  uint8_t compute_demand_pct = 0;   // 0 (unknown) or 1..100
  uint8_t bandwidth_demand_pct = 0;
  // The process's devices by UUID, in its own order (empty: not reported); then current_gpu is
  // an index into it.
  std::vector<std::array<uint8_t, 16>> device_uuids;
};

struct RegisterReply {
  bool accepted = false;
  uint32_t gpu = kNoGpu;
  uint32_t client_id = 0;
  uint32_t channel_size = 0;
  uint64_t quota_bytes = 0;
  uint64_t arbiter_epoch = 0;
  std::string reason;
  std::vector<uint32_t> device_gpus;  // per reported device: the arbiter's ordinal, or kNoGpu
};

struct Goodbye {
  std::string reason;
};

struct ShareQuery {
  uint64_t quota_bytes = 0;  // 0: not known yet
  uint32_t slo_ms = 0;
  uint8_t compute_demand_pct = 0;
  uint8_t bandwidth_demand_pct = 0;
  std::string function_name;  // may be empty
};

struct ShareAnswer {
  uint32_t gpu = kNoGpu;
  bool corun = false;
  uint32_t share_pct = 0;
  uint64_t memory_limit_bytes = 0;
  uint64_t arbiter_epoch = 0;
  std::string reason;
  std::array<uint8_t, 16> gpu_uuid{};  // all 0: not known
  std::string mps_pipe_directory;      // only with corun; "" = not named
};

// Why `value` cannot be a ShareAnswer's mps_pipe_directory ("" if it can): not absolute, longer
// than kMaxMpsPipeDirectoryLength, or a byte that is not printable ASCII (named by offset).
std::string MpsPipeDirectoryProblem(std::string_view value);

// Why `value` is not a Kubernetes namespace (a DNS-1123 label: 1-63 bytes of a-z, 0-9 and '-',
// starting and ending with a letter or digit) / pod name (a DNS-1123 subdomain: 1-253 bytes,
// dot-separated labels of the same characters), "" if it is. The value is never quoted (it may
// hold control characters): the first bad byte is named by offset and hex value.
std::string PodNamespaceProblem(std::string_view value);
std::string PodNameProblem(std::string_view value);

// Encoders validate too (so a bug on our side never puts a bad message on the wire).
Result<std::vector<std::byte>> EncodeRequest(const RegisterRequest& request);
Result<std::vector<std::byte>> EncodeReply(const RegisterReply& reply);
Result<std::vector<std::byte>> EncodeGoodbye(const Goodbye& goodbye);
Result<std::vector<std::byte>> EncodeShareQuery(const ShareQuery& query);
Result<std::vector<std::byte>> EncodeShareAnswer(const ShareAnswer& answer);

// Reads and checks the header only (magic, version, reserved, length == bytes.size(), known
// type). kVersionMismatch for another ABI version, kMalformed for everything else.
Result<MessageType> PeekMessageType(std::span<const std::byte> bytes);

Result<RegisterRequest> DecodeRequest(std::span<const std::byte> bytes);
Result<RegisterReply> DecodeReply(std::span<const std::byte> bytes);
Result<Goodbye> DecodeGoodbye(std::span<const std::byte> bytes);
Result<ShareQuery> DecodeShareQuery(std::span<const std::byte> bytes);
Result<ShareAnswer> DecodeShareAnswer(std::span<const std::byte> bytes);

}  // namespace gshare::shm
