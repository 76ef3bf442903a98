// The kernels of the encoder/decoder example models, twice: plain C++ in
// kernels::cpu (the CPU builds) and CUDA in kernels::cuda (the CUDA builds).
//
// The two sets have the same signatures, so a model picks its set with one
// namespace alias and the rest of its code is the same for both builds. All
// tensors are contiguous, row-major float32 unless stated; pointers are host
// memory for kernels::cpu and device memory for kernels::cuda.
//
// Every function returns 0 on success. The CUDA ones launch on `stream` (a
// cudaStream_t), never wait for the GPU, and return the cudaError_t of
// cudaGetLastError() after the launch (or cudaErrorInvalidValue, without
// launching, for sizes they cannot launch). The CPU ones ignore `stream` and
// cannot fail.
#pragma once

#include <cstdint>

namespace kernels {
namespace cpu {

// c[m, n] = a[m, k] @ b[k, n] (+ bias[n] when bias is not null).
int matmul(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t n, int64_t k,
           void* stream);

// c = gelu(a @ b + bias): matmul and gelu in one pass (one launch on a GPU).
int matmul_gelu(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t n, int64_t k,
                void* stream);

// c0 = a @ b0 and c1 = a @ b1, no bias: two projections of one input in one
// pass (one launch on a GPU). b0, b1 [k, n]; c0, c1 [m, n], not overlapping.
int matmul_pair(const float* a, const float* b0, const float* b1, float* c0, float* c1, int64_t m, int64_t n,
                int64_t k, void* stream);

// Convolution over time, kernel 3, padding 1, stride 1 (torch's Conv1d on
// x.T): out[t, o] = bias[o] + sum over c, j of w[o, c, j] * x[t + j - 1, c],
// with x [t, cin], w [cout, cin, 3], out [t, cout]; rows outside x count as
// zero. bias may be null.
int conv1d_k3(const float* x, const float* w, const float* bias, float* out, int64_t t, int64_t cin,
              int64_t cout, void* stream);

// y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), elementwise; y may be x.
int gelu(const float* x, float* y, int64_t n, void* stream);

// out = a + b, elementwise; out may be a or b.
int add(const float* a, const float* b, float* out, int64_t n, void* stream);

// Each row of x [rows, cols]: (x - mean) / sqrt(var + eps) * gamma + beta,
// var the population variance (torch.nn.LayerNorm).
int layer_norm(const float* x, const float* gamma, const float* beta, float* out, int64_t rows, int64_t cols,
               float eps, void* stream);

// One query against t keys: out = residual + sum over i of p_i v[i], with
// p = softmax(k[i] . q / sqrt(dim)) computed max-subtracted. q, residual and
// out [dim], k and v [t, dim]; residual may be null (counts as zeros), out
// must not overlap the inputs. t == 0 gives the residual.
int attention(const float* q, const float* k, const float* v, const float* residual, float* out, int64_t t,
              int64_t dim, void* stream);

// out[0] = index of the largest x: the first one on ties, and NaN counts as
// the largest (numpy's argmax). -1 when n == 0.
int argmax(const float* x, int64_t n, int64_t* out, void* stream);

// out[d] = table[*token, d], table [vocab, dim]. A token outside [0, vocab)
// fills out with NaN: the bad step then shows in everything computed from
// it, where reading the row would have read out of bounds.
int embedding(const float* table, const int64_t* token, float* out, int64_t vocab, int64_t dim, void* stream);

}  // namespace cpu

// The same kernels on a CUDA stream. The token of embedding() is read on the
// device: it never goes through the host.
namespace cuda {

int matmul(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t n, int64_t k,
           void* stream);
int matmul_gelu(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t n, int64_t k,
                void* stream);
int matmul_pair(const float* a, const float* b0, const float* b1, float* c0, float* c1, int64_t m, int64_t n,
                int64_t k, void* stream);
int conv1d_k3(const float* x, const float* w, const float* bias, float* out, int64_t t, int64_t cin,
              int64_t cout, void* stream);
int gelu(const float* x, float* y, int64_t n, void* stream);
int add(const float* a, const float* b, float* out, int64_t n, void* stream);
int layer_norm(const float* x, const float* gamma, const float* beta, float* out, int64_t rows, int64_t cols,
               float eps, void* stream);
// t is at most kMaxAttentionLength: the scores stay in shared memory.
int attention(const float* q, const float* k, const float* v, const float* residual, float* out, int64_t t,
              int64_t dim, void* stream);
int argmax(const float* x, int64_t n, int64_t* out, void* stream);
int embedding(const float* table, const int64_t* token, float* out, int64_t vocab, int64_t dim, void* stream);

// 32 KiB of scores, plus 4 KiB of partial sums, within the 48 KiB of shared
// memory a block gets by default.
constexpr int64_t kMaxAttentionLength = 8192;

}  // namespace cuda
}  // namespace kernels
