// Registration messages: strict encode/decode of the fixed-size wire structs.
#include "gshare/shm/wire.h"

#include <cstring>

namespace gshare::shm {
namespace {

Status Malformed(std::string what) { return Status(StatusCode::kMalformed, std::move(what)); }

WireHeader MakeHeader(MessageType type, size_t length) {
  WireHeader h{};
  h.magic = kWireMagic;
  h.abi_version = kWireAbiVersion;
  h.type = static_cast<uint16_t>(type);
  h.length = static_cast<uint32_t>(length);
  h.reserved = 0;
  return h;
}

template <typename Wire>
std::vector<std::byte> ToBytes(const Wire& wire) {
  std::vector<std::byte> out(sizeof(Wire));
  std::memcpy(out.data(), &wire, sizeof(Wire));
  return out;
}

// Checks a fixed char field: NUL-terminated within the field, printable ASCII before the NUL,
// zeros after it. Returns the string or an error naming `field`.
Result<std::string> ReadFixedString(const char* data, size_t size, std::string_view field,
                                    bool allow_empty) {
  const void* nul = std::memchr(data, '\0', size);
  if (nul == nullptr) return Malformed(std::string(field) + " is not NUL-terminated");
  const size_t len = static_cast<size_t>(static_cast<const char*>(nul) - data);
  for (size_t i = 0; i < len; ++i) {
    const auto c = static_cast<unsigned char>(data[i]);
    if (c < 0x20 || c > 0x7e) return Malformed(std::string(field) + " has a non-printable byte");
  }
  for (size_t i = len; i < size; ++i) {
    if (data[i] != '\0') return Malformed(std::string(field) + " has bytes after its NUL");
  }
  if (len == 0 && !allow_empty) return Malformed(std::string(field) + " is empty");
  return std::string(data, len);
}

Status WriteFixedString(std::string_view value, char* data, size_t size, std::string_view field) {
  if (value.size() >= size) {
    return Status(StatusCode::kInvalidArgument,
                  std::string(field) + " is longer than " + std::to_string(size - 1) + " bytes");
  }
  for (char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c > 0x7e) {
      return Status(StatusCode::kInvalidArgument, std::string(field) + " must be printable ASCII");
    }
  }
  std::memset(data, 0, size);
  std::memcpy(data, value.data(), value.size());
  return {};
}

std::string HexByte(unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("0x") + kHex[c >> 4] + kHex[c & 15];
}

// DNS-1123 label rules on one label, which starts at `offset` of the whole value.
std::string LabelProblem(std::string_view label, size_t offset) {
  if (label.empty()) return "has an empty label at offset " + std::to_string(offset);
  for (size_t i = 0; i < label.size(); ++i) {
    const auto c = static_cast<unsigned char>(label[i]);
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && c != '-') {
      return "has the byte " + HexByte(c) + " at offset " + std::to_string(offset + i) +
             " (only a-z, 0-9, '-' and '.' between labels are allowed)";
    }
    if (c == '-' && (i == 0 || i + 1 == label.size())) {
      return "has a '-' at offset " + std::to_string(offset + i) +
             " (a label starts and ends with a letter or digit)";
    }
  }
  return {};
}

