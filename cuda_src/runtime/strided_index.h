// Where each element of a strided copy lies: a copy's two layouts reduced to
// the fewest dimensions that describe them, rows contiguous on both sides
// moved in words wider than the elements, and, where every offset fits 31
// bits, 32-bit index arithmetic whose divisions are multiplications.
//
// Why: runtime/copy.cu's kernel finds both offsets of each element from its
// index by a division and a remainder per dimension. In 64 bits that is a
// software routine of dozens of instructions, so a gather of six dimensions
// (cuBLAS im2col's, conv_alternatives.cpp) spent its time dividing, not
// moving memory (bench/runs/s22-h100-check.md). Most copies collapse to one
// to three dimensions, and all but huge ones fit 31 bits.
//
// Host and device code; no CUDA runtime needed, so tests/shims checks it on
// the host (strided_index_check.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#ifdef __CUDACC__
#define AOTIRT_STRIDED_HD __host__ __device__ __forceinline__
#else
#define AOTIRT_STRIDED_HD inline
#endif

namespace aotirt {
namespace strided {

constexpr int kMaxDims = 16;  // AOTIRT_MAX_DIMS

// The high 32 bits of a 32x32-bit product.
AOTIRT_STRIDED_HD uint32_t high_word(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}

// Division of n < 2^31 by a fixed divisor 1 <= d < 2^31 as a multiply-high,
// an add and a shift (Granlund and Montgomery, "Division by invariant
// integers using multiplication", 1994): with s the least shift such that
// 2^s >= d and magic = floor(2^32 (2^s - d) / d) + 1, n / d = (mulhi(n,
// magic) + n) >> s. The add cannot overflow for n < 2^31.
struct Divider {
  uint32_t divisor = 1, magic = 1, shift = 0;

  static Divider of(uint32_t d) {
    Divider out;
    out.divisor = d;
    uint32_t s = 0;
    while ((uint64_t{1} << s) < d) ++s;
    out.shift = s;
    out.magic = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << s) - d)) / d + 1);
    return out;
  }

  AOTIRT_STRIDED_HD uint32_t quotient(uint32_t n) const { return (high_word(n, magic) + n) >> shift; }
};

// A copy's shape and both layouts, in elements, after reduce(): dimension 0
// outermost; the copy visits elements in row-major order of `sizes`.
struct CopyShape {
  int32_t ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t dst_strides[kMaxDims] = {};
  int64_t src_strides[kMaxDims] = {};
};

// `shape` with its dimensions of size 1 dropped and each pair of
// neighbours that both layouts step through as one dimension (the outer
// stride is the inner one times the inner size, in each) merged. Neither
// the elements visited nor their order change. A copy of no elements keeps
// its shape (nothing is visited).
inline CopyShape reduce(const CopyShape& shape) {
  CopyShape out;
  for (int32_t d = 0; d < shape.ndim; ++d) {
    if (shape.sizes[d] == 0) return shape;
    if (shape.sizes[d] == 1) continue;
    const int32_t last = out.ndim - 1;
    if (last >= 0 && out.dst_strides[last] == shape.dst_strides[d] * shape.sizes[d] &&
        out.src_strides[last] == shape.src_strides[d] * shape.sizes[d]) {
      out.sizes[last] *= shape.sizes[d];
      out.dst_strides[last] = shape.dst_strides[d];
      out.src_strides[last] = shape.src_strides[d];
      continue;
    }
    out.sizes[out.ndim] = shape.sizes[d];
    out.dst_strides[out.ndim] = shape.dst_strides[d];
    out.src_strides[out.ndim] = shape.src_strides[d];
    ++out.ndim;
  }
  return out;
}

// A copy moved in words wider than its elements: `shape` and `numel` in
// words of `word` bytes.
struct WideCopy {
  CopyShape shape;
  int64_t numel = 0;
  size_t word = 0;
};

constexpr size_t kWidestWord = 16;  // one 128-bit load and store per thread

