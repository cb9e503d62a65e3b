// Registration wire format: round trips and every class of malformed message.
#include "gshare/shm/wire.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

namespace gshare::shm {
namespace {

RegisterRequest ValidRequest() {
  RegisterRequest r;
  r.quota_bytes = 1536ULL << 20;
  r.slo_ms = 100;
  r.function_name = "resnet50-infer";
  return r;
}

RegisterReply ValidReply() {
  RegisterReply r;
  r.accepted = true;
  r.gpu = 3;
  r.client_id = 42;
  r.channel_size = 4096;
  r.quota_bytes = 1536ULL << 20;
  r.arbiter_epoch = 7;
  return r;
}

std::vector<std::byte> Bytes(const RegisterRequest& r) {
  auto b = EncodeRequest(r);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return b.ok() ? b.value() : std::vector<std::byte>{};
}

// Overwrites `size` bytes at `offset` of an encoded message.
template <typename T>
std::vector<std::byte> Patch(std::vector<std::byte> bytes, size_t offset, T value) {
  if (offset + sizeof(T) > bytes.size()) {
    ADD_FAILURE() << "patch outside the message";
    return bytes;
  }
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
  return bytes;
}

void ExpectMalformed(const Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), StatusCode::kMalformed) << s.ToString();
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.ToString();
}

TEST(WireTest, RequestRoundTrip) {
  RegisterRequest r = ValidRequest();
  r.flags = kFlagReRegister | kFlagResident;
  r.previous_client_id = 9;
  r.current_gpu = 1;
  r.resident_bytes = 1ULL << 20;
  auto bytes = Bytes(r);
  ASSERT_EQ(bytes.size(), sizeof(RegisterRequestWire));
  auto d = DecodeRequest(bytes);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->quota_bytes, r.quota_bytes);
  EXPECT_EQ(d->slo_ms, 100U);
  EXPECT_EQ(d->flags, r.flags);
  EXPECT_EQ(d->previous_client_id, 9U);
  EXPECT_EQ(d->current_gpu, 1U);
  EXPECT_EQ(d->resident_bytes, 1ULL << 20);
  EXPECT_EQ(d->function_name, "resnet50-infer");
}