Status ValidateRequest(const RegisterRequest& r, StatusCode code) {
  auto bad = [code](std::string what) { return Status(code, std::move(what)); };
  if (r.quota_bytes == 0) return bad("quota_bytes is 0");
  if (r.quota_bytes > kMaxQuotaBytes) {
    return bad("quota_bytes " + std::to_string(r.quota_bytes) + " exceeds the 16 TiB limit");
  }
  if (r.slo_ms == 0) return bad("slo_ms is 0");
  if (r.slo_ms > kMaxSloMs) return bad("slo_ms " + std::to_string(r.slo_ms) + " exceeds one hour");
  if ((r.flags & ~kKnownRequestFlags) != 0) return bad("flags has unknown bits");
  const bool late = (r.flags & kFlagLate) != 0;
  if (late && (r.flags & kFlagReRegister) != 0) return bad("late flag with re-register flag");
  // A late first registration describes what it holds as a re-registration does.
  const bool rereg = (r.flags & kFlagReRegister) != 0 || late;
  const bool resident = (r.flags & kFlagResident) != 0;
  if (resident && !rereg) return bad("resident flag without re-register or late flag");
  if (!rereg && r.resident_bytes != 0) {
    return bad("resident_bytes set without re-register or late flag");
  }
  if ((r.flags & kFlagReRegister) == 0 && r.previous_client_id != 0) {
    return bad("previous_client_id set without re-register flag");
  }
  if ((r.flags & kFlagReRegister) != 0 && r.previous_client_id == 0) {
    return bad("re-register without previous_client_id");
  }
  if (r.resident_bytes > r.quota_bytes + kResidentSlackBytes) {
    return bad("resident_bytes exceeds quota_bytes by more than 64 MiB");
  }
  // Resident: the GPU it is on. Re-registering swapped out: where its process (its contexts)
  // lives, or kNoGpu if it cannot tell. A first registration names none. With its devices
  // reported, a device index among them.
  if (r.device_uuids.size() > kMaxReportedDevices) {
    return bad("device_count " + std::to_string(r.device_uuids.size()) + " exceeds " +
               std::to_string(kMaxReportedDevices));
  }
  const uint32_t limit =
      r.device_uuids.empty() ? kMaxGpus : static_cast<uint32_t>(r.device_uuids.size());
  if (resident ? r.current_gpu >= limit
               : r.current_gpu != kNoGpu && (!rereg || r.current_gpu >= limit)) {
    return bad("current_gpu inconsistent with the resident and re-register flags");
  }
  if (!r.pod_namespace.empty()) {
    if (std::string why = PodNamespaceProblem(r.pod_namespace); !why.empty()) {
      return bad("pod_namespace " + why);
    }
  }
  if (!r.pod_name.empty()) {
    if (std::string why = PodNameProblem(r.pod_name); !why.empty()) return bad("pod_name " + why);
  }
  if (r.mps_share > 100) return bad("mps_share above 100 percent");
  if (r.compute_demand_pct > 100) return bad("compute_demand_pct above 100 percent");
  if (r.bandwidth_demand_pct > 100) return bad("bandwidth_demand_pct above 100 percent");
  return {};
}

Status ValidateReply(const RegisterReply& r, StatusCode code) {
  auto bad = [code](std::string what) { return Status(code, std::move(what)); };
  if (r.arbiter_epoch == 0) return bad("arbiter_epoch is 0");
  if (r.accepted) {
    if (r.gpu >= kMaxGpus) return bad("gpu " + std::to_string(r.gpu) + " out of range");
    if (r.client_id == 0) return bad("accepted reply with client_id 0");
    if (r.device_gpus.size() > kMaxReportedDevices) {
      return bad("device_count " + std::to_string(r.device_gpus.size()) + " exceeds " +
                 std::to_string(kMaxReportedDevices));
    }
    for (const uint32_t g : r.device_gpus) {
      if (g >= kMaxGpus && g != kNoGpu) return bad("device_gpus names GPU " + std::to_string(g));
    }
    if (r.channel_size == 0 || r.channel_size > (1U << 24) || (r.channel_size % 4096) != 0) {
      return bad("channel_size " + std::to_string(r.channel_size) + " is not a sane page multiple");
    }
    if (r.quota_bytes == 0 || r.quota_bytes > kMaxQuotaBytes) return bad("quota_bytes out of range");
  } else {
    if (r.gpu != kNoGpu || r.client_id != 0 || r.channel_size != 0 || r.quota_bytes != 0) {
      return bad("refusal carries assignment fields");
    }
    if (r.reason.empty()) return bad("refusal without a reason");
  }
  return {};
}

Status ValidateShareQuery(const ShareQuery& q, StatusCode code) {
  auto bad = [code](std::string what) { return Status(code, std::move(what)); };
  if (q.quota_bytes > kMaxQuotaBytes) {
    return bad("quota_bytes " + std::to_string(q.quota_bytes) + " exceeds the 16 TiB limit");
  }
  if (q.slo_ms == 0) return bad("slo_ms is 0");
  if (q.slo_ms > kMaxSloMs) return bad("slo_ms " + std::to_string(q.slo_ms) + " exceeds one hour");
  if (q.compute_demand_pct > 100) return bad("compute_demand_pct above 100 percent");
  if (q.bandwidth_demand_pct > 100) return bad("bandwidth_demand_pct above 100 percent");
  return {};
}

