// attention::fmha_takes and run_fmha (sdpa_fmha.h): float32 attention on
// CUTLASS's fused kernel, three instances chosen by head size as torch
// chooses among its own: 64 queries x 64 keys a block for head sizes up to
// 64, 64 x 128 up to 128 (both keep the output in registers), 32 x 128 with
// the output accumulated in memory above that. (Up to 128 torch 2.11 runs
// fmha_cutlassF_f32_aligned_64x128_rf_sm80 on the H200: 50.6 us at B2 H8
// L512 E128, where 32 x 128 took 1.15 to 1.18x that.) Dropout is compiled
// out (inference). The bias is compiled in, as in every one of torch's
// instances: the scores are scale * q k^T + bias, and a bias is read in
// place (a float32 mask of a transformers model, say), so that masked
// attention is one kernel rather than cuBLAS's four. Rows whose every key a
// bias masks give zeros, as torch's kernel and aotirt's other paths give
// them (sdpa_fmha_normalize.cuh).

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "runtime/entry.h"
#include "runtime/errors.h"
#include "runtime/stream.h"
#include "shims/attention/sdpa_fmha.h"
#include "shims/attention/sdpa_fmha_layout.h"
#include "shims/shared_memory_opt_in.cuh"

#ifdef AOTIRT_HAVE_CUTLASS_FMHA
#include "kernel_forward.h"
#include "shims/attention/sdpa_fmha_normalize.cuh"
#endif

namespace aotirt {
namespace attention {

#ifdef AOTIRT_HAVE_CUTLASS_FMHA
namespace {

template <int kQueries, int kKeys, int kMaxK>
using Fmha = AttentionKernel<float, cutlass::arch::Sm80, /*isAligned=*/true, kQueries, kKeys, kMaxK,
                             /*kSupportsDropout=*/false, /*kSupportsBias=*/true>;
using FmhaUpTo64 = Fmha<64, 64, 64>;
using FmhaUpTo128 = Fmha<64, 128, 128>;
using FmhaAnySize = Fmha<32, 128, 65536>;  // as torch's own instance: the output accumulated in memory

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

// Compute capability 8.0 or newer (a failed query: not, and the cuBLAS path
// runs, which reports the device's trouble itself).
bool sm80_or_newer(int device) {
  int sm = 0;
  return compute_capability(device, &sm) == AOTIRT_OK && sm >= 80;
}

template <typename Kernel>
aotirt_status launch(const Problem& p, Stream* stream) {
  const fmha_layout::Fields f = fmha_layout::fields(p);
  typename Kernel::Params params;
  params.query_ptr = static_cast<float*>(const_cast<void*>(p.q));
  params.key_ptr = static_cast<float*>(const_cast<void*>(p.k));
  params.value_ptr = static_cast<float*>(const_cast<void*>(p.v));
  params.output_ptr = static_cast<float*>(p.out);
  params.logsumexp_ptr = static_cast<float*>(p.lse);
  params.scale = static_cast<float>(p.scale);
  params.head_dim = f.head_dim;
  params.head_dim_value = f.head_dim_value;
  params.num_queries = f.num_queries;
  params.num_keys = f.num_keys;
  params.num_heads = f.num_heads;
  params.num_batches = f.num_batches;
  params.custom_mask_type = p.causal == kTopLeft       ? Kernel::CausalFromTopLeft
                            : p.causal == kBottomRight ? Kernel::CausalFromBottomRight
                                                       : Kernel::NoCustomMask;
  params.q_strideB = f.q_strideB, params.q_strideH = f.q_strideH, params.q_strideM = f.q_strideM;
  params.k_strideB = f.k_strideB, params.k_strideH = f.k_strideH, params.k_strideM = f.k_strideM;
  params.v_strideB = f.v_strideB, params.v_strideH = f.v_strideH, params.v_strideM = f.v_strideM;
  params.o_strideM = f.o_strideM;
  params.attn_bias_ptr = static_cast<float*>(const_cast<void*>(p.bias));  // nullptr: no bias
  params.bias_strideM = f.bias_strideM;
  params.bias_strideH = f.bias_strideH;
  params.bias_strideB = f.bias_strideB;
  if (!Kernel::check_supported(params))  // fmha_takes checked all of this: a bug if it is reached
    return fail(AOTIRT_ERROR_AOTI, "attention: CUTLASS's fused kernel refused a problem that fmha_takes accepted");
  constexpr size_t shared = sizeof(typename Kernel::SharedStorage);
  cudaError_t status = allow_dynamic_shared_memory<fmha_forward<Kernel>>(stream->device, shared);
  if (status != cudaSuccess) return fail_cuda(status, "allowing the fused attention kernel its shared memory");
  fmha_forward<Kernel><<<params.getBlocksGrid(), params.getThreadsGrid(), shared, stream->handle>>>(params);
  status = cudaGetLastError();
  if (status != cudaSuccess) return fail_cuda(status, "launching CUTLASS's fused attention kernel");
  return AOTIRT_OK;
}

// AOTIRT_ATTENTION_FUSED=0 (read once) keeps float32 attention on cuBLAS:
// for measuring one path against the other, and for that path's own tests.
bool fused_allowed() {
  static const bool allowed = [] {
    const char* text = std::getenv("AOTIRT_ATTENTION_FUSED");
    return !(text && std::strcmp(text, "0") == 0);
  }();
  return allowed;
}

}  // namespace

bool fmha_takes(const Problem& p, int device) {
  return fused_allowed() && fmha_layout::takes(p) && sm80_or_newer(device);
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
