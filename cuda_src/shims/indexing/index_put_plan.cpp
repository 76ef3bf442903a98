// The checks torch makes of index_put's arguments (its advanced indexing:
// expanding masks, broadcasting the index tensors together, placing the
// broadcast dimensions, broadcasting values), with torch's messages, and the
// plan of the walk over the indexing result.
//
// The result's shape: the index tensors broadcast to one shape B; when the
// indexed dimensions are adjacent, B takes their place among the sliced
// (":") dimensions, else B comes first and the sliced dimensions follow in
// order (numpy's rule, which torch follows).

#include <string>
#include <vector>

#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "shims/indexing/indexing.h"
#include "shims/indexing/plan_checks.h"
#include "shims/shim_helpers.h"

namespace aotirt {
namespace indexing {
namespace {

// One dimension of self: sliced, or indexed by one tensor.
struct Entry {
  bool indexed = false;
  const void* data = nullptr;
  bool int32 = false;
  int64_t ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
};

std::string sizes_string(const int64_t* sizes, int64_t ndim) {
  std::string s = "[";
  for (int64_t d = 0; d < ndim; ++d) s += (d ? ", " : "") + std::to_string(sizes[d]);
  return s + "]";
}

Entry index_entry(const Tensor& t) {
  Entry e;
  e.indexed = true;
  e.data = t.data();
  e.int32 = t.dtype == AOTIRT_DTYPE_INT32;
  e.ndim = t.ndim;
  for (int64_t d = 0; d < t.ndim; ++d) {
    e.sizes[d] = t.sizes[d];
    e.strides[d] = t.strides[d];
  }
  return e;
}

// A mask over self's dimensions [first, first + mask.ndim): the coordinates
// of its nonzero elements, in row-major order, one int64 entry per dimension.
template <typename M>
aotirt_status expand_mask(const char* shim, const Tensor& self, int64_t first, const Tensor& mask,
                          std::vector<std::vector<int64_t>>* store, std::vector<Entry>* entries) {
  for (int64_t d = 0; d < mask.ndim; ++d)
    if (first + d >= self.ndim || mask.sizes[d] != self.sizes[first + d])
      return fail(AOTIRT_ERROR_VALUE, std::string(shim) + ": the shape of the mask " + shape_string(mask) +
                                          " at index " + std::to_string(d) +
                                          " does not match the shape of the indexed tensor " + shape_string(self) +
                                          " at index " + std::to_string(first + d));
  const size_t base = store->size();
  store->resize(base + static_cast<size_t>(mask.ndim));
  const M* m = static_cast<const M*>(mask.data());
  int64_t at[kMaxDims] = {};
  const int64_t numel = mask.numel();
  for (int64_t i = 0; i < numel; ++i) {
    int64_t offset = 0;
    for (int64_t d = 0; d < mask.ndim; ++d) offset += at[d] * mask.strides[d];
    if (m[offset])
      for (int64_t d = 0; d < mask.ndim; ++d) (*store)[base + d].push_back(at[d]);
    for (int64_t d = mask.ndim - 1; d >= 0; --d) {
      if (++at[d] < mask.sizes[d]) break;
      at[d] = 0;
    }
  }
  for (int64_t d = 0; d < mask.ndim; ++d) {
    Entry e;
    e.indexed = true;
    e.data = (*store)[base + d].data();
    e.ndim = 1;
    e.sizes[0] = static_cast<int64_t>((*store)[base + d].size());
    e.strides[0] = 1;
    entries->push_back(e);
  }
  return AOTIRT_OK;
}

}  // namespace

aotirt_status plan_index_put(const char* shim, const Tensor& out, const Tensor& self, const Tensor* const* indices,
                             uint32_t num_indices, const Tensor& values, bool accumulate, IndexPutPlan* plan,
                             std::vector<std::vector<int64_t>>* mask_indices) {
  AOTIRT_TRY(check_out(shim, out, self));
  if (!same_device(values, self))
    return fail(AOTIRT_ERROR_VALUE, std::string(shim) + ": values and self are on different devices");
  if (values.dtype != self.dtype)
    return fail(AOTIRT_ERROR_TYPE, std::string(shim) + ": index put requires the source and destination dtypes "
                                       "match, got " + dtype_name(self.dtype) + " for the destination and " +
                                       dtype_name(values.dtype) + " for the source");
  if (num_indices > 0 && !indices) return null_argument(shim);

  // Self's dimensions, one entry each: masks stand for one per dimension they cover.
  std::vector<Entry> entries;
  for (uint32_t i = 0; i < num_indices; ++i) {
    const Tensor* t = indices[i];
    const int64_t first = static_cast<int64_t>(entries.size());
    if (!t) {
      entries.push_back(Entry{});
      continue;
    }
    if (!same_device(*t, self))
      return fail(AOTIRT_ERROR_VALUE, std::string(shim) + ": index " + std::to_string(i) +
                                          " is on another device than self");
    if (t->dtype == AOTIRT_DTYPE_INT64 || t->dtype == AOTIRT_DTYPE_INT32) {
      entries.push_back(index_entry(*t));
    } else if (t->dtype == AOTIRT_DTYPE_BOOL || t->dtype == AOTIRT_DTYPE_UINT8) {
      if (t->storage->device_type != AOTIRT_DEVICE_CPU)
        return fail(AOTIRT_ERROR_VALUE, std::string(shim) + ": a boolean mask index on CUDA is not supported (its "
                                            "number of true elements would have to be read on the host, a wait)");
      if (t->dtype == AOTIRT_DTYPE_BOOL)
        AOTIRT_TRY(expand_mask<bool>(shim, self, first, *t, mask_indices, &entries));
      else
        AOTIRT_TRY(expand_mask<uint8_t>(shim, self, first, *t, mask_indices, &entries));
    } else {
      return fail(AOTIRT_ERROR_TYPE, std::string(shim) + ": tensors used as indices must be long, int, byte or bool "
                                         "tensors, got " + dtype_name(t->dtype));
    }
    if (static_cast<int64_t>(entries.size()) > self.ndim)
      return fail(AOTIRT_ERROR_VALUE, std::string(shim) + ": too many indices for tensor of dimension " +
                                          std::to_string(self.ndim) + " (got " + std::to_string(entries.size()) + ")");
  }
  entries.resize(static_cast<size_t>(self.ndim));  // the rest are sliced

  // The index tensors broadcast together (right-aligned).
  int64_t b_ndim = 0, b_sizes[kMaxDims] = {};
  int first_indexed = -1, last_indexed = -1, count = 0;
  for (int64_t d = 0; d < self.ndim; ++d) {
    const Entry& e = entries[d];
    if (!e.indexed) continue;
    if (first_indexed < 0) first_indexed = static_cast<int>(d);
    last_indexed = static_cast<int>(d);
    ++count;
    if (e.ndim > b_ndim) {  // shift what we have to the right
      const int64_t shift = e.ndim - b_ndim;
      for (int64_t j = b_ndim - 1; j >= 0; --j) b_sizes[j + shift] = b_sizes[j];
      for (int64_t j = 0; j < shift; ++j) b_sizes[j] = 1;
      b_ndim = e.ndim;
    }
    for (int64_t j = 0; j < e.ndim; ++j) {
      int64_t& b = b_sizes[b_ndim - e.ndim + j];
      const int64_t s = e.sizes[j];
      if (b == s || s == 1) continue;
      if (b != 1) {
        std::string shapes;
        for (const Entry& x : entries)
          if (x.indexed) shapes += (shapes.empty() ? "" : ", ") + sizes_string(x.sizes, x.ndim);
        return fail(AOTIRT_ERROR_VALUE, std::string(shim) + ": shape mismatch: indexing tensors could not be "
                                            "broadcast together with shapes " + shapes);
      }
      b = s;
    }
  }
  const bool adjacent = count > 0 && last_indexed - first_indexed + 1 == count;

  // The result's dimensions.
  IndexPutPlan p;
  const int64_t r_ndim = (count ? b_ndim : 0) + self.ndim - count;
  if (r_ndim > kMaxDims)
    return fail(AOTIRT_ERROR_VALUE, std::string(shim) + ": the indexing result has " + std::to_string(r_ndim) +
                                        " dimensions, more than aotirt's " + std::to_string(kMaxDims));
  p.ndim = static_cast<int32_t>(r_ndim);
  const int64_t b_at = count == 0 ? 0 : (adjacent ? first_indexed : 0);  // where B starts in the result
  int64_t r = 0;
  auto add_slice = [&](int64_t d) {
    if (r == b_at && count) r += b_ndim;
    p.sizes[r] = self.sizes[d];
    p.out_strides[r] = out.strides[d];
    ++r;
  };
  for (int64_t d = 0; d < self.ndim; ++d)
    if (!entries[d].indexed) add_slice(d);
  for (int64_t j = 0; j < (count ? b_ndim : 0); ++j) p.sizes[b_at + j] = b_sizes[j];
  for (int64_t d = 0; d < self.ndim; ++d) {
    const Entry& e = entries[d];
    if (!e.indexed) continue;
    const int k = p.num_index++;
    p.index[k] = e.data;
    p.index_is_int32[k] = e.int32;
    p.index_size[k] = self.sizes[d];
    p.index_stride[k] = out.strides[d];
    p.index_dim[k] = static_cast<int32_t>(d);
    for (int64_t j = 0; j < e.ndim; ++j)
      p.index_strides[k][b_at + (b_ndim - e.ndim) + j] = e.sizes[j] == 1 ? 0 : e.strides[j];
  }
  p.numel = 1;
  for (int64_t j = 0; j < r_ndim; ++j) p.numel *= p.sizes[j];

  // Values broadcast to the result (right-aligned; no extra dimensions).
  bool fits = values.ndim <= r_ndim;
  for (int64_t j = 0; fits && j < values.ndim; ++j) {
    const int64_t rj = r_ndim - values.ndim + j;
    if (values.sizes[j] != 1 && values.sizes[j] != p.sizes[rj]) fits = false;
    p.value_strides[rj] = values.sizes[j] == 1 ? 0 : values.strides[j];
  }
  if (!fits)
    return fail(AOTIRT_ERROR_VALUE, std::string(shim) + ": shape mismatch: value tensor of shape " +
                                        shape_string(values) + " cannot be broadcast to indexing result of shape " +
                                        sizes_string(p.sizes, r_ndim));
  p.out = out.data();
  p.values = values.data();
  p.dtype = self.dtype;
  p.accumulate = accumulate;
  *plan = p;
  return AOTIRT_OK;
}

}  // namespace indexing
}  // namespace aotirt