Status ValidateShareAnswer(const ShareAnswer& a, StatusCode code) {
  auto bad = [code](std::string what) { return Status(code, std::move(what)); };
  if (a.arbiter_epoch == 0) return bad("arbiter_epoch is 0");
  if (a.gpu != kNoGpu && a.gpu >= kMaxGpus) return bad("gpu " + std::to_string(a.gpu) + " out of range");
  if (a.corun) {
    if (a.gpu == kNoGpu) return bad("a co-run answer names no gpu");
    if (a.share_pct < 1 || a.share_pct > 100) {
      return bad("share_pct " + std::to_string(a.share_pct) + " is not a percentage 1..100");
    }
    if (a.memory_limit_bytes > kMaxQuotaBytes) return bad("memory_limit_bytes exceeds 16 TiB");
  } else if (a.share_pct != 0 || a.memory_limit_bytes != 0) {
    return bad("an answer without corun carries a share");
  }
  if (!a.mps_pipe_directory.empty()) {
    if (!a.corun) return bad("an answer without corun names an MPS pipe directory");
    if (std::string why = MpsPipeDirectoryProblem(a.mps_pipe_directory); !why.empty())
      return bad("mps_pipe_directory " + why);
  }
  return {};
}

template <typename Wire>
Result<Wire> ReadWire(std::span<const std::byte> bytes, MessageType expected) {
  auto type = PeekMessageType(bytes);
  if (!type.ok()) return type.status();
  if (*type != expected) {
    return Malformed("unexpected message type " + std::to_string(static_cast<int>(*type)));
  }
  if (bytes.size() != sizeof(Wire)) {
    return Malformed("length " + std::to_string(bytes.size()) + " does not match the type (" +
                     std::to_string(sizeof(Wire)) + ")");
  }
  Wire wire;
  std::memcpy(&wire, bytes.data(), sizeof(Wire));
  return wire;
}

}  // namespace

std::string MpsPipeDirectoryProblem(std::string_view value) {
  if (value.empty() || value.front() != '/') return "is not an absolute path";
  if (value.size() > kMaxMpsPipeDirectoryLength) {
    return "is " + std::to_string(value.size()) + " bytes long; at most " +
           std::to_string(kMaxMpsPipeDirectoryLength) + " (its control socket's path must fit 108 bytes)";
  }
  for (size_t i = 0; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c > 0x7e)
      return "has the byte " + HexByte(c) + " at offset " + std::to_string(i) + " (printable ASCII only)";
  }
  return {};
}

std::string PodNamespaceProblem(std::string_view value) {
  if (value.empty()) return "is empty";
  if (value.size() > kMaxPodNamespaceLength) {
    return "is " + std::to_string(value.size()) + " bytes long; a namespace (DNS-1123 label) has " +
           "at most " + std::to_string(kMaxPodNamespaceLength);
  }
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] == '.') {
      return "has a '.' at offset " + std::to_string(i) + " (a namespace is one DNS-1123 label)";
    }
  }
  return LabelProblem(value, 0);
}

std::string PodNameProblem(std::string_view value) {
  if (value.empty()) return "is empty";
  if (value.size() > kMaxPodNameLength) {
    return "is " + std::to_string(value.size()) + " bytes long; a pod name (DNS-1123 subdomain) " +
           "has at most " + std::to_string(kMaxPodNameLength);
  }
  size_t start = 0;
  for (;;) {
    const size_t dot = value.find('.', start);
    const std::string_view label =
        value.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (std::string why = LabelProblem(label, start); !why.empty()) return why;
    if (dot == std::string_view::npos) return {};
    start = dot + 1;
  }
}

