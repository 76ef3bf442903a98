// Host-only check of cuda_src/runtime/strided_index.h (built and run by
// tests/shims/test_strided_index.py; no GPU): the divider against the
// hardware's division, reduced copy shapes against the shapes they came
// from (every element at the same two offsets, in the same order), the
// 32-bit offsets against the 64-bit ones, and where the 32-bit arithmetic
// is refused.

#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "host_check.h"
#include "runtime/strided_host_copy.h"
#include "runtime/strided_index.h"

namespace st = aotirt::strided;
using Dims = std::vector<int64_t>;

namespace {

using host_check::expect;

std::string dims(const Dims& d) {
  std::string out = "[";
  for (size_t i = 0; i < d.size(); ++i) out += (i ? ", " : "") + std::to_string(d[i]);
  return out + "]";
}

st::CopyShape shape_of(const Dims& sizes, const Dims& dst, const Dims& src) {
  st::CopyShape s;
  s.ndim = static_cast<int32_t>(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    s.sizes[d] = sizes[d];
    s.dst_strides[d] = dst[d];
    s.src_strides[d] = src[d];
  }
  return s;
}

Dims row_major_strides(const Dims& sizes) {
  Dims out(sizes.size());
  int64_t step = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    out[d] = step;
    step *= sizes[d];
  }
  return out;
}

int64_t count_of(const st::CopyShape& s) {
  int64_t n = 1;
  for (int32_t d = 0; d < s.ndim; ++d) n *= s.sizes[d];
  return n;
}

void check_divider() {
  std::mt19937_64 rng(7);
  const uint32_t kTop = 0x7fffffffu;
  std::vector<uint32_t> divisors = {1, 2, 3, 5, 7, 16, 17, 255, 256, 257, 3000, 3002, 65535, 65536, 65537, kTop - 1, kTop};
  for (int i = 0; i < 200; ++i) divisors.push_back(1 + static_cast<uint32_t>(rng() % kTop));
  for (int i = 0; i < 60; ++i) divisors.push_back(1 + static_cast<uint32_t>(rng() % 4096));
  for (uint32_t d : divisors) {
    const st::Divider div = st::Divider::of(d);
    std::vector<uint32_t> numbers = {0, 1, d - 1, d, d + 1 <= kTop ? d + 1 : d, kTop, kTop - 1};
    for (uint32_t k = 1; k < 4; ++k)
      if (static_cast<uint64_t>(d) * k + 1 <= kTop) {
        numbers.push_back(d * k - 1);
        numbers.push_back(d * k);
        numbers.push_back(d * k + 1);
      }
    for (int i = 0; i < 2000; ++i) numbers.push_back(static_cast<uint32_t>(rng() % (uint64_t{kTop} + 1)));
    bool all = true;
    uint32_t wrong = 0;
    for (uint32_t n : numbers)
      if (div.quotient(n) != n / d) {
        all = false;
        wrong = n;
      }
    expect(all, "Divider(" + std::to_string(d) + ") divides " + std::to_string(wrong) + " wrongly");
  }
}

// Every element of `original` and `reduced`, visited in order, lies at
// the same two offsets; and the 32-bit offsets of `reduced` agree.
void check_same_copy(const st::CopyShape& original, const std::string& what) {
  const st::CopyShape reduced = st::reduce(original);
  const int64_t n = count_of(original);
  expect(count_of(reduced) == n || n == 0, what + ": the reduced shape has as many elements");
  expect(reduced.ndim <= original.ndim, what + ": no more dimensions");
  for (int32_t d = 0; d < reduced.ndim && n > 0; ++d) expect(reduced.sizes[d] > 1, what + ": no size-1 dimension left");
  bool same = true, same32 = true;
  const bool fits = st::fits_index32(reduced);
  const st::Index32 index = fits ? st::Index32::of(reduced) : st::Index32();
  const bool dst_row_major = st::row_major(reduced, reduced.dst_strides);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t to = st::offset64(original, original.dst_strides, i);
    const int64_t from = st::offset64(original, original.src_strides, i);
    if (st::offset64(reduced, reduced.dst_strides, i) != to || st::offset64(reduced, reduced.src_strides, i) != from)
      same = false;
    if (!fits) continue;
    uint32_t to32, from32;
    index.offsets<false>(static_cast<uint32_t>(i), &to32, &from32);
    if (to32 != to || from32 != from) same32 = false;
    if (dst_row_major) {
      index.offsets<true>(static_cast<uint32_t>(i), &to32, &from32);
      if (to32 != to || from32 != from || to != i) same32 = false;
    }
  }
  expect(same, what + ": reduced, every element at the same offsets");
  expect(same32, what + ": 32-bit offsets as the 64-bit ones");
}

