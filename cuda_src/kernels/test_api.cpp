// The kernels as a C library, for tests: built for the CPU (_kernels_cpu.so)
// and for CUDA (_kernels_cuda.so, with AOTIRT_MODEL_CUDA) with the same
// exported names, so one ctypes test drives both. Pointers are raw host or
// device addresses; `stream` is a cudaStream_t (ignored on the CPU).
#include "kernels.h"

namespace k = kernels::active;

#define KERNEL_API extern "C" __attribute__((visibility("default")))

KERNEL_API int aotirt_kernel_matmul(const float* a, const float* b, const float* bias, float* c, int64_t m,
                                    int64_t n, int64_t kdim, void* stream) {
  return k::matmul(a, b, bias, c, m, n, kdim, stream);
}

KERNEL_API int aotirt_kernel_matmul_gelu(const float* a, const float* b, const float* bias, float* c, int64_t m,
                                         int64_t n, int64_t kdim, void* stream) {
  return k::matmul_gelu(a, b, bias, c, m, n, kdim, stream);
}

KERNEL_API int aotirt_kernel_matmul_pair(const float* a, const float* b0, const float* b1, float* c0, float* c1,
                                         int64_t m, int64_t n, int64_t kdim, void* stream) {
  return k::matmul_pair(a, b0, b1, c0, c1, m, n, kdim, stream);
}

KERNEL_API int aotirt_kernel_conv1d_k3(const float* x, const float* w, const float* bias, float* out, int64_t t,
                                       int64_t cin, int64_t cout, void* stream) {
  return k::conv1d_k3(x, w, bias, out, t, cin, cout, stream);
}

KERNEL_API int aotirt_kernel_gelu(const float* x, float* y, int64_t n, void* stream) {
  return k::gelu(x, y, n, stream);
}

KERNEL_API int aotirt_kernel_add(const float* a, const float* b, float* out, int64_t n, void* stream) {
  return k::add(a, b, out, n, stream);
}

KERNEL_API int aotirt_kernel_layer_norm(const float* x, const float* gamma, const float* beta, float* out,
                                        int64_t rows, int64_t cols, float eps, void* stream) {
  return k::layer_norm(x, gamma, beta, out, rows, cols, eps, stream);
}

KERNEL_API int aotirt_kernel_attention(const float* q, const float* kmat, const float* v, const float* residual,
                                       float* out, int64_t t, int64_t dim, void* stream) {
  return k::attention(q, kmat, v, residual, out, t, dim, stream);
}

KERNEL_API int aotirt_kernel_argmax(const float* x, int64_t n, int64_t* out, void* stream) {
  return k::argmax(x, n, out, stream);
}

KERNEL_API int aotirt_kernel_embedding(const float* table, const int64_t* token, float* out, int64_t vocab,
                                       int64_t dim, void* stream) {
  return k::embedding(table, token, out, vocab, dim, stream);
}