Result<MessageType> PeekMessageType(std::span<const std::byte> bytes) {
  if (bytes.size() < sizeof(WireHeader)) {
    return Malformed("message of " + std::to_string(bytes.size()) + " bytes is shorter than a header");
  }
  WireHeader h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (h.magic != kWireMagic) return Malformed("bad magic (not a gshare message)");
  if (h.abi_version != kWireAbiVersion) {
    return Status(StatusCode::kVersionMismatch,
                  "peer speaks protocol ABI version " + std::to_string(h.abi_version) +
                      ", this side speaks " + std::to_string(kWireAbiVersion));
  }
  if (h.reserved != 0) return Malformed("reserved header field is not 0");
  if (h.length != bytes.size()) {
    return Malformed("header length " + std::to_string(h.length) + " but packet has " +
                     std::to_string(bytes.size()) + " bytes");
  }
  switch (static_cast<MessageType>(h.type)) {
    case MessageType::kRegisterRequest:
    case MessageType::kRegisterReply:
    case MessageType::kGoodbye:
    case MessageType::kShareQuery:
    case MessageType::kShareAnswer:
      return static_cast<MessageType>(h.type);
  }
  return Malformed("unknown message type " + std::to_string(h.type));
}

Result<std::vector<std::byte>> EncodeRequest(const RegisterRequest& request) {
  if (Status s = ValidateRequest(request, StatusCode::kInvalidArgument); !s.ok()) return s;
  RegisterRequestWire w{};
  w.header = MakeHeader(MessageType::kRegisterRequest, sizeof(w));
  w.quota_bytes = request.quota_bytes;
  w.slo_ms = request.slo_ms;
  w.flags = request.flags;
  w.previous_client_id = request.previous_client_id;
  w.current_gpu = request.current_gpu;
  w.resident_bytes = request.resident_bytes;
  if (Status s = WriteFixedString(request.function_name, w.function_name, sizeof(w.function_name),
                                  "function_name");
      !s.ok()) {
    return s;
  }
  if (Status s = WriteFixedString(request.pod_namespace, w.pod_namespace, sizeof(w.pod_namespace),
                                  "pod_namespace");
      !s.ok()) {
    return s;
  }
  if (Status s = WriteFixedString(request.pod_name, w.pod_name, sizeof(w.pod_name), "pod_name");
      !s.ok()) {
    return s;
  }
  w.mps_share = request.mps_share;
  w.compute_demand_pct = request.compute_demand_pct;
  w.bandwidth_demand_pct = request.bandwidth_demand_pct;
  w.device_count = static_cast<uint32_t>(request.device_uuids.size());
  for (size_t d = 0; d < request.device_uuids.size(); ++d) {
    std::memcpy(w.device_uuids[d], request.device_uuids[d].data(), sizeof(w.device_uuids[d]));
  }
  return ToBytes(w);
}

Result<std::vector<std::byte>> EncodeReply(const RegisterReply& reply) {
  if (Status s = ValidateReply(reply, StatusCode::kInvalidArgument); !s.ok()) return s;
  RegisterReplyWire w{};
  w.header = MakeHeader(MessageType::kRegisterReply, sizeof(w));
  w.accepted = reply.accepted ? 1 : 0;
  w.gpu = reply.gpu;
  w.client_id = reply.client_id;
  w.channel_size = reply.channel_size;
  w.quota_bytes = reply.quota_bytes;
  w.arbiter_epoch = reply.arbiter_epoch;
  if (Status s = WriteFixedString(reply.reason, w.reason, sizeof(w.reason), "reason"); !s.ok()) {
    return s;
  }
  if (reply.accepted) {
    w.device_count = static_cast<uint32_t>(reply.device_gpus.size());
    for (size_t d = 0; d < reply.device_gpus.size(); ++d) w.device_gpus[d] = reply.device_gpus[d];
  }
  return ToBytes(w);
}

Result<std::vector<std::byte>> EncodeGoodbye(const Goodbye& goodbye) {
  GoodbyeWire w{};
  w.header = MakeHeader(MessageType::kGoodbye, sizeof(w));
  if (Status s = WriteFixedString(goodbye.reason, w.reason, sizeof(w.reason), "reason"); !s.ok()) {
    return s;
  }
  return ToBytes(w);
}

