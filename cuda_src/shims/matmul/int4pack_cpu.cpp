// aoti_torch_cpu__weight_int4pack_mm_cpu_tensor (torch's shim_cpu.h, the
// call Inductor's CPU backend makes for aten._weight_int4pack_mm_for_cpu,
// with the group size in an int64 tensor): C[m][n] = sum_k A[m][k] * W[n][k],
// W dequantised from torch's CPU-packed int4 weight, as torch's loop does it
// (aten/src/ATen/native/cpu/int4mm_kernel.cpp): a nibble q is q - 8,
// W = (q - 8) * scale + zero in float with qScaleAndZeros [k / group][n][2]
// (scale, zero) of A's dtype, float sums, C of A's dtype (float32, float16 or
// bfloat16).
//
// The packed layout (weight_to_int4pack_kernel) is uint8 [n][k / 2] as a
// sequence of column blocks of BLOCK_N columns (the last block may be
// narrower): block b holds, for each k in turn, its columns' nibbles in
// nb / 2 bytes (nb its width). Within a row of a block:
// - full blocks on AVX512 (BLOCK_N 64) and AVX2 (BLOCK_N 32): byte j holds
//   column j in its low nibble and column j + BLOCK_N / 2 in its high one;
// - narrower blocks, and every block without AVX2 (BLOCK_N 32): byte j holds
//   columns 2j (low) and 2j + 1 (high).
// Which of these torch wrote depends on the CPU capability torch ran with
// when it packed, and torch reads it with its own at run time; so does
// aotirt: ATEN_CPU_CAPABILITY ("avx512", "avx2", "default"), torch's own
// setting, when it is set, else what this CPU has, as torch picks it
// (AVX512: avx512vl, bw, dq and fma; AVX2: avx2 and fma). A weight packed on
// a machine of another capability is read differently by torch too.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "aotirt/shim.h"
#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "runtime/tensor.h"
#include "shims/host_elements.h"
#include "shims/shim_helpers.h"

