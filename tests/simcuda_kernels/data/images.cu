// Test input for module image scanning (tests/simcuda_kernels): compiled by nvcc at build time to
// PTX, cubin and fatbins. Two extern "C" kernels, one C++ (mangled) kernel and a non-inlined
// device function that must NOT be reported as an entry.
extern "C" __device__ __noinline__ float image_helper(float x) { return x * 2.0f; }

extern "C" __global__ void image_add(const float* a, const float* b, float* c, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + image_helper(b[i]);
}

extern "C" __global__ void image_scale(float* x, float s, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}

__global__ void image_mangled(int* p) { *p = 1; }
