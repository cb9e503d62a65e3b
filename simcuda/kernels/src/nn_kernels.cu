// Neural-network building blocks for the BERT-like and LLM-like samples; CPU twins in
// nn_kernels.cc. float32, row-major. Element-wise kernels are grid-stride (any grid). Row
// kernels (softmax_rows, layernorm_rows, argmax_rows) take one block per row, grid-stride over
// rows, with blockDim.x a power of two <= 1024 (256 recommended).
#define GRID_STRIDE_LOOP(i, n)                                                        \
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; \
       i < (n); i += (unsigned long long)gridDim.x * blockDim.x)

__device__ __forceinline__ float Gelu(float x) {
  // tanh approximation (as in BERT / GPT-2)
  return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}

// Tree reduction of one value per thread in shared memory; op is + or max.
template <bool kMax>
__device__ float BlockReduce(float v, float* scratch) {
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) {
      float o = scratch[threadIdx.x + s];
      scratch[threadIdx.x] = kMax ? fmaxf(scratch[threadIdx.x], o) : scratch[threadIdx.x] + o;
    }
    __syncthreads();
  }
  float r = scratch[0];
  __syncthreads();
  return r;
}

// x[r][c] = act(x[r][c] + bias[c]); act: 0 none, 1 ReLU, 2 GELU (tanh approximation).
extern "C" __global__ void bias_act(float* x, const float* bias, unsigned int rows,
                                    unsigned int cols, int act) {
  GRID_STRIDE_LOOP(i, (unsigned long long)rows * cols) {
    float v = x[i] + bias[i % cols];
    if (act == 1) v = v < 0.0f ? 0.0f : v;
    if (act == 2) v = Gelu(v);
    x[i] = v;
  }
}

// x[i] = GELU(x[i]) (tanh approximation)
extern "C" __global__ void gelu(float* x, unsigned long long n) {
  GRID_STRIDE_LOOP(i, n) { x[i] = Gelu(x[i]); }
}

// Each row in place: x = softmax(scale * x), computed as exp(scale*x - max) / sum.
extern "C" __global__ void softmax_rows(float* x, unsigned int rows, unsigned int cols,
                                        float scale) {
  __shared__ float scratch[1024];
  for (unsigned r = blockIdx.x; r < rows; r += gridDim.x) {
    float* row = x + (size_t)r * cols;
    float m = -INFINITY;
    for (unsigned c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, scale * row[c]);
    m = BlockReduce<true>(m, scratch);
    float s = 0.0f;
    for (unsigned c = threadIdx.x; c < cols; c += blockDim.x) {
      float e = expf(scale * row[c] - m);
      row[c] = e;
      s += e;
    }
    s = BlockReduce<false>(s, scratch);
    for (unsigned c = threadIdx.x; c < cols; c += blockDim.x) row[c] /= s;
  }
}

// y[r] = (x[r] - mean) / sqrt(var + eps) * gamma + beta, per row (biased variance, two passes).
extern "C" __global__ void layernorm_rows(const float* x, float* y, const float* gamma,
                                          const float* beta, unsigned int rows,
                                          unsigned int cols, float eps) {
  __shared__ float scratch[1024];
  for (unsigned r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* in = x + (size_t)r * cols;
    float* out = y + (size_t)r * cols;
    float s = 0.0f;
    for (unsigned c = threadIdx.x; c < cols; c += blockDim.x) s += in[c];
    const float mean = BlockReduce<false>(s, scratch) / cols;
    float v = 0.0f;
    for (unsigned c = threadIdx.x; c < cols; c += blockDim.x) {
      float d = in[c] - mean;
      v += d * d;
    }
    const float inv = 1.0f / sqrtf(BlockReduce<false>(v, scratch) / cols + eps);
    for (unsigned c = threadIdx.x; c < cols; c += blockDim.x) {
      out[c] = (in[c] - mean) * inv * gamma[c] + beta[c];
    }
  }
}

// out[i][d] = table[ids[i]][d]; rows of out for ids outside [0, vocab) are zero.
extern "C" __global__ void embedding(const int* ids, const float* table, float* out,
                                     unsigned int n_ids, unsigned int dim, unsigned int vocab) {
  GRID_STRIDE_LOOP(i, (unsigned long long)n_ids * dim) {
    const int id = ids[i / dim];
    out[i] = (id >= 0 && (unsigned)id < vocab) ? table[(size_t)id * dim + i % dim] : 0.0f;
  }
}

// out[r] = index of the largest x[r][c] (the lowest such index on ties); input must be NaN-free.
extern "C" __global__ void argmax_rows(const float* x, int* out, unsigned int rows,
                                       unsigned int cols) {
  __shared__ float best_v[1024];
  __shared__ int best_i[1024];
  for (unsigned r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* row = x + (size_t)r * cols;
    float bv = -INFINITY;
    int bi = cols > 0 ? 0 : -1;
    for (unsigned c = threadIdx.x; c < cols; c += blockDim.x) {
      if (row[c] > bv) { bv = row[c]; bi = (int)c; }
    }
    best_v[threadIdx.x] = bv;
    best_i[threadIdx.x] = bi;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) {
        float ov = best_v[threadIdx.x + s];
        int oi = best_i[threadIdx.x + s];
        if (ov > best_v[threadIdx.x] || (ov == best_v[threadIdx.x] && oi < best_i[threadIdx.x])) {
          best_v[threadIdx.x] = ov;
          best_i[threadIdx.x] = oi;
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) out[r] = best_i[0];
    __syncthreads();
  }
}

// out[c][r] = in[r][c]  (in is rows x cols, out is cols x rows)
extern "C" __global__ void transpose(const float* in, float* out, unsigned int rows,
                                     unsigned int cols) {
  GRID_STRIDE_LOOP(i, (unsigned long long)rows * cols) {
    const unsigned r = i / cols, c = i % cols;
    out[(size_t)c * rows + r] = in[i];
  }
}