// Random views: sizes 1 to 5, each layout a permutation of row-major
// strides over a larger buffer (slices with steps), some dimensions
// broadcast (stride 0) in the source.
void check_random_views() {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 3000; ++trial) {
    const int ndim = static_cast<int>(rng() % 7);
    Dims sizes(ndim);
    for (int d = 0; d < ndim; ++d) sizes[d] = 1 + static_cast<int64_t>(rng() % 5);
    auto layout = [&](bool may_broadcast) {
      Dims padded(ndim);
      for (int d = 0; d < ndim; ++d) padded[d] = sizes[d] * (1 + static_cast<int64_t>(rng() % 2));
      Dims order(ndim);
      for (int d = 0; d < ndim; ++d) order[d] = d;
      if (rng() % 2)
        for (int d = ndim - 1; d > 0; --d) std::swap(order[d], order[rng() % (d + 1)]);
      Dims strides(ndim);
      int64_t step = 1;
      for (int k = ndim - 1; k >= 0; --k) {
        const int64_t d = order[k];
        strides[d] = step * (1 + static_cast<int64_t>(rng() % 2));
        step = strides[d] * padded[d];
      }
      if (may_broadcast)
        for (int d = 0; d < ndim; ++d)
          if (rng() % 6 == 0) strides[d] = 0;
      return strides;
    };
    const Dims dst = rng() % 3 ? row_major_strides(sizes) : layout(false);
    const Dims src = layout(true);
    check_same_copy(shape_of(sizes, dst, src), "sizes " + dims(sizes) + " dst " + dims(dst) + " src " + dims(src));
  }
}

void check_known_shapes() {
  // Both contiguous: one dimension.
  {
    const Dims sizes = {2, 3, 4, 5};
    const st::CopyShape r = st::reduce(shape_of(sizes, row_major_strides(sizes), row_major_strides(sizes)));
    expect(r.ndim == 1 && r.sizes[0] == 120 && r.dst_strides[0] == 1 && r.src_strides[0] == 1,
           "contiguous to contiguous reduces to one dimension of 120");
  }
  // A transpose into a dense buffer: two dimensions, the destination row-major.
  {
    const Dims sizes = {64, 32};
    const st::CopyShape r = st::reduce(shape_of(sizes, row_major_strides(sizes), {1, 64}));
    expect(r.ndim == 2 && st::row_major(r, r.dst_strides), "a transpose keeps two dimensions");
  }
  // Channels-last to contiguous of [2, 3, 4, 5]: the spatial dimensions merge.
  {
    const Dims sizes = {2, 3, 4, 5};
    const st::CopyShape r = st::reduce(shape_of(sizes, row_major_strides(sizes), {60, 1, 15, 3}));
    expect(r.ndim == 3 && r.sizes[0] == 2 && r.sizes[1] == 3 && r.sizes[2] == 20,
           "channels-last to contiguous merges height and width");
  }
  // Whisper conv1's im2col gather (conv_view.h's im2col_of): [1, 1, 3000,
  // 80, 1, 3] windows of a [1, 80, 1, 3002] padded input, into a dense
  // matrix: three dimensions, the destination row-major, 32-bit.
  {
    const Dims sizes = {1, 1, 3000, 80, 1, 3};
    const st::CopyShape r =
        st::reduce(shape_of(sizes, row_major_strides(sizes), {80 * 3002, 3002, 1, 3002, 3002, 1}));
    expect(r.ndim == 3 && r.sizes[0] == 3000 && r.sizes[1] == 80 && r.sizes[2] == 3,
           "Whisper's im2col gather reduces to [3000, 80, 3]");
    expect(st::row_major(r, r.dst_strides) && st::fits_index32(r), "... into a row-major destination, in 32 bits");
    check_same_copy(shape_of(sizes, row_major_strides(sizes), {80 * 3002, 3002, 1, 3002, 3002, 1}), "Whisper's gather");
  }
  // No elements: the shape is kept, nothing is visited.
  {
    const st::CopyShape r = st::reduce(shape_of({4, 0, 3}, {3, 3, 1}, {3, 3, 1}));
    expect(r.ndim == 3 && count_of(r) == 0, "a copy of no elements keeps its shape");
  }
  // A scalar and all-ones shapes: no dimensions, one element at offset 0.
  {
    const st::CopyShape r = st::reduce(shape_of({1, 1, 1}, {1, 1, 1}, {7, 5, 3}));
    expect(r.ndim == 0 && count_of(r) == 1 && st::offset64(r, r.src_strides, 0) == 0, "all-ones shape: one element");
  }
}