Result<RegisterRequest> DecodeRequest(std::span<const std::byte> bytes) {
  auto wire = ReadWire<RegisterRequestWire>(bytes, MessageType::kRegisterRequest);
  if (!wire.ok()) return wire.status();
  RegisterRequest r;
  r.quota_bytes = wire->quota_bytes;
  r.slo_ms = wire->slo_ms;
  r.flags = wire->flags;
  r.previous_client_id = wire->previous_client_id;
  r.current_gpu = wire->current_gpu;
  r.resident_bytes = wire->resident_bytes;
  auto name = ReadFixedString(wire->function_name, sizeof(wire->function_name), "function_name",
                              /*allow_empty=*/true);
  if (!name.ok()) return name.status();
  r.function_name = std::move(name).value();
  auto pod_namespace = ReadFixedString(wire->pod_namespace, sizeof(wire->pod_namespace),
                                       "pod_namespace", /*allow_empty=*/true);
  if (!pod_namespace.ok()) return pod_namespace.status();
  r.pod_namespace = std::move(pod_namespace).value();
  auto pod_name =
      ReadFixedString(wire->pod_name, sizeof(wire->pod_name), "pod_name", /*allow_empty=*/true);
  if (!pod_name.ok()) return pod_name.status();
  r.pod_name = std::move(pod_name).value();
  if (wire->reserved2 != 0) return Status(StatusCode::kMalformed, "reserved2 is not zero");
  r.mps_share = wire->mps_share;
  r.compute_demand_pct = wire->compute_demand_pct;
  r.bandwidth_demand_pct = wire->bandwidth_demand_pct;
  if (wire->reserved3 != 0) return Malformed("reserved3 is not zero");
  if (wire->device_count > kMaxReportedDevices) {
    return Malformed("device_count " + std::to_string(wire->device_count) + " exceeds " +
                     std::to_string(kMaxReportedDevices));
  }
  for (size_t d = 0; d < kMaxReportedDevices; ++d) {
    std::array<uint8_t, 16> uuid{};
    std::memcpy(uuid.data(), wire->device_uuids[d], uuid.size());
    if (d < wire->device_count) {
      r.device_uuids.push_back(uuid);
    } else if (uuid != std::array<uint8_t, 16>{}) {
      return Malformed("device_uuids[" + std::to_string(d) + "] is set past device_count");
    }
  }
  if (Status s = ValidateRequest(r, StatusCode::kMalformed); !s.ok()) return s;
  return r;
}

Result<RegisterReply> DecodeReply(std::span<const std::byte> bytes) {
  auto wire = ReadWire<RegisterReplyWire>(bytes, MessageType::kRegisterReply);
  if (!wire.ok()) return wire.status();
  if (wire->accepted > 1) return Malformed("accepted is neither 0 nor 1");
  RegisterReply r;
  r.accepted = wire->accepted == 1;
  r.gpu = wire->gpu;
  r.client_id = wire->client_id;
  r.channel_size = wire->channel_size;
  r.quota_bytes = wire->quota_bytes;
  r.arbiter_epoch = wire->arbiter_epoch;
  auto reason = ReadFixedString(wire->reason, sizeof(wire->reason), "reason", /*allow_empty=*/true);
  if (!reason.ok()) return reason.status();
  r.reason = std::move(reason).value();
  if (wire->reserved2 != 0) return Malformed("reserved2 is not zero");
  if (wire->device_count > (r.accepted ? kMaxReportedDevices : 0)) {
    return Malformed("device_count " + std::to_string(wire->device_count) +
                     (r.accepted ? " exceeds " + std::to_string(kMaxReportedDevices)
                                 : " in a refusal"));
  }
  for (size_t d = 0; d < kMaxReportedDevices; ++d) {
    if (d < wire->device_count) {
      r.device_gpus.push_back(wire->device_gpus[d]);
    } else if (wire->device_gpus[d] != 0) {
      return Malformed("device_gpus[" + std::to_string(d) + "] is set past device_count");
    }
  }
  if (Status s = ValidateReply(r, StatusCode::kMalformed); !s.ok()) return s;
  return r;
}

Result<Goodbye> DecodeGoodbye(std::span<const std::byte> bytes) {
  auto wire = ReadWire<GoodbyeWire>(bytes, MessageType::kGoodbye);
  if (!wire.ok()) return wire.status();
  auto reason = ReadFixedString(wire->reason, sizeof(wire->reason), "reason", /*allow_empty=*/true);
  if (!reason.ok()) return reason.status();
  return Goodbye{std::move(reason).value()};
}