namespace aotirt {
namespace {

constexpr const char* kName = "aoti_torch_cpu__weight_int4pack_mm_cpu_tensor";

struct PackLayout {
  int block_n;       // BLOCK_N
  bool interleaved;  // full blocks hold columns j and j + BLOCK_N / 2 in byte j
};

aotirt_status pack_layout(PackLayout* out) {
  const char* env = std::getenv("ATEN_CPU_CAPABILITY");
  if (env && *env) {
    if (!std::strcmp(env, "avx512")) *out = {64, true};
    else if (!std::strcmp(env, "avx2")) *out = {32, true};
    else if (!std::strcmp(env, "default")) *out = {32, false};
    else
      return fail(AOTIRT_ERROR_VALUE, std::string(kName) + ": ATEN_CPU_CAPABILITY=" + env +
                                          " names no layout of torch's x86 int4 packing (avx512, avx2 or default)");
    return AOTIRT_OK;
  }
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const bool fma = __builtin_cpu_supports("fma");
  if (fma && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq"))
    *out = {64, true};
  else if (fma && __builtin_cpu_supports("avx2"))
    *out = {32, true};
  else
    *out = {32, false};
  return AOTIRT_OK;
#else
  return fail(AOTIRT_ERROR_VALUE, std::string(kName) + ": torch's CPU int4 packing is known here for x86 only");
#endif
}

// The nibble of column n, row k.
inline int nibble_at(const uint8_t* w, int64_t n_total, int64_t k_total, const PackLayout& l, int64_t n, int64_t k) {
  const int64_t block = n / l.block_n, local = n % l.block_n;
  const int64_t width = std::min<int64_t>(l.block_n, n_total - block * l.block_n);
  const uint8_t* row = w + block * l.block_n * k_total / 2 + k * (width / 2);
  if (l.interleaved && width == l.block_n) {
    const int64_t half = l.block_n / 2;
    return local < half ? (row[local] & 0xF) : (row[local - half] >> 4);
  }
  return (local & 1) ? (row[local / 2] >> 4) : (row[local / 2] & 0xF);
}

template <typename T>
void int4_mm(const Tensor& a, const Tensor& w, int64_t group, const Tensor& sz, const PackLayout& l,
             const Tensor& c) {
  const int64_t m_total = a.sizes[0], k_total = a.sizes[1], n_total = w.sizes[0];
  const T* x = static_cast<const T*>(a.data());
  const uint8_t* packed = static_cast<const uint8_t*>(w.data());
  const T* scale_zero = static_cast<const T*>(sz.data());
  T* y = static_cast<T*>(c.data());
  std::vector<float> column(static_cast<size_t>(k_total));
  for (int64_t n = 0; n < n_total; ++n) {
    for (int64_t k = 0; k < k_total; ++k) {  // W[n][:], dequantised once per column
      const int64_t at = ((k / group) * n_total + n) * 2;
      const float scale = host::cast<float>(scale_zero[at]), zero = host::cast<float>(scale_zero[at + 1]);
      column[k] = std::fma(static_cast<float>(nibble_at(packed, n_total, k_total, l, n, k) - 8), scale, zero);
    }
    for (int64_t m = 0; m < m_total; ++m) {
      float sum = 0.0f;
      for (int64_t k = 0; k < k_total; ++k) sum = std::fma(host::cast<float>(x[m * k_total + k]), column[k], sum);
      y[m * n_total + n] = host::cast<T>(sum);
    }
  }
}

aotirt_status refuse(const std::string& why) { return fail(AOTIRT_ERROR_VALUE, std::string(kName) + ": " + why); }

aotirt_status run(const Tensor* a, const Tensor* w, const Tensor* group_tensor, const Tensor* sz, Tensor** ret) {
  if (!a || !w || !group_tensor || !sz || !ret) return null_argument(kName);
  AOTIRT_TRY(host::require_cpu(*a, kName, "X"));
  AOTIRT_TRY(host::require_cpu(*w, kName, "w"));
  AOTIRT_TRY(host::require_cpu(*group_tensor, kName, "qGroupSize"));
  AOTIRT_TRY(host::require_cpu(*sz, kName, "qScaleAndZeros"));
  if (group_tensor->dtype != AOTIRT_DTYPE_INT64 || group_tensor->numel() != 1)
    return fail(AOTIRT_ERROR_TYPE, std::string(kName) + ": qGroupSize must be a one-element int64 tensor");
  const int64_t group = *static_cast<const int64_t*>(group_tensor->data());
  const int32_t dtype = a->dtype;
  if ((dtype != AOTIRT_DTYPE_FLOAT32 && dtype != AOTIRT_DTYPE_FLOAT16 && dtype != AOTIRT_DTYPE_BFLOAT16) ||
      a->ndim != 2 || !a->is_contiguous())
    return fail(AOTIRT_ERROR_TYPE, std::string(kName) + ": X must be a contiguous 2-D float32, float16 or bfloat16 "
                                                        "tensor, not " + dtype_name(dtype) + " with " +
                                       std::to_string(a->ndim) + " dimensions");
  if (w->dtype != AOTIRT_DTYPE_UINT8 || w->ndim != 2 || !w->is_contiguous())
    return fail(AOTIRT_ERROR_TYPE, std::string(kName) + ": w must be the contiguous 2-D uint8 weight "
                                                        "_convert_weight_to_int4pack_for_cpu makes");
  const int64_t m = a->sizes[0], k = a->sizes[1], n = w->sizes[0];
  if (n % 16 != 0) return refuse("w has " + std::to_string(n) + " rows (n), not a multiple of 16 as torch packs");
  if (k % 2 != 0 || w->sizes[1] != k / 2)
    return refuse("w holds " + std::to_string(w->sizes[1] * 2) + " values per row, X has k = " + std::to_string(k));
  if (group != 32 && group != 64 && group != 128 && group != 256)
    return refuse("qGroupSize must be 32, 64, 128 or 256, not " + std::to_string(group));
  if (k % group != 0) return refuse("k = " + std::to_string(k) + " is not a multiple of qGroupSize " +
                                    std::to_string(group));
  if (sz->dtype != dtype || !sz->is_contiguous() || sz->ndim != 3 || sz->sizes[0] != k / group || sz->sizes[1] != n ||
      sz->sizes[2] != 2)
    return refuse(std::string("qScaleAndZeros must be a contiguous ") + dtype_name(dtype) + " [" +
                  std::to_string(k / group) + ", " + std::to_string(n) + ", 2] tensor (k / qGroupSize, n, scale "
                  "and zero)");
  PackLayout layout{};
  AOTIRT_TRY(pack_layout(&layout));
  const int64_t sizes[2] = {m, n};
  Tensor* made = nullptr;
  AOTIRT_TRY(new_tensor(2, sizes, nullptr, dtype, AOTIRT_DEVICE_CPU, 0, &made));
  OwnedTensor out(made);
  host::dispatch_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>)
      int4_mm<T>(*a, *w, group, *sz, layout, *out);
  });
  *ret = out.release();
  return AOTIRT_OK;
}

}  // namespace
}  // namespace aotirt

extern "C" AOTITorchError aoti_torch_cpu__weight_int4pack_mm_cpu_tensor(AtenTensorHandle X, AtenTensorHandle w,
                                                                        AtenTensorHandle qGroupSize,
                                                                        AtenTensorHandle qScaleAndZeros,
                                                                        AtenTensorHandle* ret0) {
  return aotirt::shim(aotirt::kName, [&] { return aotirt::run(X, w, qGroupSize, qScaleAndZeros, ret0); });
}
