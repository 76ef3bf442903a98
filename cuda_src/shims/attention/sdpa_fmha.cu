// attention::fmha_takes and run_fmha (sdpa_fmha.h): float32 attention on
// CUTLASS's fused kernel, three instances chosen by head size as torch
// chooses among its own: 64 queries x 64 keys a block for head sizes up to
// 64, 32 x 128 up to 128 (both keep the output in registers), 32 x 128 with
// the output accumulated in memory above that. Dropout and bias support are
// compiled out (inference; a bias goes to cuBLAS).

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "runtime/entry.h"
#include "runtime/errors.h"
#include "shims/attention/sdpa_fmha.h"

#ifdef AOTIRT_HAVE_CUTLASS_FMHA
#include "kernel_forward.h"
#endif

namespace aotirt {
namespace attention {

#ifdef AOTIRT_HAVE_CUTLASS_FMHA
namespace {

template <int kQueries, int kKeys, int kMaxK>
using Fmha = AttentionKernel<float, cutlass::arch::Sm80, /*isAligned=*/true, kQueries, kKeys, kMaxK,
                             /*kSupportsDropout=*/false, /*kSupportsBias=*/false>;
using FmhaUpTo64 = Fmha<64, 64, 64>;
using FmhaUpTo128 = Fmha<32, 128, 128>;
using FmhaAnySize = Fmha<32, 128, 65536>;  // as torch's own instance: the output accumulated in memory

constexpr int64_t kAlign = 4;  // elements: the aligned kernels' 128-bit loads of float
constexpr int64_t kAlignLse = 32;
constexpr int64_t kMaxGridYZ = 65535;
constexpr int64_t kMaxHeadSize = 65536;  // FmhaAnySize's bound

// The kernel's body only where its instructions exist (sm_80 and newer);
// fmha_takes keeps older devices off it.
template <typename Kernel>
__global__ void __launch_bounds__(Kernel::kNumThreads, Kernel::kMinBlocksPerSm)
    fmha_forward(typename Kernel::Params params) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if (!params.advance_to_block()) return;
  Kernel::attention_kernel(params);
#endif
}

bool fits_int32(int64_t v) { return v >= 0 && v <= std::numeric_limits<int32_t>::max(); }
bool aligned(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % (kAlign * sizeof(float)) == 0; }

// q, k or v: [batch, head, row, column] strides with unit columns, the rest
// in whole 16-byte steps the kernel's fields hold.
bool operand_ok(const void* data, const int64_t* stride) {
  return data && aligned(data) && stride[3] == 1 && stride[2] % kAlign == 0 && stride[1] % kAlign == 0 &&
         stride[0] % kAlign == 0 && fits_int32(stride[2]) && fits_int32(stride[1]) && stride[0] >= 0;
}

int64_t padded_rows(int64_t rows) { return (rows + kAlignLse - 1) / kAlignLse * kAlignLse; }

// Compute capability 8.0 or newer, asked once per device.
bool sm80_or_newer(int device) {
  constexpr int kDevices = 64;
  static std::atomic<int8_t> known[kDevices] = {};  // 0 unknown, 1 yes, -1 no
  if (device < 0 || device >= kDevices) return false;
  int8_t answer = known[device].load(std::memory_order_relaxed);
  if (answer == 0) {
    int major = 0;
    answer = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess && major >= 8
                 ? 1
                 : -1;
    known[device].store(answer, std::memory_order_relaxed);
  }
  return answer == 1;
}

// Dynamic shared memory past 48 KiB needs an opt-in per kernel and device;
// set on the first launch on each device (a host-side attribute, allowed
// while the stream is being captured).
template <typename Kernel>
cudaError_t allow_shared_memory(int device, size_t bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  static std::atomic<uint64_t> done{0};
  const uint64_t bit = device < 64 ? uint64_t{1} << device : 0;
  if (bit && (done.load(std::memory_order_acquire) & bit)) return cudaSuccess;
  const cudaError_t status =
      cudaFuncSetAttribute(fmha_forward<Kernel>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (status == cudaSuccess && bit) done.fetch_or(bit, std::memory_order_acq_rel);
  return status;
}

template <typename Kernel>
aotirt_status launch(const Problem& p, Stream* stream) {
  typename Kernel::Params params;
  params.query_ptr = static_cast<float*>(const_cast<void*>(p.q));
  params.key_ptr = static_cast<float*>(const_cast<void*>(p.k));
  params.value_ptr = static_cast<float*>(const_cast<void*>(p.v));
  params.output_ptr = static_cast<float*>(p.out);
  params.logsumexp_ptr = static_cast<float*>(p.lse);
  params.scale = static_cast<float>(p.scale);
  params.head_dim = static_cast<int32_t>(p.head_dim);
  params.head_dim_value = static_cast<int32_t>(p.value_dim);
  params.num_queries = static_cast<int32_t>(p.q_len);
  params.num_keys = static_cast<int32_t>(p.kv_len);
  params.num_heads = static_cast<int32_t>(p.heads);
  params.num_batches = static_cast<int32_t>(p.batch);
  params.custom_mask_type = p.causal == kTopLeft       ? Kernel::CausalFromTopLeft
                            : p.causal == kBottomRight ? Kernel::CausalFromBottomRight
                                                       : Kernel::NoCustomMask;
  params.q_strideB = p.q_stride[0], params.q_strideH = static_cast<int32_t>(p.q_stride[1]);
  params.q_strideM = static_cast<int32_t>(p.q_stride[2]);
  params.k_strideB = p.k_stride[0], params.k_strideH = static_cast<int32_t>(p.k_stride[1]);
  params.k_strideM = static_cast<int32_t>(p.k_stride[2]);
  params.v_strideB = p.v_stride[0], params.v_strideH = static_cast<int32_t>(p.v_stride[1]);
  params.v_strideM = static_cast<int32_t>(p.v_stride[2]);
  params.o_strideM = static_cast<int32_t>(p.out_stride[2]);
  if (!Kernel::check_supported(params))  // fmha_takes checked all of this: a bug if it is reached
    return fail(AOTIRT_ERROR_AOTI, "attention: CUTLASS's fused kernel refused a problem that fmha_takes accepted");
  constexpr size_t shared = sizeof(typename Kernel::SharedStorage);
  cudaError_t status = allow_shared_memory<Kernel>(stream->device, shared);
  if (status != cudaSuccess) return fail_cuda(status, "allowing the fused attention kernel its shared memory");
  fmha_forward<Kernel><<<params.getBlocksGrid(), params.getThreadsGrid(), shared, stream->handle>>>(params);
  status = cudaGetLastError();
  if (status != cudaSuccess) return fail_cuda(status, "launching CUTLASS's fused attention kernel");
  return AOTIRT_OK;
}

}  // namespace

// AOTIRT_ATTENTION_FUSED=0 (read once) keeps float32 attention on cuBLAS:
// for measuring one path against the other, and for that path's own tests.
bool fused_allowed() {
  static const bool allowed = [] {
    const char* text = std::getenv("AOTIRT_ATTENTION_FUSED");
    return !(text && std::strcmp(text, "0") == 0);
  }();
  return allowed;
}

bool fmha_takes(const Problem& p, int device) {
  if (!fused_allowed()) return false;
  if (p.dtype != AOTIRT_DTYPE_FLOAT32 || p.bias || p.heads != p.kv_heads) return false;
  if (p.batch < 1 || p.heads < 1 || p.q_len < 1 || p.kv_len < 1 || p.head_dim < 1 || p.value_dim < 1) return false;
  if (p.batch > kMaxGridYZ || p.heads > kMaxGridYZ || !fits_int32(padded_rows(p.q_len)) || !fits_int32(p.kv_len))
    return false;
  if (p.head_dim % kAlign || p.value_dim % kAlign || p.head_dim > kMaxHeadSize || p.value_dim > kMaxHeadSize)
    return false;
  if (p.causal == kBottomRight && p.kv_len < p.q_len) return false;  // rows with no key: cuBLAS's zeros
  if (!operand_ok(p.q, p.q_stride) || !operand_ok(p.k, p.k_stride) || !operand_ok(p.v, p.v_stride)) return false;
  // The kernel writes row r of head h of batch b at out + (b * q_len + r) * o_strideM + h * value_dim.
  const int64_t row = p.out_stride[2];
  if (!p.out || p.out_stride[3] != 1 || p.out_stride[1] != p.value_dim || row < p.heads * p.value_dim ||
      !fits_int32(row) || p.out_stride[0] != p.q_len * row)
    return false;
  if (p.lse) {
    const int64_t rows = padded_rows(p.q_len);
    if (p.lse_dtype != AOTIRT_DTYPE_FLOAT32 || p.lse_stride[2] != 1 || p.lse_stride[1] != rows ||
        p.lse_stride[0] != p.heads * rows || p.lse_padding != rows - p.q_len)
      return false;
  }
  return sm80_or_newer(device);
}

aotirt_status run_fmha(const Problem& p, Stream* stream) {
  const int64_t k = p.head_dim > p.value_dim ? p.head_dim : p.value_dim;
  if (k <= 64) return launch<FmhaUpTo64>(p, stream);
  if (k <= 128) return launch<FmhaUpTo128>(p, stream);
  return launch<FmhaAnySize>(p, stream);
}

#else  // built without CUTLASS

bool fmha_takes(const Problem&, int) { return false; }

aotirt_status run_fmha(const Problem&, Stream*) {
  return fail(AOTIRT_ERROR_AOTI, "attention: this aotirt was built without CUTLASS's fused attention kernel");
}

#endif

}  // namespace attention
}  // namespace aotirt

extern "C" AOTIRT_API int aotirt_has_fused_attention(void) {
  AOTIRT_ENTRY();
#ifdef AOTIRT_HAVE_CUTLASS_FMHA
  return 1;
#else
  return 0;
#endif
}
