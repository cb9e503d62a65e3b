// The PTX of the simcuda kernel set, embedded at build time (library simcuda_kernels_ptx), for
// programs that load the kernels with cuModuleLoadData on simcuda or on a real GPU:
//   cuModuleLoadData(&module, basic_kernels_ptx);
// Each array is NUL-terminated PTX text with static storage duration. Which kernel is in which
// module, and each kernel's signature and launch geometry: simcuda/kernels/kernels.h.
#ifndef SIMCUDA_KERNELS_PTX_H_
#define SIMCUDA_KERNELS_PTX_H_

extern "C" {
extern const char basic_kernels_ptx[];  // vector_add, saxpy, fill_u32, checksum, sleep_ns
extern const char gemm_ptx[];           // sgemm, sgemm_batched
extern const char nn_kernels_ptx[];     // bias_act, gelu, softmax_rows, layernorm_rows,
                                        // embedding, argmax_rows, transpose
extern const char cnn_kernels_ptx[];    // conv2d_3x3, maxpool_2x2
}

#endif  // SIMCUDA_KERNELS_PTX_H_