// A reduced copy whose innermost dimension is contiguous in both layouts,
// moved in the widest word (up to 16 bytes) that the inner size, every
// other stride and both addresses allow; else the copy as it is, in
// elements of `itemsize` bytes.
//
// Why: a permute that keeps the last dimension (attention's heads split,
// [B, L, H, D] to [B, H, L, D]) moves rows of D elements. Element by
// element, a 2-byte copy issues eight times the loads and stores of one
// in 16-byte words, and ran at 1.6x torch's time (bench/fallback_ops.py's
// copy_ rows, bench/runs/s23-h100-check.md).
inline WideCopy widen(const CopyShape& shape, int64_t numel, size_t itemsize, uintptr_t dst, uintptr_t src) {
  WideCopy out{shape, numel, itemsize};
  const int32_t last = shape.ndim - 1;
  if (last < 0 || numel == 0 || shape.dst_strides[last] != 1 || shape.src_strides[last] != 1) return out;
  for (size_t word = kWidestWord; word > itemsize; word /= 2) {
    if (word % itemsize != 0 || dst % word != 0 || src % word != 0) continue;
    const int64_t per_word = static_cast<int64_t>(word / itemsize);
    bool divides = shape.sizes[last] % per_word == 0;
    for (int32_t d = 0; d < last && divides; ++d)
      divides = shape.dst_strides[d] % per_word == 0 && shape.src_strides[d] % per_word == 0;
    if (!divides) continue;
    CopyShape wide = shape;
    wide.sizes[last] /= per_word;
    for (int32_t d = 0; d < last; ++d) {
      wide.dst_strides[d] /= per_word;
      wide.src_strides[d] /= per_word;
    }
    return WideCopy{reduce(wide), numel / per_word, word};  // an inner size of 1 drops out
  }
  return out;
}

// Whether `strides` are the row-major strides of `shape`'s sizes: then an
// element's offset in that layout is its index in the copy.
inline bool row_major(const CopyShape& shape, const int64_t* strides) {
  int64_t expected = 1;
  for (int32_t d = shape.ndim - 1; d >= 0; --d) {
    if (strides[d] != expected) return false;
    expected *= shape.sizes[d];
  }
  return true;
}

// Whether the copy's element count and every offset in both layouts fit
// 31 bits (and no stride is negative), so that Index32 can address it.
inline bool fits_index32(const CopyShape& shape) {
  constexpr int64_t kMost = INT32_MAX;
  int64_t count = 1, dst_reach = 0, src_reach = 0;
  for (int32_t d = 0; d < shape.ndim; ++d) {
    const int64_t size = shape.sizes[d];
    if (size <= 0 || shape.dst_strides[d] < 0 || shape.src_strides[d] < 0) return false;
    if (size > kMost / count) return false;
    count *= size;
    // Each term is at most kMost where it is checked, so the sums cannot overflow.
    if (shape.dst_strides[d] > 0 && size - 1 > (kMost - dst_reach) / shape.dst_strides[d]) return false;
    if (shape.src_strides[d] > 0 && size - 1 > (kMost - src_reach) / shape.src_strides[d]) return false;
    dst_reach += (size - 1) * shape.dst_strides[d];
    src_reach += (size - 1) * shape.src_strides[d];
  }
  return true;
}

// A reduced copy for 32-bit kernels: a divider per dimension, strides in 32
// bits. Only for a shape that fits_index32.
struct Index32 {
  int32_t ndim = 0;
  Divider dividers[kMaxDims];
  uint32_t dst_strides[kMaxDims] = {};
  uint32_t src_strides[kMaxDims] = {};

  static Index32 of(const CopyShape& shape) {
    Index32 out;
    out.ndim = shape.ndim;
    for (int32_t d = 0; d < shape.ndim; ++d) {
      out.dividers[d] = Divider::of(static_cast<uint32_t>(shape.sizes[d]));
      out.dst_strides[d] = static_cast<uint32_t>(shape.dst_strides[d]);
      out.src_strides[d] = static_cast<uint32_t>(shape.src_strides[d]);
    }
    return out;
  }

  // The offsets of the element whose row-major index is `index` (less
  // than the element count); with `DstRowMajor`, the destination's is the
  // index itself. What is left after the inner dimensions is the outermost
  // one's coordinate: no division for it.
  template <bool DstRowMajor>
  AOTIRT_STRIDED_HD void offsets(uint32_t index, uint32_t* dst, uint32_t* src) const {
    uint32_t to = 0, from = 0, rest = index;
    for (int32_t d = ndim - 1; d > 0; --d) {
      const uint32_t outer = dividers[d].quotient(rest);
      const uint32_t at = rest - outer * dividers[d].divisor;
      if (!DstRowMajor) to += at * dst_strides[d];
      from += at * src_strides[d];
      rest = outer;
    }
    if (ndim > 0) {
      to += rest * dst_strides[0];
      from += rest * src_strides[0];
    }
    *dst = DstRowMajor ? index : to;
    *src = from;
  }
};

// The same in 64 bits, dividing as the hardware does: for copies past 31
// bits of offset.
AOTIRT_STRIDED_HD int64_t offset64(const CopyShape& shape, const int64_t* strides, int64_t index) {
  int64_t offset = 0;
  for (int32_t d = shape.ndim - 1; d >= 0; --d) {
    const int64_t size = shape.sizes[d];
    offset += (index % size) * strides[d];
    index /= size;
  }
  return offset;
}

}  // namespace strided
}  // namespace aotirt
