// float32 attention as two cuBLAS batched GEMMs around a softmax kernel
// (sdpa_cublas.h says what and why; sdpa_cublas_plan.h how the matrices
// reach cuBLAS).

#include "shims/attention/sdpa_cublas.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_set>

#include "shims/libs/cublas.h"
#include "runtime/errors.h"
#include "runtime/tensor.h"
#include "shims/attention/sdpa_cublas_plan.h"
#include "shims/attention/sdpa_device.cuh"

namespace aotirt {
namespace attention {
namespace {

const char kWho[] = "scaled_dot_product_attention (cuBLAS path)";
constexpr int64_t kDefaultWorkspaceMiB = 256;
constexpr int64_t kMaxGrid = 1 << 20;  // grid-stride loops cover more

// ---------------------------------------------------------------- softmax

// One chunk of score rows, softmaxed in place.
struct SoftmaxArgs {
  float* scores = nullptr;  // [batch, heads, chunk_rows, ld]
  int64_t ld = 0;
  int64_t rows = 0;         // batch * heads * chunk_rows
  int64_t chunk_rows = 0;
  int64_t row0 = 0;         // the query row of the chunk's first row
  int64_t heads = 0, q_len = 0;
  int64_t kv_len = 0;       // the chunk's keys (Chunk::keys): the scores' columns
  int32_t causal = 0;       // 0: no causal mask; else key j is seen by row i when j <= i + causal_offset
  int64_t causal_offset = 0;
  const void* bias = nullptr;
  int32_t bias_dtype = AOTIRT_DTYPE_FLOAT32;
  int64_t bias_stride[4] = {};
  float* lse = nullptr;     // nullptr: not wanted
  int64_t lse_stride[3] = {};
  int64_t lse_padding = 0;
};

// kGroup threads softmax one row: a warp (four rows to a block of 128), or
// a block of 256 threads (one row to a block) for rows past 1024 keys.
template <int kGroup>
struct Group {
  static_assert(kGroup == 32 || kGroup == 256, "a row is a warp's or a block's");
  static constexpr int kBlock = kGroup == 32 ? 128 : kGroup;
  static constexpr int kWarps = kGroup / 32;
  static constexpr int kRowsPerBlock = kBlock / kGroup;