void check_index32_bounds() {
  const int64_t kMost = INT32_MAX;
  // Offsets reaching exactly 2^31 - 1 fit; one more does not.
  expect(st::fits_index32(shape_of({2}, {1}, {kMost})), "a source reach of 2^31 - 1 fits");
  expect(!st::fits_index32(shape_of({2}, {1}, {kMost + 1})), "a source reach of 2^31 does not");
  expect(!st::fits_index32(shape_of({3}, {1}, {kMost / 2 + 1})), "two strides past half the range do not");
  expect(st::fits_index32(shape_of({3, 2}, {2, 1}, {(kMost - 1) / 2 - 1, 1})), "a reach summed over dimensions fits");
  expect(!st::fits_index32(shape_of({3, 2}, {2, 1}, {(kMost - 1) / 2, 2})), "... and one past it does not");
  expect(!st::fits_index32(shape_of({2}, {kMost + 1}, {1})), "the destination's reach counts too");
  // The element count: 2^31 - 1 fits, 2^31 does not (each stride 0 to keep the reach small).
  expect(st::fits_index32(shape_of({kMost}, {0}, {0})), "2^31 - 1 elements fit");
  expect(!st::fits_index32(shape_of({1 << 16, 1 << 15}, {0, 0}, {0, 0})), "2^31 elements do not");
  expect(!st::fits_index32(shape_of({4}, {1}, {-1})), "a negative stride is never 32-bit");
}