// Version 2: the pod (attribution) travels with the request; hostile values are refused by the
// decoder with the field named (they become metric labels and log text in the arbiter).
TEST(WireTest, PodFields) {
  RegisterRequest r = ValidRequest();
  r.pod_namespace = "team-a";
  r.pod_name = "resnet-7d4b9c-x2k4p";
  const auto bytes = Bytes(r);
  ASSERT_EQ(bytes.size(), 768u);
  auto back = DecodeRequest(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->pod_namespace, "team-a");
  EXPECT_EQ(back->pod_name, "resnet-7d4b9c-x2k4p");
  EXPECT_TRUE(DecodeRequest(Bytes(ValidRequest()))->pod_name.empty());

  const size_t name_at = offsetof(RegisterRequestWire, pod_name);
  const size_t ns_at = offsetof(RegisterRequestWire, pod_namespace);
  auto with = [&](size_t at, const std::string& value) {
    std::vector<std::byte> b = bytes;
    std::memset(b.data() + at, 0, at == name_at ? kPodNameSize : kPodNamespaceSize);
    std::memcpy(b.data() + at, value.data(), std::min(value.size(), at == name_at ? kPodNameSize : kPodNamespaceSize));
    return b;
  };
  for (const std::string& bad : {std::string("x\"} 1"), std::string("Upper"), std::string("a_b"),
                                 std::string("-a"), std::string("a..b"), std::string(254, 'a')}) {
    ExpectMalformed(DecodeRequest(with(name_at, bad)).status(), "pod_name");
  }
  ExpectMalformed(DecodeRequest(with(name_at, "line\nbreak")).status(), "pod_name has a non-printable");
  ExpectMalformed(DecodeRequest(with(name_at, std::string(kPodNameSize, 'a'))).status(),
                  "pod_name is not NUL-terminated");
  for (const std::string& bad : {std::string("a.b"), std::string(64, 'n'), std::string("ns\"")}) {
    ExpectMalformed(DecodeRequest(with(ns_at, bad)).status(), "pod_namespace");
  }
  // Bytes after the NUL are refused too (nothing hides behind a name).
  std::vector<std::byte> hidden = bytes;
  hidden[name_at + 30] = std::byte{'x'};
  ExpectMalformed(DecodeRequest(hidden).status(), "pod_name has bytes after its NUL");
  // The encoder applies the same rules.
  RegisterRequest enc = ValidRequest();
  enc.pod_name = "Bad_Name";
  EXPECT_EQ(EncodeRequest(enc).status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(EncodeRequest(enc).status().message().find("pod_name"), std::string::npos);
  // The rules themselves.
  EXPECT_EQ(PodNameProblem("a.b-c.d0"), "");
  EXPECT_NE(PodNameProblem("a\x01"), "");
  EXPECT_EQ(PodNamespaceProblem("kube-system"), "");
  EXPECT_NE(PodNamespaceProblem("kube.system").find("'.'"), std::string::npos);
}

// Version 2: a late first registration (the process ran stand-alone) describes what it holds
// like a re-registration, without a previous id.
TEST(WireTest, LateFirstRegistration) {
  RegisterRequest late = ValidRequest();
  late.flags = kFlagLate | kFlagResident;
  late.current_gpu = 1;
  late.resident_bytes = 1ULL << 20;
  auto back = DecodeRequest(Bytes(late));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->flags, kFlagLate | kFlagResident);
  EXPECT_EQ(back->current_gpu, 1u);
  RegisterRequest bad = late;
  bad.flags |= kFlagReRegister;
  bad.previous_client_id = 3;
  EXPECT_NE(EncodeRequest(bad).status().message().find("late flag with re-register"), std::string::npos);
  bad = late;
  bad.previous_client_id = 3;
  EXPECT_NE(EncodeRequest(bad).status().message().find("previous_client_id"), std::string::npos);
}

// Version 3: what a co-runner's process got (its MPS share) and what its kernels need travel
// with the request; values beyond 100 percent and a non-zero reserved word are malformed.
TEST(WireTest, CorunFields) {
  RegisterRequest r = ValidRequest();
  r.mps_share = 50;
  r.compute_demand_pct = 20;
  r.bandwidth_demand_pct = 7;
  const auto bytes = Bytes(r);
  auto back = DecodeRequest(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->mps_share, 50u);
  EXPECT_EQ(back->compute_demand_pct, 20u);
  EXPECT_EQ(back->bandwidth_demand_pct, 7u);
  EXPECT_EQ(DecodeRequest(Bytes(ValidRequest()))->mps_share, 0u);
  ExpectMalformed(DecodeRequest(Patch<uint32_t>(bytes, offsetof(RegisterRequestWire, mps_share), 101)).status(),
                  "mps_share");
  ExpectMalformed(
      DecodeRequest(Patch<uint8_t>(bytes, offsetof(RegisterRequestWire, compute_demand_pct), 200)).status(),
      "compute_demand_pct");
  ExpectMalformed(
      DecodeRequest(Patch<uint8_t>(bytes, offsetof(RegisterRequestWire, bandwidth_demand_pct), 101)).status(),
      "bandwidth_demand_pct");
  ExpectMalformed(DecodeRequest(Patch<uint16_t>(bytes, offsetof(RegisterRequestWire, reserved2), 1)).status(),
                  "reserved2");
}

