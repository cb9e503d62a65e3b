// ChooseRoom: which idle resident vGPUs the arbiter swaps out to make room on a GPU for a
// swap-in (ArbiterImpl::MakeRoom, arbiter_schedule.cc). The cheapest first: the fewest bytes per
// second of idleness (both the copy now and the copy back later scale with the bytes, and the
// longer idle is the less likely to be wanted back soon), and only as many as the room needs.
// None at all when even every candidate together would not make the room: evicting then would
// cost their copies (and their copies back) and still leave the swap-in waiting; it waits for
// memory freed otherwise (a client leaving, an orphan released, a swap-out the policy orders),
// and the choice is made again then.
#pragma once

#include <cstdint>
#include <vector>

namespace gshare::arbiter {

struct RoomCandidate {
  uint32_t client_id = 0;
  uint64_t bytes = 0;        // what its swap-out frees
  uint64_t last_use_ns = 0;  // when it last ran
};

// `available`: the bytes free on the GPU now plus those swap-outs in flight will free.
// Returns the client ids to swap out, in the order to issue them; empty if `available` already
// covers `need` or if the candidates cannot cover the rest.
std::vector<uint32_t> ChooseRoom(std::vector<RoomCandidate> candidates, uint64_t available,
                                 uint64_t need, uint64_t now_ns);

}  // namespace gshare::arbiter