// The bytes a copy writes, done element by element on buffers of
// `buffer_bytes` (every byte of `src` distinct), with `shape` in elements of
// `itemsize` bytes.
std::vector<uint8_t> copied_bytes(const st::CopyShape& shape, int64_t numel, size_t itemsize, size_t buffer_bytes) {
  std::vector<uint8_t> src(buffer_bytes), dst(buffer_bytes, 0);
  for (size_t i = 0; i < buffer_bytes; ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  for (int64_t i = 0; i < numel; ++i) {
    const int64_t to = st::offset64(shape, shape.dst_strides, i), from = st::offset64(shape, shape.src_strides, i);
    for (size_t b = 0; b < itemsize; ++b) dst[to * itemsize + b] = src[from * itemsize + b];
  }
  return dst;
}

// A widened copy writes the same bytes as the element-wise one.
void check_widened_copy(const Dims& sizes, const Dims& dst, const Dims& src, size_t itemsize, size_t expected_word,
                        const std::string& what) {
  const st::CopyShape reduced = st::reduce(shape_of(sizes, dst, src));
  const int64_t numel = count_of(reduced);
  int64_t reach = 1;
  for (size_t d = 0; d < sizes.size(); ++d) reach += (sizes[d] - 1) * std::max(dst[d], src[d]);
  const size_t buffer = static_cast<size_t>(reach) * itemsize + st::kWidestWord;
  const st::WideCopy wide = st::widen(reduced, numel, itemsize, 0, 0);
  expect(wide.word == expected_word, what + ": moved in " + std::to_string(expected_word) + "-byte words, not " +
                                         std::to_string(wide.word));
  expect(wide.numel * static_cast<int64_t>(wide.word) == numel * static_cast<int64_t>(itemsize),
         what + ": as many bytes in words as in elements");
  expect(count_of(wide.shape) == wide.numel, what + ": the widened shape has numel words");
  expect(copied_bytes(wide.shape, wide.numel, wide.word, buffer) == copied_bytes(reduced, numel, itemsize, buffer),
         what + ": the same bytes written");
}

void check_widen() {
  // Attention's heads split, [B, L, H, D] viewed as [B, H, L, D] into a
  // dense buffer: rows of D = 64 contiguous on both sides.
  for (size_t itemsize : {1, 2, 4, 8})
    check_widened_copy({2, 4, 8, 64}, row_major_strides({2, 4, 8, 64}), {8 * 4 * 64, 64, 4 * 64, 1}, itemsize, 16,
                       "heads split of " + std::to_string(itemsize) + "-byte elements");
  // Rows of 6 two-byte elements: 12 bytes, so 4-byte words.
  check_widened_copy({5, 6}, {6, 1}, {8, 1}, 2, 4, "rows of 12 bytes, source rows 16 bytes apart");
  // A source row stride that is not a whole number of words: 2-byte words only.
  check_widened_copy({5, 4}, {4, 1}, {5, 1}, 2, 2, "source rows 10 bytes apart");
  // An innermost dimension that is not contiguous in the source: kept as is.
  check_widened_copy({8, 8}, {8, 1}, {1, 8}, 4, 4, "a transpose");
  // A broadcast row (source stride 0 for the outer dimension) widens.
  check_widened_copy({3, 16}, {16, 1}, {0, 1}, 4, 16, "a broadcast row");
  // Elements as wide as the widest word, or a contiguous copy of one row.
  check_widened_copy({4, 4}, {4, 1}, {8, 1}, 8, 16, "8-byte elements in pairs");
  check_widened_copy({32}, {1}, {1}, 4, 16, "one contiguous row");
  // Addresses: each side must be aligned to the word.
  {
    const st::CopyShape r = st::reduce(shape_of({4, 64}, {64, 1}, {128, 1}));
    expect(st::widen(r, 256, 2, 16, 32).word == 16, "16-byte aligned addresses take 16-byte words");
    expect(st::widen(r, 256, 2, 8, 32).word == 8, "an 8-byte aligned destination takes 8-byte words");
    expect(st::widen(r, 256, 2, 32, 2).word == 2, "a source aligned to its elements only keeps them");
    const st::WideCopy w = st::widen(r, 256, 2, 0, 0);
    expect(w.shape.ndim == 2 && w.shape.sizes[1] == 8 && w.shape.src_strides[0] == 16 && w.shape.dst_strides[0] == 8,
           "[4, 64] of 2-byte elements becomes [4, 8] of 16-byte words, strides divided by 8");
  }
  // No elements, or no dimensions: nothing to widen.
  expect(st::widen(st::reduce(shape_of({4, 0}, {1, 1}, {1, 1})), 0, 4, 0, 0).word == 4, "a copy of nothing is kept");
  expect(st::widen(st::reduce(shape_of({1}, {1}, {1})), 1, 4, 0, 0).word == 4, "one element is kept");
}

// The host copy (strided_host_copy.h) writes what the element-wise copy of
// the unreduced shape writes, for elements of every width (3 bytes: the
// memcpy path), into a destination that starts as all ones.
void check_host_copy_of(const st::CopyShape& original, const std::string& what) {
  const int64_t n = count_of(original);
  int64_t reach = 1;
  for (int32_t d = 0; d < original.ndim; ++d)
    reach += (original.sizes[d] - 1) * std::max(original.dst_strides[d], original.src_strides[d]);
  for (size_t itemsize : {1, 2, 3, 4, 8}) {
    const size_t bytes = static_cast<size_t>(reach) * itemsize;
    std::vector<char> src(bytes), expected(bytes, 1), got(bytes, 1);
    for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<char>(i * 131 + 7);
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(expected.data() + st::offset64(original, original.dst_strides, i) * itemsize,
                  src.data() + st::offset64(original, original.src_strides, i) * itemsize, itemsize);
    st::copy_on_host(got.data(), src.data(), st::reduce(original), n, itemsize);
    expect(got == expected, what + ": the host copy of " + std::to_string(itemsize) + "-byte elements");
  }
}

void check_host_copies() {
  std::mt19937_64 rng(23);
  for (int trial = 0; trial < 400; ++trial) {
    const int ndim = static_cast<int>(rng() % 6);
    Dims sizes(ndim), src(ndim);
    for (int d = 0; d < ndim; ++d) sizes[d] = 1 + static_cast<int64_t>(rng() % 5);
    // The source: a permutation of padded row-major strides, the last kept
    // innermost half the time (rows contiguous on both sides: memcpy).
    Dims order(ndim);
    for (int d = 0; d < ndim; ++d) order[d] = d;
    const int shuffled = rng() % 2 ? ndim : ndim - 1;
    for (int d = shuffled - 1; d > 0; --d) std::swap(order[d], order[rng() % (d + 1)]);
    int64_t step = 1;
    for (int k = ndim - 1; k >= 0; --k) {
      src[order[k]] = step;
      step *= sizes[order[k]] + static_cast<int64_t>(rng() % 2);
    }
    const Dims dst = row_major_strides(sizes);
    check_host_copy_of(shape_of(sizes, dst, src), "host copy, sizes " + dims(sizes) + " src " + dims(src));
  }
  // Whole rows at a stride, a transpose, one element, a broadcast row.
  check_host_copy_of(shape_of({4, 8}, {8, 1}, {16, 1}), "rows 16 apart");
  check_host_copy_of(shape_of({8, 8}, {8, 1}, {1, 8}), "a transpose");
  check_host_copy_of(shape_of({1, 1}, {1, 1}, {5, 3}), "one element");
  check_host_copy_of(shape_of({3, 6}, {6, 1}, {0, 1}), "a broadcast row");
}

}  // namespace

int main() {
  check_divider();
  check_known_shapes();
  check_random_views();
  check_index32_bounds();
  check_widen();
  check_host_copies();
  return host_check::finish();
}