TEST(WireTest, ReplyAndGoodbyeRoundTrip) {
  auto bytes = EncodeReply(ValidReply());
  ASSERT_TRUE(bytes.ok());
  auto d = DecodeReply(*bytes);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->accepted);
  EXPECT_EQ(d->gpu, 3U);
  EXPECT_EQ(d->client_id, 42U);
  EXPECT_EQ(d->arbiter_epoch, 7U);

  RegisterReply refuse;
  refuse.reason = "quota 64 GiB exceeds every GPU";
  refuse.arbiter_epoch = 7;
  auto rb = EncodeReply(refuse);
  ASSERT_TRUE(rb.ok());
  auto rd = DecodeReply(*rb);
  ASSERT_TRUE(rd.ok());
  EXPECT_FALSE(rd->accepted);
  EXPECT_EQ(rd->reason, refuse.reason);

  auto gb = EncodeGoodbye(Goodbye{"arbiter shutting down"});
  ASSERT_TRUE(gb.ok());
  auto gd = DecodeGoodbye(*gb);
  ASSERT_TRUE(gd.ok());
  EXPECT_EQ(gd->reason, "arbiter shutting down");
  EXPECT_EQ(*PeekMessageType(*gb), MessageType::kGoodbye);
}

// The share query and its answer (version 4): round trips, and every rule of the answer named
// when broken (the shim reports a bad answer as a clear error and leaves the environment alone).
TEST(WireTest, ShareQueryAndAnswer) {
  ShareQuery q;
  q.quota_bytes = 0;  // not known before cuInit
  q.slo_ms = 50;
  q.compute_demand_pct = 20;
  q.bandwidth_demand_pct = 10;
  q.function_name = "small";
  auto qb = EncodeShareQuery(q);
  ASSERT_TRUE(qb.ok()) << qb.status().ToString();
  EXPECT_EQ(qb->size(), sizeof(ShareQueryWire));
  auto qd = DecodeShareQuery(*qb);
  ASSERT_TRUE(qd.ok()) << qd.status().ToString();
  EXPECT_EQ(qd->slo_ms, 50u);
  EXPECT_EQ(qd->compute_demand_pct, 20);
  EXPECT_EQ(qd->function_name, "small");
  ExpectMalformed(DecodeShareQuery(Patch<uint32_t>(*qb, 24, 0)).status(), "slo_ms is 0");
  ExpectMalformed(DecodeShareQuery(Patch<uint8_t>(*qb, 28, 101)).status(), "compute_demand_pct");
  ExpectMalformed(DecodeShareQuery(Patch<uint16_t>(*qb, 30, 1)).status(), "reserved");
  ExpectMalformed(DecodeRequest(*qb).status(), "unexpected message type 4");
  q.slo_ms = 0;
  EXPECT_EQ(EncodeShareQuery(q).status().code(), StatusCode::kInvalidArgument);

  ShareAnswer a;
  a.gpu = 0;
  a.corun = true;
  a.share_pct = 25;
  a.arbiter_epoch = 7;
  auto ab = EncodeShareAnswer(a);
  ASSERT_TRUE(ab.ok()) << ab.status().ToString();
  EXPECT_EQ(ab->size(), sizeof(ShareAnswerWire));
  auto ad = DecodeShareAnswer(*ab);
  ASSERT_TRUE(ad.ok()) << ad.status().ToString();
  EXPECT_TRUE(ad->corun);
  EXPECT_EQ(ad->share_pct, 25u);
  EXPECT_EQ(ad->gpu, 0u);
  ExpectMalformed(DecodeShareAnswer(Patch<uint32_t>(*ab, 24, 250)).status(), "share_pct 250");
  ExpectMalformed(DecodeShareAnswer(Patch<uint32_t>(*ab, 24, 0)).status(), "share_pct 0");
  ExpectMalformed(DecodeShareAnswer(Patch<uint32_t>(*ab, 20, 2)).status(), "corun is neither");
  ExpectMalformed(DecodeShareAnswer(Patch<uint32_t>(*ab, 16, shm::kNoGpu)).status(), "names no gpu");
  ExpectMalformed(DecodeShareAnswer(Patch<uint64_t>(*ab, 40, 0)).status(), "arbiter_epoch");
  ExpectMalformed(DecodeShareAnswer(Patch<uint32_t>(*ab, 28, 1)).status(), "reserved");
  // Not co-run: no share.
  ExpectMalformed(DecodeShareAnswer(Patch<uint32_t>(Patch<uint32_t>(*ab, 20, 0), 24, 25)).status(),
                  "without corun carries a share");
  a.corun = false;
  a.share_pct = 0;
  a.reason = "GPU 0 is not marked for co-running";
  ab = EncodeShareAnswer(a);
  ASSERT_TRUE(ab.ok()) << ab.status().ToString();
  ad = DecodeShareAnswer(*ab);
  ASSERT_TRUE(ad.ok()) << ad.status().ToString();
  EXPECT_FALSE(ad->corun);
  EXPECT_EQ(ad->reason, a.reason);
  ExpectMalformed(DecodeShareAnswer(std::span(*ab).first(100)).status(), "header length");
}