  // `v` combined by `op` over the group; `red` is kWarps floats of shared
  // memory. A block's group synchronises first, so that `red` is free again
  // after the previous call's reads.
  template <typename Op>
  static __device__ __forceinline__ float reduce(float v, float* red, Op op) {
    for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
    if constexpr (kWarps > 1) {
      __syncthreads();
      if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
      __syncthreads();
      v = red[0];
      for (int w = 1; w < kWarps; ++w) v = op(v, red[w]);
    }
    return v;
  }
  static __device__ __forceinline__ float max(float v, float* red) {
    return reduce(v, red, [](float x, float y) { return fmaxf(x, y); });
  }
  static __device__ __forceinline__ float sum(float v, float* red) {
    return reduce(v, red, [](float x, float y) { return x + y; });
  }
};

struct Row {
  float* s;               // its scores
  int64_t b, h, i;        // batch, query head, query row
  int64_t keys;           // it sees keys [0, keys): the causal mask
  int64_t bias;           // offset of its bias row
};

__device__ __forceinline__ Row row_at(const SoftmaxArgs& a, int64_t r) {
  Row row;
  const int64_t bh = r / a.chunk_rows;
  row.i = a.row0 + r % a.chunk_rows;
  row.h = bh % a.heads;
  row.b = bh / a.heads;
  row.s = a.scores + r * a.ld;
  row.keys = a.kv_len;
  if (a.causal) {
    const int64_t last = row.i + a.causal_offset;  // the last key the row sees
    row.keys = last < 0 ? 0 : (last + 1 < a.kv_len ? last + 1 : a.kv_len);
  }
  row.bias = row.b * a.bias_stride[0] + row.h * a.bias_stride[1] + row.i * a.bias_stride[2];
  return row;
}

// Key j's score after the bias (j < row.keys).
__device__ __forceinline__ float score_at(const SoftmaxArgs& a, const Row& row, int64_t j) {
  const float s = row.s[j];
  return a.bias ? bias_at(a.bias, a.bias_dtype, row.bias + j * a.bias_stride[3], s) : s;
}

// The row's log-sum-exp (0 when every key is masked out: sum == 0), and the
// +inf padding after the last row of each (batch, head).
__device__ __forceinline__ void store_lse(const SoftmaxArgs& a, const Row& row, float top, float sum, int tid,
                                          int group) {
  if (!a.lse) return;
  float* lse = a.lse + row.b * a.lse_stride[0] + row.h * a.lse_stride[1];
  if (tid == 0) lse[row.i * a.lse_stride[2]] = sum > 0.0f ? top + logf(sum) : 0.0f;
  if (row.i == a.q_len - 1)
    for (int64_t r = tid; r < a.lse_padding; r += group) lse[(a.q_len + r) * a.lse_stride[2]] = INFINITY;
}

// Rows of at most kGroup * kPer keys, held in registers: one read and one
// write of the scores, one exponential per key. With kPer 4, 8 or 16,
// thread tid holds the 16-byte vectors tid, tid + kGroup, ... of the row
// (score rows are 16-byte aligned: the workspace is, and ld is a multiple of
// 4): a quarter of the loads and stores. A vector that straddles the row's
// last visible key is read whole (it lies within the row's ld) and its
// entries past it masked; the stores write whole vectors up to the chunk's
// keys, the padding past them getting zeros that no GEMM reads.
template <int kGroup, int kPer>
__device__ __forceinline__ void cached_row(const SoftmaxArgs& a, const Row& row, int tid, float* red) {
  // 32-bit key indices (kv_len fits an int) and one base pointer with
  // constant offsets keep the unrolled loops' registers down.
  const int keys = static_cast<int>(row.keys), n = static_cast<int>(a.kv_len);
  // kPer == 32 stays scalar: its vector loads' masking passes the 64
  // registers and spills (nvcc -Xptxas -v).
  constexpr bool kVector = kPer % 4 == 0 && kPer <= 16;
  constexpr int kWidth = kVector ? 4 : 1;  // floats per load
  constexpr int kLoads = kPer / kWidth;
  // Key of entry e of load t: (t * kGroup + tid) * kWidth + e.
  float x[kPer];
  if constexpr (kVector) {
    const float4* s = reinterpret_cast<const float4*>(row.s) + tid;
#pragma unroll
    for (int t = 0; t < kLoads; ++t) {
      const int j = (t * kGroup + tid) * 4;
      const float4 v = j < keys ? s[t * kGroup] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
      x[4 * t] = v.x;  // j < keys, or -inf already
      x[4 * t + 1] = j + 1 < keys ? v.y : -INFINITY;
      x[4 * t + 2] = j + 2 < keys ? v.z : -INFINITY;
      x[4 * t + 3] = j + 3 < keys ? v.w : -INFINITY;
    }
  } else {
    const float* s = row.s + tid;
#pragma unroll
    for (int t = 0; t < kLoads; ++t) x[t] = t * kGroup + tid < keys ? s[t * kGroup] : -INFINITY;
  }
  if (a.bias) {
    const int64_t st = a.bias_stride[3], step = static_cast<int64_t>(kGroup) * kWidth * st;
    int64_t at = row.bias + static_cast<int64_t>(tid) * kWidth * st;
#pragma unroll
    for (int t = 0; t < kLoads; ++t, at += step)
#pragma unroll
      for (int e = 0; e < kWidth; ++e)
        if ((t * kGroup + tid) * kWidth + e < keys)
          x[t * kWidth + e] = bias_at(a.bias, a.bias_dtype, at + e * st, x[t * kWidth + e]);
  }
  float top = -INFINITY;
#pragma unroll
  for (int t = 0; t < kPer; ++t) top = fmaxf(top, x[t]);
  top = Group<kGroup>::max(top, red);
  // top == -inf: every key is masked out (exp(-inf - -inf) would be NaN).
  float sum = 0.0f;
#pragma unroll
  for (int t = 0; t < kPer; ++t) {
    x[t] = top == -INFINITY ? 0.0f : expf(x[t] - top);
    sum += x[t];
  }
  sum = Group<kGroup>::sum(sum, red);
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
  if constexpr (kVector) {
    float4* s = reinterpret_cast<float4*>(row.s) + tid;
#pragma unroll
    for (int t = 0; t < kLoads; ++t)
      if ((t * kGroup + tid) * 4 < n)
        s[t * kGroup] = make_float4(x[4 * t] * inv, x[4 * t + 1] * inv, x[4 * t + 2] * inv, x[4 * t + 3] * inv);
  } else {
    float* s = row.s + tid;
#pragma unroll
    for (int t = 0; t < kLoads; ++t)
      if (t * kGroup + tid < n) s[t * kGroup] = x[t] * inv;
  }
  store_lse(a, row, top, sum, tid, kGroup);
}

// Rows of any length: an online pass for the max and the sum (the sum
// rescaled when the max grows), then a second pass that writes.
template <int kGroup>
__device__ __forceinline__ void online_row(const SoftmaxArgs& a, const Row& row, int tid, float* red) {
  float top = -INFINITY, sum = 0.0f;
  for (int64_t j = tid; j < row.keys; j += kGroup) {
    const float x = score_at(a, row, j);
    if (x == -INFINITY) continue;  // masked out: adds nothing
    if (x > top) {
      sum = sum * expf(top - x) + 1.0f;  // 0 * 0 while top is still -inf
      top = x;
    } else {
      sum += expf(x - top);
    }
  }
  const float row_top = Group<kGroup>::max(top, red);
  sum = top == -INFINITY ? 0.0f : sum * expf(top - row_top);
  sum = Group<kGroup>::sum(sum, red);
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
  for (int64_t j = tid; j < a.kv_len; j += kGroup)
    row.s[j] = j < row.keys && sum > 0.0f ? expf(score_at(a, row, j) - row_top) * inv : 0.0f;
  store_lse(a, row, row_top, sum, tid, kGroup);
}

// One row per group of kGroup threads, grid-stride; kPer == 0: online_row.
// 1024 threads per SM at least: at most 64 registers, which every variant
// fits without spilling (nvcc -Xptxas -v), half the SM's warps resident.
template <int kGroup, int kPer>
__global__ void __launch_bounds__(Group<kGroup>::kBlock, 1024 / Group<kGroup>::kBlock) softmax_rows(SoftmaxArgs a) {
  __shared__ float red[Group<kGroup>::kWarps];
  constexpr int kRowsPerBlock = Group<kGroup>::kRowsPerBlock;
  const int tid = static_cast<int>(threadIdx.x) % kGroup;
  // Uniform over a block's group: its threads share r, so the
  // __syncthreads() of Group<256> are reached by all of them.
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kGroup; r < a.rows;
       r += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
    if constexpr (kPer == 0)
      online_row<kGroup>(a, row_at(a, r), tid, red);
    else
      cached_row<kGroup, kPer>(a, row_at(a, r), tid, red);
  }
}

template <int kGroup, int kPer>
cudaError_t launch_softmax(const SoftmaxArgs& a, cudaStream_t stream) {
  constexpr int kRowsPerBlock = Group<kGroup>::kRowsPerBlock;
  const int64_t blocks = std::min<int64_t>((a.rows + kRowsPerBlock - 1) / kRowsPerBlock, kMaxGrid);
  softmax_rows<kGroup, kPer><<<static_cast<unsigned>(blocks), Group<kGroup>::kBlock, 0, stream>>>(a);
  return cudaGetLastError();
}

// The variant for the row length (the chunk's keys): registers for up to
// 8192 keys, two passes beyond.
cudaError_t softmax(const SoftmaxArgs& a, cudaStream_t stream) {
  const int64_t n = a.kv_len;
  if (n <= 32) return launch_softmax<32, 1>(a, stream);
  if (n <= 64) return launch_softmax<32, 2>(a, stream);
  if (n <= 128) return launch_softmax<32, 4>(a, stream);
  if (n <= 256) return launch_softmax<32, 8>(a, stream);
  if (n <= 512) return launch_softmax<32, 16>(a, stream);
  if (n <= 1024) return launch_softmax<32, 32>(a, stream);
  if (n <= 2048) return launch_softmax<256, 8>(a, stream);
  if (n <= 4096) return launch_softmax<256, 16>(a, stream);
  if (n <= 8192) return launch_softmax<256, 32>(a, stream);
  return launch_softmax<256, 0>(a, stream);
}

// ---------------------------------------------------------------- batches

using cublas_plan::Chunk;
using cublas_plan::kOperands;
using cublas_plan::kOut;
using cublas_plan::kS;

// The operands' data: query, key, value, the scores, the output.
struct Bases {
  const float* data[kOperands];
};

// Pointer arrays: arrays[o * count + n] is operand o's matrix n.
__global__ void fill_pointers(cublas_plan::Batch batch, Bases bases, int64_t count, const float** arrays) {
  for (int64_t n = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; n < count;
       n += static_cast<int64_t>(gridDim.x) * blockDim.x)
    for (int o = 0; o < kOperands; ++o) arrays[o * count + n] = bases.data[o] + batch.at(o, n);
}

cublas_plan::Shape shape_of(const Problem& p) {
  cublas_plan::Shape s;
  s.batch = p.batch;
  s.heads = p.heads;
  s.kv_heads = p.kv_heads;
  s.q_len = p.q_len;
  s.kv_len = p.kv_len;
  s.head_dim = p.head_dim;
  s.value_dim = p.value_dim;
  s.causal = p.causal;
  for (int d = 0; d < 4; ++d) {
    s.q_stride[d] = p.q_stride[d];
    s.k_stride[d] = p.k_stride[d];
    s.v_stride[d] = p.v_stride[d];
    s.out_stride[d] = p.out_stride[d];
  }
  return s;
}

// ---------------------------------------------------------------- host

// AOTIRT_ATTENTION_WORKSPACE_MIB in bytes (read once); -1 when it is set to
// something other than a positive whole number.
int64_t workspace_bound() {
  static const int64_t bound = [] {
    const char* text = std::getenv("AOTIRT_ATTENTION_WORKSPACE_MIB");
    if (!text || !*text) return kDefaultWorkspaceMiB << 20;
    char* end = nullptr;
    const long long mib = std::strtoll(text, &end, 10);
    if (*end != '\0' || mib <= 0 || mib > (int64_t{1} << 40)) return int64_t{-1};
    return static_cast<int64_t>(mib) << 20;
  }();
  return bound;
}

// AOTIRT_ATTENTION_CAUSAL_CHUNKS (read once): the number of chunks a causal
// problem's query rows go in, for measuring the schedule; 0 (unset, or not
// a positive whole number): cublas_plan::schedule_rows's model decides.
int64_t forced_causal_chunks() {
  static const int64_t chunks = [] {
    const char* text = std::getenv("AOTIRT_ATTENTION_CAUSAL_CHUNKS");
    if (!text || !*text) return int64_t{0};
    char* end = nullptr;
    const long long n = std::strtoll(text, &end, 10);
    return *end == '\0' && n > 0 && n <= (1 << 20) ? static_cast<int64_t>(n) : int64_t{0};
  }();
  return chunks;
}

bool debug_log_on() {
  static const bool on = [] {
    const char* level = std::getenv("AOTIRT_LOG");
    return level && std::string(level) == "debug";
  }();
  return on;
}

std::string list_text(const int64_t* values, int n) {
  std::string s = "[";
  for (int d = 0; d < n; ++d) s += (d ? ", " : "") + std::to_string(values[d]);
  return s + "]";
}

std::string shape_text(const Problem& p) {
  static const char* const causal[] = {"no", "top-left", "bottom-right"};
  std::string s = "B=" + std::to_string(p.batch) + " H=" + std::to_string(p.heads) +
                  " kv_heads=" + std::to_string(p.kv_heads) + " L=" + std::to_string(p.q_len) +
                  " S=" + std::to_string(p.kv_len) + " E=" + std::to_string(p.head_dim) +
                  " Ev=" + std::to_string(p.value_dim) + " " + dtype_name(p.dtype);
  s += std::string(" causal=") + causal[p.causal >= 0 && p.causal <= 2 ? p.causal : 0];
  s += p.bias ? std::string(" bias=") + dtype_name(p.bias_dtype) + " strides " + list_text(p.bias_stride, 4)
              : std::string(" bias=none");
  s += p.lse ? " lse=yes" : " lse=no";
  s += " strides: q " + list_text(p.q_stride, 4) + " k " + list_text(p.k_stride, 4) + " v " +
       list_text(p.v_stride, 4) + " out " + list_text(p.out_stride, 4);
  return s;
}

aotirt_status cublas_gemm(const cublas::Api& api, cublas::Handle handle, const Chunk& c, const gemm_layout::Plan& g,
                          const Bases& bases, int x, int y, int out, float alpha, const void* const* arrays,
                          const char* what) {
  const float beta = 0.0f;
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  const int count = static_cast<int>(c.count);
  const int lx = static_cast<int>(g.x.ld), ly = static_cast<int>(g.y.ld), lc = static_cast<int>(g.c.ld);
  if (c.strided) {
    const std::string call = std::string("cublasGemmStridedBatchedEx (") + what + ")";
    const float* first[kOperands];
    for (int o = 0; o < kOperands; ++o) first[o] = bases.data[o] + c.batch.offset[o];
    return cublas::check(api, kWho, call.c_str(),
                         api.gemm_strided_batched(handle, g.x.op, g.y.op, m, n, k, &alpha, first[x], CUDA_R_32F, lx,
                                                  c.batch_stride[x], first[y], CUDA_R_32F, ly, c.batch_stride[y],
                                                  &beta, const_cast<float*>(first[out]), CUDA_R_32F, lc,
                                                  c.batch_stride[out], count, cublas::kCompute32F,
                                                  cublas::kGemmDefault));
  }
  const std::string call = std::string("cublasGemmBatchedEx (") + what + ")";
  void* const* outs = const_cast<void* const*>(arrays + out * c.count);
  return cublas::check(api, kWho, call.c_str(),
                       api.gemm_batched(handle, g.x.op, g.y.op, m, n, k, &alpha, arrays + x * c.count, CUDA_R_32F,
                                        lx, arrays + y * c.count, CUDA_R_32F, ly, &beta, outs, CUDA_R_32F, lc, count,
                                        cublas::kCompute32F, cublas::kGemmDefault));
}

}  // namespace

bool cublas_takes(const Problem& p) {
  return p.dtype == AOTIRT_DTYPE_FLOAT32 && (!p.lse || p.lse_dtype == AOTIRT_DTYPE_FLOAT32) && cublas_plan::plannable(shape_of(p));
}

aotirt_status run_cublas(const Problem& p, Stream* stream) {
  const int64_t bound = workspace_bound();
  if (bound < 0)
    return fail(AOTIRT_ERROR_VALUE, std::string(kWho) + ": AOTIRT_ATTENTION_WORKSPACE_MIB must be a positive whole "
                                                        "number of MiB, got '" +
                                        std::getenv("AOTIRT_ATTENTION_WORKSPACE_MIB") + "'");
  const cublas_plan::Shape shape = shape_of(p);
  const int64_t chunk_rows =
      cublas_plan::schedule_rows(shape, cublas_plan::chunk_rows(shape, bound), forced_causal_chunks());
  const int64_t chunks = (p.q_len + chunk_rows - 1) / chunk_rows;

  // One block: the scores of the largest chunk, then the pointer arrays
  // (five per matrix, used by chunks that are not one strided batch).
  const size_t score_bytes = static_cast<size_t>(cublas_plan::scores_floats(shape, chunk_rows)) * sizeof(float);
  const size_t arrays_at = (score_bytes + 255) / 256 * 256;
  const size_t bytes = arrays_at + static_cast<size_t>(kOperands * p.batch * p.heads) * sizeof(float*);
  StorageRef workspace;
  AOTIRT_TRY(allocate_storage(bytes, AOTIRT_DEVICE_CUDA, stream->device, StreamRef::share(stream), &workspace));
  float* scores = static_cast<float*>(workspace->data);
  const float** arrays = reinterpret_cast<const float**>(static_cast<char*>(workspace->data) + arrays_at);

  const cublas::Api* api = nullptr;
  AOTIRT_TRY(cublas::api(kWho, &api));
  cublas::Handle handle = nullptr;
  AOTIRT_TRY(cublas::thread_handle(kWho, stream->device, &handle));
  const StreamRef on = StreamRef::share(stream);
  StorageRef cublas_workspace;  // for this call's GEMMs (freed stream-ordered after them)
  AOTIRT_TRY(cublas::bind_stream(*api, kWho, handle, on, &cublas_workspace));

  const Bases bases{{static_cast<const float*>(p.q), static_cast<const float*>(p.k), static_cast<const float*>(p.v),
                     scores, static_cast<const float*>(p.out)}};
  SoftmaxArgs soft;
  soft.scores = scores;
  soft.heads = p.heads;
  soft.q_len = p.q_len;
  soft.causal = p.causal != kNotCausal;
  soft.causal_offset = p.causal == kBottomRight ? p.kv_len - p.q_len : 0;
  soft.bias = p.bias;
  soft.bias_dtype = p.bias_dtype;
  for (int d = 0; d < 4; ++d) soft.bias_stride[d] = p.bias_stride[d];
  soft.lse = static_cast<float*>(p.lse);
  for (int d = 0; d < 3; ++d) soft.lse_stride[d] = p.lse_stride[d];
  soft.lse_padding = p.lse_padding;

  for (int64_t row0 = 0; row0 < p.q_len; row0 += chunk_rows) {
    Chunk c;
    const int64_t rows = std::min(chunk_rows, p.q_len - row0);
    if (!cublas_plan::plan_chunk(shape, rows, row0, &c))
      return fail(AOTIRT_ERROR_VALUE, std::string(kWho) + ": cannot describe the problem to cuBLAS (" +
                                          shape_text(p) + "); cublas_takes should have refused it");
    if (row0 == 0 && debug_log_on()) {
      std::string how = std::string("cuBLAS, ") + (c.strided ? "one strided batch of " : "pointer arrays of ") +
                        std::to_string(c.count) + " matrices of " + std::to_string(c.m) + " rows" +
                        (c.folded ? " (the query heads of a group folded into the rows)" : "") + ", " +
                        std::to_string(chunks) + (chunks == 1 ? " chunk" : " chunks") + " of " +
                        std::to_string(chunk_rows) + " query rows" +
                        (p.causal != kNotCausal ? ", each over the keys its last row sees" : "");
      log_path(p, how.c_str());
    }
    if (!c.strided) {
      const int threads = 128;
      const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((c.count + threads - 1) / threads, 1024));
      fill_pointers<<<blocks, threads, 0, stream->handle>>>(c.batch, bases, c.count, arrays);
      AOTIRT_CUDA_TRY(cudaGetLastError());
    }
    const void* const* ptrs = reinterpret_cast<const void* const*>(arrays);
    AOTIRT_TRY(cublas_gemm(*api, handle, c, c.qk, bases, c.qk_x, c.qk_y, kS, static_cast<float>(p.scale), ptrs,
                           "scores = scale * query key^T"));
    soft.row0 = row0;
    soft.ld = c.ld;
    soft.kv_len = c.keys;
    soft.chunk_rows = rows;
    soft.rows = p.batch * p.heads * rows;
    const cudaError_t launched = softmax(soft, stream->handle);
    if (launched != cudaSuccess) return fail_cuda(launched, std::string(kWho) + ": launching the softmax kernel");
    AOTIRT_TRY(cublas_gemm(*api, handle, c, c.pv, bases, c.pv_x, c.pv_y, kOut, 1.0f, ptrs,
                           "out = probabilities value"));
  }
  // `workspace` goes back to the pool stream-ordered: after the last GEMM.
  return AOTIRT_OK;
}

void log_path(const Problem& p, const char* path) {
  if (!debug_log_on()) return;
  // Never destroyed: shims may run during exit.
  static std::mutex* mutex = new std::mutex();
  static std::unordered_set<std::string>* seen = new std::unordered_set<std::string>();
  const std::string shape = shape_text(p);
  {
    std::lock_guard<std::mutex> lock(*mutex);
    if (!seen->insert(shape + " | " + path).second) return;
  }
  std::fprintf(stderr, "aotirt debug: attention %s: %s\n", shape.c_str(), path);
}

}  // namespace attention
}  // namespace aotirt