Result<std::vector<std::byte>> EncodeShareQuery(const ShareQuery& query) {
  if (Status s = ValidateShareQuery(query, StatusCode::kInvalidArgument); !s.ok()) return s;
  ShareQueryWire w{};
  w.header = MakeHeader(MessageType::kShareQuery, sizeof(w));
  w.quota_bytes = query.quota_bytes;
  w.slo_ms = query.slo_ms;
  w.compute_demand_pct = query.compute_demand_pct;
  w.bandwidth_demand_pct = query.bandwidth_demand_pct;
  if (Status s = WriteFixedString(query.function_name, w.function_name, sizeof(w.function_name),
                                  "function_name");
      !s.ok()) {
    return s;
  }
  return ToBytes(w);
}

Result<std::vector<std::byte>> EncodeShareAnswer(const ShareAnswer& answer) {
  if (Status s = ValidateShareAnswer(answer, StatusCode::kInvalidArgument); !s.ok()) return s;
  ShareAnswerWire w{};
  w.header = MakeHeader(MessageType::kShareAnswer, sizeof(w));
  w.gpu = answer.gpu;
  w.corun = answer.corun ? 1 : 0;
  w.share_pct = answer.share_pct;
  w.memory_limit_bytes = answer.memory_limit_bytes;
  w.arbiter_epoch = answer.arbiter_epoch;
  if (Status s = WriteFixedString(answer.reason, w.reason, sizeof(w.reason), "reason"); !s.ok()) {
    return s;
  }
  std::memcpy(w.gpu_uuid, answer.gpu_uuid.data(), sizeof(w.gpu_uuid));
  if (Status s = WriteFixedString(answer.mps_pipe_directory, w.mps_pipe_directory,
                                  sizeof(w.mps_pipe_directory), "mps_pipe_directory");
      !s.ok()) {
    return s;
  }
  return ToBytes(w);
}

Result<ShareQuery> DecodeShareQuery(std::span<const std::byte> bytes) {
  auto wire = ReadWire<ShareQueryWire>(bytes, MessageType::kShareQuery);
  if (!wire.ok()) return wire.status();
  if (wire->reserved != 0) return Malformed("share query reserved field is not 0");
  ShareQuery q;
  q.quota_bytes = wire->quota_bytes;
  q.slo_ms = wire->slo_ms;
  q.compute_demand_pct = wire->compute_demand_pct;
  q.bandwidth_demand_pct = wire->bandwidth_demand_pct;
  auto name = ReadFixedString(wire->function_name, sizeof(wire->function_name), "function_name",
                              /*allow_empty=*/true);
  if (!name.ok()) return name.status();
  q.function_name = std::move(name).value();
  if (Status s = ValidateShareQuery(q, StatusCode::kMalformed); !s.ok()) return s;
  return q;
}

Result<ShareAnswer> DecodeShareAnswer(std::span<const std::byte> bytes) {
  auto wire = ReadWire<ShareAnswerWire>(bytes, MessageType::kShareAnswer);
  if (!wire.ok()) return wire.status();
  if (wire->reserved != 0) return Malformed("share answer reserved field is not 0");
  if (wire->corun > 1) return Malformed("corun is neither 0 nor 1");
  ShareAnswer a;
  a.gpu = wire->gpu;
  a.corun = wire->corun == 1;
  a.share_pct = wire->share_pct;
  a.memory_limit_bytes = wire->memory_limit_bytes;
  a.arbiter_epoch = wire->arbiter_epoch;
  auto reason = ReadFixedString(wire->reason, sizeof(wire->reason), "reason", /*allow_empty=*/true);
  if (!reason.ok()) return reason.status();
  a.reason = std::move(reason).value();
  std::memcpy(a.gpu_uuid.data(), wire->gpu_uuid, sizeof(wire->gpu_uuid));
  auto pipe = ReadFixedString(wire->mps_pipe_directory, sizeof(wire->mps_pipe_directory),
                              "mps_pipe_directory", /*allow_empty=*/true);
  if (!pipe.ok()) return pipe.status();
  a.mps_pipe_directory = std::move(pipe).value();
  if (Status s = ValidateShareAnswer(a, StatusCode::kMalformed); !s.ok()) return s;
  return a;
}

}  // namespace gshare::shm