// Version 5: the answer names the GPU's UUID and the MPS pipe directory of its daemon, which
// only a co-run answer may carry, absolute, printable and short enough for its control socket.
TEST(WireTest, ShareAnswerNamesTheGpusUuidAndItsMpsPipeDirectory) {
  ShareAnswer a;
  a.gpu = 1;
  a.corun = true;
  a.share_pct = 50;
  a.arbiter_epoch = 3;
  for (size_t i = 0; i < a.gpu_uuid.size(); ++i) a.gpu_uuid[i] = static_cast<uint8_t>(0xa0 + i);
  a.mps_pipe_directory = "/run/gshare/mps/gpu1/pipe";
  auto ab = EncodeShareAnswer(a);
  ASSERT_TRUE(ab.ok()) << ab.status().ToString();
  EXPECT_EQ(ab->size(), 384u);
  auto ad = DecodeShareAnswer(*ab);
  ASSERT_TRUE(ad.ok()) << ad.status().ToString();
  EXPECT_EQ(ad->gpu_uuid, a.gpu_uuid);
  EXPECT_EQ(ad->mps_pipe_directory, a.mps_pipe_directory);

  const size_t pipe = offsetof(ShareAnswerWire, mps_pipe_directory);
  ExpectMalformed(DecodeShareAnswer(Patch<char>(*ab, pipe, 'r')).status(),
                  "mps_pipe_directory is not an absolute path");
  ExpectMalformed(DecodeShareAnswer(Patch<char>(*ab, pipe + 3, '\x7f')).status(),
                  "mps_pipe_directory has a non-printable byte");
  ExpectMalformed(DecodeShareAnswer(Patch<char>(*ab, pipe + 127, 'x')).status(),
                  "mps_pipe_directory has bytes after its NUL");
  std::vector<std::byte> unterminated = *ab;
  for (size_t i = 0; i < kMpsPipeDirectorySize; ++i) unterminated[pipe + i] = std::byte{'a'};
  ExpectMalformed(DecodeShareAnswer(unterminated).status(), "mps_pipe_directory is not NUL-terminated");
  std::vector<std::byte> too_long = *ab;
  for (size_t i = 0; i < 100; ++i) too_long[pipe + i] = std::byte{'a'};
  too_long[pipe] = std::byte{'/'};
  ExpectMalformed(DecodeShareAnswer(too_long).status(), "is 100 bytes long; at most 99");
  ExpectMalformed(DecodeShareAnswer(Patch<uint32_t>(Patch<uint32_t>(*ab, 20, 0), 24, 0)).status(),
                  "without corun names an MPS pipe directory");

  a.mps_pipe_directory = "relative/pipe";
  EXPECT_EQ(EncodeShareAnswer(a).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MpsPipeDirectoryProblem("/a/b"), "");
  EXPECT_NE(MpsPipeDirectoryProblem("/a\tb").find("0x09 at offset 2"), std::string::npos);
  // Not co-run: the GPU's UUID may be named, a pipe directory may not.
  a.corun = false;
  a.share_pct = 0;
  a.mps_pipe_directory.clear();
  ab = EncodeShareAnswer(a);
  ASSERT_TRUE(ab.ok()) << ab.status().ToString();
  ad = DecodeShareAnswer(*ab);
  ASSERT_TRUE(ad.ok()) << ad.status().ToString();
  EXPECT_EQ(ad->gpu_uuid, a.gpu_uuid);
  EXPECT_EQ(ad->mps_pipe_directory, "");
}

