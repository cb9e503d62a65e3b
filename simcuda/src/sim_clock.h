// Simulated time. Simulated nanoseconds are CLOCK_MONOTONIC nanoseconds divided by the time
// scale (SIMCUDA_TIME_SCALE), so every process on the machine shares one simulated clock as
// long as they use the same scale. Durations are realised by sleeping, never spinning.
// Thread-safe after SetTimeScale (called once at cuInit).
#ifndef SIMCUDA_SRC_SIM_CLOCK_H_
#define SIMCUDA_SRC_SIM_CLOCK_H_

#include <cstdint>

namespace simcuda {

// REQUIRES: scale > 0. Real seconds per simulated second.
void SetTimeScale(double scale);
double TimeScale();

// Current simulated time in ns.
uint64_t SimNowNs();
// Sleeps (clock_nanosleep, absolute) until the simulated clock reaches `sim_ns`.
void SleepUntilSim(uint64_t sim_ns);
// Simulated ns that `bytes` take at `bytes_per_s` (0 bytes_per_s = unlimited = 0 ns).
uint64_t TransferNs(double bytes, double bytes_per_s);

}  // namespace simcuda

#endif  // SIMCUDA_SRC_SIM_CLOCK_H_
