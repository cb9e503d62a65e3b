// CPU twins of cnn_kernels.cu: conv2d_3x3 (NCHW, stride 1, zero padding 1, optional ReLU) and
// maxpool_2x2. Each conv output starts from its bias and adds the taps in (ci, ky, kx) order,
// as the GPU version does; here the loops run plane by plane so the inner loop is contiguous.
#include <algorithm>

#include "kernel_args.h"
#include "kernel_tables.h"

namespace simcuda::kernels {
namespace {

void Conv2d3x3(const SimcudaLaunchDims*, void* const* p) {
  const float* in = Arg<const float*>(p, 0);
  const float* w = Arg<const float*>(p, 1);
  const float* bias = Arg<const float*>(p, 2);
  float* out = Arg<float*>(p, 3);
  const unsigned batch = Arg<unsigned>(p, 4), cin = Arg<unsigned>(p, 5);
  const unsigned h = Arg<unsigned>(p, 6), wd = Arg<unsigned>(p, 7);
  const unsigned cout = Arg<unsigned>(p, 8);
  const bool relu = Arg<int>(p, 9) != 0;
  const size_t plane = size_t{h} * wd;
  if (plane == 0) return;
  for (unsigned n = 0; n < batch; ++n) {
    for (unsigned co = 0; co < cout; ++co) {
      float* o = out + (size_t{n} * cout + co) * plane;
      std::fill(o, o + plane, bias[co]);
      for (unsigned ci = 0; ci < cin; ++ci) {
        const float* src = in + (size_t{n} * cin + ci) * plane;
        const float* k = w + (size_t{co} * cin + ci) * 9;
        for (int ky = 0; ky < 3; ++ky) {
          for (unsigned kx = 0; kx < 3; ++kx) {
            const float tap = k[ky * 3 + kx];
            // Output x range whose input column x + kx - 1 lies inside [0, wd).
            const unsigned x_lo = kx == 0 ? 1 : 0;
            const unsigned x_hi = kx == 2 ? wd - 1 : wd;
            for (unsigned y = 0; y < h; ++y) {
              const int iy = static_cast<int>(y) + ky - 1;
              if (iy < 0 || iy >= static_cast<int>(h)) continue;
              const float* srow = src + static_cast<size_t>(iy) * wd;
              float* orow = o + size_t{y} * wd;
              for (unsigned x = x_lo; x < x_hi; ++x) orow[x] += srow[x + kx - 1] * tap;
            }
          }
        }
      }
      if (relu) {
        for (size_t i = 0; i < plane; ++i) o[i] = o[i] < 0.0f ? 0.0f : o[i];
      }
    }
  }
}
SimcudaKernelCost Conv2d3x3Cost(const SimcudaLaunchDims*, void* const* p) {
  const double batch = Arg<unsigned>(p, 4), cin = Arg<unsigned>(p, 5);
  const double plane = static_cast<double>(Arg<unsigned>(p, 6)) * Arg<unsigned>(p, 7);
  const double cout = Arg<unsigned>(p, 8);
  const double flops = 2.0 * 9.0 * batch * cout * cin * plane;
  const double bytes = 4.0 * (batch * cin * plane + cout * cin * 9.0 + cout + batch * cout * plane);
  return Work(flops, bytes);
}

void MaxPool2x2(const SimcudaLaunchDims*, void* const* p) {
  const float* in = Arg<const float*>(p, 0);
  float* out = Arg<float*>(p, 1);
  const unsigned batch = Arg<unsigned>(p, 2), channels = Arg<unsigned>(p, 3);
  const unsigned h = Arg<unsigned>(p, 4), wd = Arg<unsigned>(p, 5);
  const unsigned oh = h / 2, ow = wd / 2;
  for (size_t plane = 0; plane < size_t{batch} * channels; ++plane) {
    for (unsigned y = 0; y < oh; ++y) {
      const float* r0 = in + plane * h * wd + size_t{2 * y} * wd;
      const float* r1 = r0 + wd;
      float* o = out + (plane * oh + y) * ow;
      for (unsigned x = 0; x < ow; ++x) {
        float m = r0[2 * x];
        m = r0[2 * x + 1] > m ? r0[2 * x + 1] : m;
        m = r1[2 * x] > m ? r1[2 * x] : m;
        m = r1[2 * x + 1] > m ? r1[2 * x + 1] : m;
        o[x] = m;
      }
    }
  }
}
SimcudaKernelCost MaxPool2x2Cost(const SimcudaLaunchDims*, void* const* p) {
  const double planes = static_cast<double>(Arg<unsigned>(p, 2)) * Arg<unsigned>(p, 3);
  const double n = planes * Arg<unsigned>(p, 4) * Arg<unsigned>(p, 5);
  return Work(0.75 * n, 5.0 * n);  // read every input, write a quarter
}

using F = const float*;
using U = unsigned;
constexpr SimcudaKernelDesc kTable[] = {
    Describe<F, F, F, float*, U, U, U, U, U, int>("conv2d_3x3", Conv2d3x3, Conv2d3x3Cost),
    Describe<F, float*, U, U, U, U>("maxpool_2x2", MaxPool2x2, MaxPool2x2Cost),
};

}  // namespace

std::span<const SimcudaKernelDesc> CnnKernels() { return kTable; }

}  // namespace simcuda::kernels