// Version 6: the request names the process's devices by UUID, in its own order (with them its
// current_gpu is a device index), and the reply the arbiter's ordinal of each; counts past the
// limit, bytes past the count and a current_gpu beyond the devices are refused.
TEST(WireTest, RegistrationNamesTheProcesssDevicesByUuid) {
  RegisterRequest r = ValidRequest();
  r.flags = kFlagLate | kFlagResident;
  r.resident_bytes = 1;
  r.device_uuids = {std::array<uint8_t, 16>{1, 2, 3}, std::array<uint8_t, 16>{9, 9}};
  r.current_gpu = 1;  // its device 1
  const auto bytes = Bytes(r);
  auto back = DecodeRequest(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->device_uuids, r.device_uuids);
  EXPECT_EQ(back->current_gpu, 1u);
  EXPECT_TRUE(DecodeRequest(Bytes(ValidRequest()))->device_uuids.empty());
  r.current_gpu = 2;  // past its two devices
  EXPECT_FALSE(EncodeRequest(r).ok());
  ExpectMalformed(DecodeRequest(Patch<uint32_t>(bytes, offsetof(RegisterRequestWire, current_gpu), 2)).status(),
                  "current_gpu");
  r.current_gpu = 1;
  r.device_uuids.resize(kMaxReportedDevices + 1);
  EXPECT_FALSE(EncodeRequest(r).ok());
  ExpectMalformed(DecodeRequest(Patch<uint32_t>(bytes, offsetof(RegisterRequestWire, device_count), 17)).status(),
                  "device_count 17 exceeds 16");
  ExpectMalformed(DecodeRequest(Patch<uint8_t>(bytes, offsetof(RegisterRequestWire, device_uuids) + 2 * 16, 7)).status(),
                  "device_uuids[2] is set past device_count");
  ExpectMalformed(DecodeRequest(Patch<uint32_t>(bytes, offsetof(RegisterRequestWire, reserved3), 1)).status(),
                  "reserved3");

  RegisterReply reply = ValidReply();
  reply.device_gpus = {1, kNoGpu};
  auto encoded = EncodeReply(reply);
  ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();
  auto reply_back = DecodeReply(*encoded);
  ASSERT_TRUE(reply_back.ok()) << reply_back.status().ToString();
  EXPECT_EQ(reply_back->device_gpus, reply.device_gpus);
  ExpectMalformed(DecodeReply(Patch<uint32_t>(*encoded, offsetof(RegisterReplyWire, device_gpus), kMaxGpus)).status(),
                  "device_gpus names GPU 1024");
  ExpectMalformed(DecodeReply(Patch<uint32_t>(*encoded, offsetof(RegisterReplyWire, device_gpus) + 4 * 5, 3)).status(),
                  "device_gpus[5] is set past device_count");
  reply.device_gpus.assign(kMaxReportedDevices + 1, 0);
  EXPECT_FALSE(EncodeReply(reply).ok());
}

