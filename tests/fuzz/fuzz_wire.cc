// Fuzz target: the registration messages as the arbiter (and the shim) decode them
// (shm/wire.h). Any packet: decoding never crashes or reads out of bounds, the decoders agree
// with PeekMessageType, and whatever decodes re-encodes to exactly the same bytes (strict,
// canonical decoding: nothing a client sends is silently normalised).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "fuzz_input.h"
#include "gshare/shm/wire.h"

namespace {

using gshare::shm::MessageType;

// If `decoded` is a message of `type`, it must re-encode to exactly `input`.
template <typename Decoded, typename Encode>
void CheckRoundTrip(const Decoded& decoded, Encode encode, MessageType type,
                    const gshare::shm::Result<MessageType>& peeked,
                    std::span<const std::byte> input) {
  if (!decoded.ok()) return;
  FUZZ_CHECK(peeked.ok() && peeked.value() == type);
  const auto again = encode(decoded.value());
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again.value().size() == input.size());
  FUZZ_CHECK(std::memcmp(again.value().data(), input.data(), input.size()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace shm = gshare::shm;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  const auto type = shm::PeekMessageType(bytes);

  const auto request = shm::DecodeRequest(bytes);
  const auto reply = shm::DecodeReply(bytes);
  const auto goodbye = shm::DecodeGoodbye(bytes);
  CheckRoundTrip(request, shm::EncodeRequest, MessageType::kRegisterRequest, type, bytes);
  CheckRoundTrip(reply, shm::EncodeReply, MessageType::kRegisterReply, type, bytes);
  CheckRoundTrip(goodbye, shm::EncodeGoodbye, MessageType::kGoodbye, type, bytes);
  const auto query = shm::DecodeShareQuery(bytes);
  const auto answer = shm::DecodeShareAnswer(bytes);
  CheckRoundTrip(query, shm::EncodeShareQuery, MessageType::kShareQuery, type, bytes);
  CheckRoundTrip(answer, shm::EncodeShareAnswer, MessageType::kShareAnswer, type, bytes);
  if (answer.ok() && answer->corun) FUZZ_CHECK(answer->share_pct >= 1 && answer->share_pct <= 100);
  if (request.ok()) {
    FUZZ_CHECK(request->quota_bytes >= 1 && request->quota_bytes <= shm::kMaxQuotaBytes);
    FUZZ_CHECK(request->function_name.size() < shm::kFunctionNameSize);
    // What the arbiter turns into metric labels obeys Kubernetes' name rules (no quote, no
    // newline, no backslash can reach a label value).
    FUZZ_CHECK(request->pod_name.empty() || shm::PodNameProblem(request->pod_name).empty());
    FUZZ_CHECK(request->pod_namespace.empty() ||
               shm::PodNamespaceProblem(request->pod_namespace).empty());
  }
  // At most one decoder accepts a packet.
  FUZZ_CHECK(int{request.ok()} + int{reply.ok()} + int{goodbye.ok()} + int{query.ok()} +
                 int{answer.ok()} <=
             1);
  return 0;
}
