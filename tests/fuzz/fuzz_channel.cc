// Fuzz target: the shared-memory channel as the arbiter reads it. A malicious client can write
// anything into its page, including the arbiter's own lines; ArbiterChannel::ReadClient must
// never crash, hang or accept a value outside the documented ranges (docs/protocol.md, "What
// the arbiter validates"), and the arbiter's own state (grant and order sequences) must not
// change because of what the client wrote.
// Input: quota, now, how many orders/grants the arbiter issued, where the client's bytes go,
// then the bytes the client writes.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fuzz_input.h"
#include "gshare/shm/channel.h"
#include "gshare/shm/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace shm = gshare::shm;
  gshare::fuzz::FuzzInput in(data, size);
  shm::ChannelInit init;
  init.client_id = 1 + static_cast<uint32_t>(in.Below(1000));
  init.gpu = static_cast<uint32_t>(in.Below(shm::kMaxGpus));
  init.arbiter_epoch = 7;
  init.quota_bytes = 1 + in.Below(shm::kMaxQuotaBytes);
  init.slo_ms = 100;
  // CLOCK_MONOTONIC stays far below 2^62 ns (146 years of uptime).
  const uint64_t now = in.Below(uint64_t{1} << 62);
  const unsigned orders = static_cast<unsigned>(in.Below(4));
  const unsigned grants = static_cast<unsigned>(in.Below(3));
  const bool whole_page = (in.Take<uint8_t>() & 1) != 0;

  auto channel = shm::ArbiterChannel::Create(init);
  FUZZ_CHECK(channel.ok());  // fails if an earlier input leaked fds or mappings
  shm::ArbiterChannel& a = channel.value();
  for (unsigned i = 0; i < orders; ++i) a.IssueSwapOrder(shm::SwapOp::kSwapOut, init.gpu, now);
  uint32_t seq = 0;
  for (unsigned i = 0; i < grants; ++i) seq = a.Grant(init.gpu, now + 1000);
  const uint32_t order_seq = a.order_seq();
  const bool granted = a.granted();

  // The client's write: its own four lines (offset 256), or the whole page from offset 0.
  auto* page = reinterpret_cast<unsigned char*>(a.layout());
  const size_t start = whole_page ? 0 : offsetof(shm::ChannelLayout, client_token);
  const std::string_view bytes = in.Rest();
  const size_t n = bytes.size() < shm::kChannelSegmentSize - start ? bytes.size()
                                                                  : shm::kChannelSegmentSize - start;
  std::memcpy(page + start, bytes.data(), n);

  const auto view = a.ReadClient(now);
  const bool released = a.Released();
  if (view.ok()) {
    const shm::ClientView& v = view.value();
    const uint64_t max_bytes = init.quota_bytes + shm::kResidentSlackBytes;
    FUZZ_CHECK(static_cast<uint32_t>(v.state) < shm::kClientTokenStateCount);
    FUZZ_CHECK(static_cast<uint32_t>(v.residency) < shm::kResidencyCount);
    FUZZ_CHECK(static_cast<uint32_t>(v.ack_status) <= 1);
    FUZZ_CHECK(v.ack_seq <= order_seq);
    FUZZ_CHECK(v.ack_bytes_moved <= max_bytes && v.resident_bytes <= max_bytes);
    FUZZ_CHECK(v.resident_gpu == shm::kNoGpu || v.resident_gpu < shm::kMaxGpus);
    FUZZ_CHECK(v.burst_start_ns <= now + 1'000'000'000 && v.burst_end_ns <= now + 1'000'000'000);
    FUZZ_CHECK(v.heartbeat_ns <= now + 1'000'000'000);
    if (!v.in_burst && v.bursts_started != 0) {
      FUZZ_CHECK(v.burst_end_ns >= v.burst_start_ns);
      FUZZ_CHECK(v.burst_gpu_time_ns <= v.burst_end_ns - v.burst_start_ns);
    }
    FUZZ_CHECK(v.released == released);
  } else {
    // kTimeout: caught inside a burst-report write (odd or changing seqlock), read again later.
    FUZZ_CHECK(view.status().code() == shm::StatusCode::kMalformed ||
               view.status().code() == shm::StatusCode::kTimeout);
  }
  // The arbiter's truth is its own: nothing the client wrote changed it.
  FUZZ_CHECK(a.order_seq() == order_seq && a.granted() == granted && a.grant_seq() == seq);
  // The arbiter keeps working on the channel afterwards.
  a.Revoke();
  a.SetNextHint(true, 1000);
  a.RequestPreempt();
  (void)a.IssueSwapOrder(shm::SwapOp::kSwapIn, init.gpu, now);
  return 0;
}
