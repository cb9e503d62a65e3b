// Convolution kernels for the CNN-like sample; CPU twins in cnn_kernels.cc. Tensors are NCHW,
// float32. Grid-stride over output elements, so any grid covers the whole output.
#define GRID_STRIDE_LOOP(i, n)                                                        \
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; \
       i < (n); i += (unsigned long long)gridDim.x * blockDim.x)

// out[n][co][y][x] = act(bias[co] + sum over ci, ky, kx (in that order) of
//                        in[n][ci][y+ky-1][x+kx-1] * w[co][ci][ky][kx])
// 3x3 kernel, stride 1, zero padding 1 (output H x W); act is ReLU if relu != 0.
extern "C" __global__ void conv2d_3x3(const float* in, const float* w, const float* bias,
                                      float* out, unsigned int batch, unsigned int cin,
                                      unsigned int h, unsigned int wd, unsigned int cout,
                                      int relu) {
  const unsigned long long total = (unsigned long long)batch * cout * h * wd;
  GRID_STRIDE_LOOP(i, total) {
    const unsigned x = i % wd, y = (i / wd) % h;
    const unsigned co = (i / ((unsigned long long)wd * h)) % cout;
    const unsigned n = i / ((unsigned long long)wd * h * cout);
    float acc = bias[co];
    for (unsigned ci = 0; ci < cin; ++ci) {
      const float* plane = in + ((size_t)n * cin + ci) * h * wd;
      const float* k = w + ((size_t)co * cin + ci) * 9;
      for (int ky = 0; ky < 3; ++ky) {
        const int iy = (int)y + ky - 1;
        if (iy < 0 || iy >= (int)h) continue;
        for (int kx = 0; kx < 3; ++kx) {
          const int ix = (int)x + kx - 1;
          if (ix < 0 || ix >= (int)wd) continue;
          acc += plane[(size_t)iy * wd + ix] * k[ky * 3 + kx];
        }
      }
    }
    out[i] = (relu && acc < 0.0f) ? 0.0f : acc;
  }
}

// out[n][c][y][x] = max of the 2x2 window at (2y, 2x); output is (h/2) x (w/2) (floor).
extern "C" __global__ void maxpool_2x2(const float* in, float* out, unsigned int batch,
                                       unsigned int channels, unsigned int h, unsigned int wd) {
  const unsigned oh = h / 2, ow = wd / 2;
  const unsigned long long total = (unsigned long long)batch * channels * oh * ow;
  GRID_STRIDE_LOOP(i, total) {
    const unsigned x = i % ow, y = (i / ow) % oh;
    const unsigned long long plane = i / ((unsigned long long)ow * oh);
    const float* p = in + plane * h * wd + (size_t)(2 * y) * wd + 2 * x;
    float m = p[0];
    m = p[1] > m ? p[1] : m;
    m = p[wd] > m ? p[wd] : m;
    m = p[wd + 1] > m ? p[wd + 1] : m;
    out[i] = m;
  }
}