TEST(WireTest, HeaderErrors) {
  const auto good = Bytes(ValidRequest());
  ExpectMalformed(DecodeRequest(std::span(good).first(10)).status(), "shorter than a header");
  ExpectMalformed(DecodeRequest({}).status(), "shorter than a header");
  ExpectMalformed(DecodeRequest(Patch<uint32_t>(good, 0, 0xdeadbeef)).status(), "magic");
  auto version = DecodeRequest(Patch<uint16_t>(good, 4, kWireAbiVersion + 1));
  EXPECT_EQ(version.status().code(), StatusCode::kVersionMismatch);
  EXPECT_NE(version.status().message().find("version " + std::to_string(kWireAbiVersion + 1)),
            std::string::npos);
  // Older peers (version 1: before the pod fields; 2: before the co-run fields; 3: before the
  // share query; 4: before the answer's GPU UUID and pipe directory; 5: before the process's
  // devices by UUID) are refused with both versions named.
  for (uint16_t v : {uint16_t{1}, uint16_t{2}, uint16_t{3}, uint16_t{4}, uint16_t{5}}) {
    auto old = DecodeRequest(Patch<uint16_t>(good, 4, v));
    EXPECT_EQ(old.status().code(), StatusCode::kVersionMismatch);
    EXPECT_NE(old.status().message().find("version " + std::to_string(v) + ", this side speaks 6"),
              std::string::npos)
        << old.status().ToString();
  }
  ExpectMalformed(DecodeRequest(Patch<uint16_t>(good, 6, 99)).status(), "unknown message type");
  ExpectMalformed(DecodeRequest(Patch<uint32_t>(good, 8, 100)).status(), "header length");
  ExpectMalformed(DecodeRequest(Patch<uint32_t>(good, 12, 1)).status(), "reserved");
  // A valid reply handed to the request decoder.
  auto reply = EncodeReply(ValidReply());
  ExpectMalformed(DecodeRequest(*reply).status(), "unexpected message type");
  // Right type, wrong size (header length consistent with the packet).
  auto longer = good;
  longer.resize(good.size() + 8);
  longer = Patch<uint32_t>(longer, 8, static_cast<uint32_t>(longer.size()));
  ExpectMalformed(DecodeRequest(longer).status(), "does not match the type");
}

TEST(WireTest, StringErrors) {
  const auto good = Bytes(ValidRequest());
  const size_t name = offsetof(RegisterRequestWire, function_name);
  auto unterminated = good;
  std::memset(unterminated.data() + name, 'a', kFunctionNameSize);
  ExpectMalformed(DecodeRequest(unterminated).status(), "not NUL-terminated");
  ExpectMalformed(DecodeRequest(Patch<char>(good, name + 2, '\n')).status(), "non-printable");
  ExpectMalformed(DecodeRequest(Patch<char>(good, name + 100, 'x')).status(), "after its NUL");

  auto refuse_bytes = EncodeReply([] {
    RegisterReply r;
    r.reason = "no";
    r.arbiter_epoch = 1;
    return r;
  }());
  ASSERT_TRUE(refuse_bytes.ok());
  ExpectMalformed(DecodeReply(Patch<uint16_t>(*refuse_bytes, offsetof(RegisterReplyWire, reason), 0)).status(),
                  "without a reason");
}

