// Host computations simcuda-demo checks the device's results against. Thread-compatible.
#ifndef SIMCUDA_DEMO_HOST_REFERENCE_H_
#define SIMCUDA_DEMO_HOST_REFERENCE_H_

#include <string>
#include <vector>

namespace simcuda_demo {

// C = alpha * A * B + beta * C for row-major n x n matrices, accumulating in float in k order.
void HostSgemm(unsigned n, float alpha, const std::vector<float>& a, const std::vector<float>& b,
               float beta, std::vector<float>* c);

// Compares element-wise with tolerance tol * (1 + |want|); returns "" or a description of the
// first mismatch ("element 17: got 1.5, want 2").
std::string CompareFloats(const std::vector<float>& got, const std::vector<float>& want,
                          float tol);

// Uniform random floats in [-1, 1), deterministic for a seed.
std::vector<float> RandomFloats(size_t n, unsigned seed);

}  // namespace simcuda_demo

#endif  // SIMCUDA_DEMO_HOST_REFERENCE_H_
