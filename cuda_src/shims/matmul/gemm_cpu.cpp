// The CPU matrix multiply behind aoti_torch_cpu_{mm,addmm,bmm,baddbmm}_out,
// addmv, _addmm_activation and _int_mm_out.
//
// A fallback, not a BLAS: it is correct for any strides and simple enough to
// trust. Products are summed in double for every dtype: for float32 that makes
// the result the exactly rounded value for all but huge K (a float sum would
// drift by up to K * eps), at a cost that is small next to strided loads; it
// also means float16/bfloat16 need only a load and a store conversion.

#include <string>
#include <vector>

#include "runtime/copy.h"
#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "runtime/half.h"
#include "shims/matmul/gemm.h"

namespace aotirt {
namespace matmul {
namespace {

// Element access by dtype, through double.
struct F32 {
  using Storage = float;
  static double load(float x) { return x; }
  static float store(double x) { return static_cast<float>(x); }
};
struct F64 {
  using Storage = double;
  static double load(double x) { return x; }
  static double store(double x) { return x; }
};
struct F16 {
  using Storage = uint16_t;
  static double load(uint16_t x) { return f16_to_float(x); }
  static uint16_t store(double x) { return float_to_f16(static_cast<float>(x)); }
};
struct BF16 {
  using Storage = uint16_t;
  static double load(uint16_t x) { return bf16_to_float(x); }
  static uint16_t store(double x) { return float_to_bf16(static_cast<float>(x)); }
};

// sum over l of a[l * a_stride] * b[l], b contiguous. One running sum would
// make every addition wait for the previous one (four cycles each: the MLP
// of the AOTI tests spent most of its 1.4 ms per run there); kLanes
// independent sums keep the multipliers busy and let a contiguous a
// vectorise. Summed in double, the order changes nothing a float32 result
// can show.
template <typename Type>
double dot(const typename Type::Storage* a, int64_t a_stride, const typename Type::Storage* b, int64_t k) {
  constexpr int kLanes = 8;
  double lanes[kLanes] = {};
  int64_t l = 0;
  if (a_stride == 1) {
    for (; l + kLanes <= k; l += kLanes)
      for (int i = 0; i < kLanes; ++i) lanes[i] += Type::load(a[l + i]) * Type::load(b[l + i]);
  } else {
    for (; l + kLanes <= k; l += kLanes)
      for (int i = 0; i < kLanes; ++i) lanes[i] += Type::load(a[(l + i) * a_stride]) * Type::load(b[l + i]);
  }
  double sum = 0.0;
  for (; l < k; ++l) sum += Type::load(a[l * a_stride]) * Type::load(b[l]);
  for (int i = 0; i < kLanes; ++i) sum += lanes[i];
  return sum;
}

template <typename Type>
void gemm(const Problem& p, const Tensor& target) {
  using T = typename Type::Storage;
  const int64_t m = p.m, n = p.n, k = p.k;
  const int64_t* sa = p.a.strides;
  const int64_t* sb = p.b.strides;
  const int64_t* so = target.strides;
  const int64_t* ss = p.self.strides;
  // Two loop orders, both summing over k in order. i-k-j (the usual) walks
  // b and out along rows; but a transposed weight (b with stride 1 along k,
  // as _reinterpret_tensor makes it) would then be read with a long stride
  // in the innermost loop, so for that layout each output is a dot product
  // down b's contiguous column instead.
  const bool dot_products = sb[1] == 1 && sb[2] != 1;
  // alpha == 0 skips the product, as BLAS does: inf or NaN in the factors
  // then cannot reach out (and no time is spent on a term that is dropped).
  const bool product = p.alpha != 0.0;
  std::vector<double> row(static_cast<size_t>(n));
  for (int64_t batch = 0; batch < p.batch; ++batch) {
    const T* a = static_cast<const T*>(p.a.data()) + batch * sa[0];
    const T* b = static_cast<const T*>(p.b.data()) + batch * sb[0];
    T* out = static_cast<T*>(target.data()) + batch * so[0];
    const T* self = p.has_self ? static_cast<const T*>(p.self.data()) + batch * ss[0] : nullptr;
    for (int64_t i = 0; i < m; ++i) {
      const T* a_row = a + i * sa[1];
      if (!product) {
        for (int64_t j = 0; j < n; ++j) row[j] = 0.0;
      } else if (dot_products) {
        for (int64_t j = 0; j < n; ++j) row[j] = dot<Type>(a_row, sa[2], b + j * sb[2], k);
      } else {
        for (int64_t j = 0; j < n; ++j) row[j] = 0.0;
        for (int64_t l = 0; l < k; ++l) {
          // No skipping when a is 0: 0 * inf and 0 * NaN must still give NaN.
          const double a_il = Type::load(a_row[l * sa[2]]);
          const T* b_row = b + l * sb[1];
          if (sb[2] == 1) {
            for (int64_t j = 0; j < n; ++j) row[j] += a_il * Type::load(b_row[j]);
          } else {
            for (int64_t j = 0; j < n; ++j) row[j] += a_il * Type::load(b_row[j * sb[2]]);
          }
        }
      }
      T* out_row = out + i * so[1];
      if (self) {
        // When out is self this reads each element just before overwriting it.
        const T* self_row = self + i * ss[1];
        for (int64_t j = 0; j < n; ++j)
          out_row[j * so[2]] = Type::store(p.beta * Type::load(self_row[j * ss[2]]) + p.alpha * row[j]);
      } else {
        for (int64_t j = 0; j < n; ++j) out_row[j * so[2]] = Type::store(p.alpha * row[j]);
      }
    }
  }
}

// _int_mm: int8 products summed in int32, wrapping as torch's int32
// accumulation does (the sum is formed in uint32, so the overflow is defined).
void int8_gemm(const Problem& p, const Tensor& target) {
  const int64_t* sa = p.a.strides;
  const int64_t* sb = p.b.strides;
  const int64_t* so = target.strides;
  const auto* a = static_cast<const int8_t*>(p.a.data());
  const auto* b = static_cast<const int8_t*>(p.b.data());
  auto* out = static_cast<int32_t*>(target.data());
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      uint32_t sum = 0;
      for (int64_t l = 0; l < p.k; ++l)
        sum += static_cast<uint32_t>(static_cast<int32_t>(a[i * sa[1] + l * sa[2]]) * b[l * sb[1] + j * sb[2]]);
      out[i * so[1] + j * so[2]] = static_cast<int32_t>(sum);
    }
}

}  // namespace

aotirt_status run_cpu(const Problem& p) {
  if (p.batch == 0 || p.m == 0 || p.n == 0) return AOTIRT_OK;  // no output elements
  // Written where it overlaps an input, out would change under the reads:
  // compute into fresh memory, then copy.
  Tensor scratch;
  if (p.out_overlaps_input) AOTIRT_TRY(empty_like(p.out, StreamRef(), &scratch));
  const Tensor& target = p.out_overlaps_input ? scratch : p.out;
  switch (p.int8 ? AOTIRT_DTYPE_INT8 : p.out.dtype) {
    case AOTIRT_DTYPE_INT8: int8_gemm(p, target); break;
    case AOTIRT_DTYPE_FLOAT32: gemm<F32>(p, target); break;
    case AOTIRT_DTYPE_FLOAT64: gemm<F64>(p, target); break;
    case AOTIRT_DTYPE_FLOAT16: gemm<F16>(p, target); break;
    case AOTIRT_DTYPE_BFLOAT16: gemm<BF16>(p, target); break;
    default: return fail(AOTIRT_ERROR_TYPE, std::string(p.name) + ": unsupported dtype " + dtype_name(p.out.dtype));
  }
  if (p.out_overlaps_input) copy_host_to_host(p.out, scratch);
  return AOTIRT_OK;
}

}  // namespace matmul
}  // namespace aotirt
