// ChannelSegment: memfd creation, initialisation and sealing (arbiter); verification and
// mapping (client).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "gshare/shm/channel.h"

namespace gshare::shm {
namespace {
constexpr int kRequiredSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
}  // namespace

Result<ChannelSegment> ChannelSegment::Create(const ChannelInit& init) {
  if (init.client_id == 0 || init.arbiter_epoch == 0 || init.quota_bytes == 0) {
    return Status(StatusCode::kInvalidArgument, "channel init needs client_id, epoch and quota");
  }
  const std::string name = "gshare-channel-" + std::to_string(init.client_id);
  UniqueFd fd(::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return Status::FromErrno("memfd_create", errno);
  if (::ftruncate(fd.get(), kChannelSegmentSize) != 0) return Status::FromErrno("ftruncate", errno);
  auto mapping = Mapping::MapShared(fd.get(), kChannelSegmentSize, /*writable=*/true);
  if (!mapping.ok()) return mapping.status();
  // The pages are fresh zeroes; only the header needs values. Nobody else sees it yet.
  auto* layout = static_cast<ChannelLayout*>(mapping->data());
  ChannelHeader& h = layout->header;
  h.magic = kChannelMagic;
  h.abi_version = kChannelAbiVersion;
  h.layout_size = sizeof(ChannelLayout);
  h.client_id = init.client_id;
  h.gpu = init.gpu;
  h.arbiter_epoch = init.arbiter_epoch;
  h.quota_bytes = init.quota_bytes;
  h.slice_ns = init.slice_ns;
  h.slo_ms = init.slo_ms;
  layout->ack.resident_gpu = init.gpu;
  if (::fcntl(fd.get(), F_ADD_SEALS, kRequiredSeals) != 0) return Status::FromErrno("F_ADD_SEALS", errno);
  ChannelSegment s;
  s.fd_ = std::move(fd);
  s.mapping_ = std::move(mapping).value();
  return s;
}

Result<ChannelSegment> ChannelSegment::Attach(UniqueFd fd) {
  if (!fd) return Status(StatusCode::kInvalidArgument, "no channel fd");
  const int seals = ::fcntl(fd.get(), F_GET_SEALS);
  if (seals < 0) return Status::FromErrno("F_GET_SEALS on the channel (not a memfd?)", errno);
  if ((seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
    return Status(StatusCode::kMalformed, "channel memfd is not sealed against resizing");
  }
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno("fstat channel", errno);
  if (static_cast<size_t>(st.st_size) != kChannelSegmentSize) {
    return Status(StatusCode::kMalformed, "channel is " + std::to_string(st.st_size) +
                                              " bytes, expected " +
                                              std::to_string(kChannelSegmentSize));
  }
  auto mapping = Mapping::MapShared(fd.get(), kChannelSegmentSize, /*writable=*/true);
  if (!mapping.ok()) return mapping.status();
  const auto* h = &static_cast<const ChannelLayout*>(mapping->data())->header;
  if (h->magic != kChannelMagic) return Status(StatusCode::kMalformed, "channel has a bad magic");
  if (h->abi_version != kChannelAbiVersion) {
    return Status(StatusCode::kVersionMismatch,
                  "channel layout ABI version " + std::to_string(h->abi_version) +
                      " from the arbiter, this client speaks " + std::to_string(kChannelAbiVersion) +
                      ": upgrade the older of the two");
  }
  if (h->layout_size != sizeof(ChannelLayout)) {
    return Status(StatusCode::kVersionMismatch, "channel layout size differs from this client's");
  }
  ChannelSegment s;
  s.fd_ = std::move(fd);
  s.mapping_ = std::move(mapping).value();
  return s;
}

}  // namespace gshare::shm