TEST(WireTest, AbsurdValues) {
  const auto good = Bytes(ValidRequest());
  const size_t quota = offsetof(RegisterRequestWire, quota_bytes);
  const size_t slo = offsetof(RegisterRequestWire, slo_ms);
  const size_t flags = offsetof(RegisterRequestWire, flags);
  ExpectMalformed(DecodeRequest(Patch<uint64_t>(good, quota, 0)).status(), "quota_bytes is 0");
  ExpectMalformed(DecodeRequest(Patch<uint64_t>(good, quota, ~0ULL)).status(), "16 TiB");
  ExpectMalformed(DecodeRequest(Patch<uint32_t>(good, slo, 0)).status(), "slo_ms is 0");
  ExpectMalformed(DecodeRequest(Patch<uint32_t>(good, slo, 4'000'000)).status(), "one hour");
  ExpectMalformed(DecodeRequest(Patch<uint32_t>(good, flags, 0x80)).status(), "unknown bits");
  ExpectMalformed(DecodeRequest(Patch<uint32_t>(good, flags, kFlagResident)).status(), "resident flag");
  ExpectMalformed(DecodeRequest(Patch<uint32_t>(good, flags, kFlagReRegister)).status(),
                  "previous_client_id");
  ExpectMalformed(
      DecodeRequest(Patch<uint32_t>(good, offsetof(RegisterRequestWire, current_gpu), 2)).status(),
      "current_gpu");

  // Re-registration: resident bytes may exceed the quota by granule rounding, not more.
  RegisterRequest rereg = ValidRequest();
  rereg.flags = kFlagReRegister;
  rereg.previous_client_id = 1;
  rereg.resident_bytes = rereg.quota_bytes + (2 << 20);
  const auto rereg_bytes = Bytes(rereg);
  EXPECT_TRUE(DecodeRequest(rereg_bytes).ok());
  // Swapped out, it may name the GPU its process lives on (a GPU, not an absurd number).
  const size_t gpu_at = offsetof(RegisterRequestWire, current_gpu);
  EXPECT_EQ(DecodeRequest(Patch<uint32_t>(rereg_bytes, gpu_at, 1))->current_gpu, 1U);
  ExpectMalformed(DecodeRequest(Patch<uint32_t>(rereg_bytes, gpu_at, kMaxGpus)).status(),
                  "current_gpu");
  ExpectMalformed(DecodeRequest(Patch<uint64_t>(rereg_bytes, offsetof(RegisterRequestWire, resident_bytes),
                                                rereg.quota_bytes + kResidentSlackBytes + 1))
                      .status(),
                  "resident_bytes");

  auto reply = EncodeReply(ValidReply());
  ASSERT_TRUE(reply.ok());
  ExpectMalformed(DecodeReply(Patch<uint32_t>(*reply, offsetof(RegisterReplyWire, accepted), 2)).status(),
                  "neither 0 nor 1");
  ExpectMalformed(DecodeReply(Patch<uint32_t>(*reply, offsetof(RegisterReplyWire, gpu), 5000)).status(),
                  "out of range");
  ExpectMalformed(DecodeReply(Patch<uint32_t>(*reply, offsetof(RegisterReplyWire, client_id), 0)).status(),
                  "client_id 0");
  ExpectMalformed(
      DecodeReply(Patch<uint32_t>(*reply, offsetof(RegisterReplyWire, channel_size), 100)).status(),
      "channel_size");
  ExpectMalformed(
      DecodeReply(Patch<uint64_t>(*reply, offsetof(RegisterReplyWire, arbiter_epoch), 0)).status(),
      "arbiter_epoch");
}

TEST(WireTest, EncoderRejectsBadInput) {
  RegisterRequest r = ValidRequest();
  r.function_name = std::string(200, 'x');
  EXPECT_EQ(EncodeRequest(r).status().code(), StatusCode::kInvalidArgument);
  r.function_name = "bad\tname";
  EXPECT_EQ(EncodeRequest(r).status().code(), StatusCode::kInvalidArgument);
  r = ValidRequest();
  r.quota_bytes = 0;
  EXPECT_EQ(EncodeRequest(r).status().code(), StatusCode::kInvalidArgument);
  RegisterReply refuse;
  refuse.arbiter_epoch = 1;
  EXPECT_EQ(EncodeReply(refuse).status().code(), StatusCode::kInvalidArgument);  // no reason
}

// Random garbage and single-byte mutations of valid messages must decode to OK or an error,
// never crash (run under the sanitizer build for UB).
TEST(WireTest, FuzzNeverCrashes) {
  std::mt19937_64 rng(12345);
  const auto good = Bytes(ValidRequest());
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<std::byte> bytes;
    if (i % 2 == 0) {
      bytes.resize(rng() % 400);
      for (auto& b : bytes) b = static_cast<std::byte>(rng());
      if (bytes.size() >= 8 && i % 4 == 0) {  // plausible header to get past the magic
        bytes = Patch<uint32_t>(bytes, 0, kWireMagic);
        bytes = Patch<uint16_t>(bytes, 4, kWireAbiVersion);
        bytes = Patch<uint16_t>(bytes, 6, static_cast<uint16_t>(1 + rng() % 5));
      }
    } else {
      bytes = good;
      bytes[rng() % bytes.size()] = static_cast<std::byte>(rng());
    }
    auto req = DecodeRequest(bytes);
    (void)DecodeReply(bytes);
    (void)DecodeGoodbye(bytes);
    (void)DecodeShareQuery(bytes);
    (void)DecodeShareAnswer(bytes);
    if (req.ok()) ++accepted;
  }
  EXPECT_GT(accepted, 0);  // some mutations (e.g. of the name) stay valid
}

}  // namespace
}  // namespace gshare::shm
