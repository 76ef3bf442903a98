// conv_spec.h: a CUDA convolution as cuDNN sees it.

#include "shims/convolution/conv_spec.h"

#include <cstring>
#include <utility>

#include "runtime/errors.h"

namespace aotirt {
namespace conv_cuda {

View view_of(const Tensor& t) {
  View v;
  if (t.ndim == 3) {
    v.ndim = 4;
    conv_layout::unsqueeze2(t.sizes, t.strides, v.sizes, v.strides);
    return v;
  }
  v.ndim = t.ndim;
  for (int64_t d = 0; d < t.ndim; ++d) {
    v.sizes[d] = t.sizes[d];
    v.strides[d] = t.strides[d];
  }
  return v;
}

aotirt_status new_scratch(int64_t ndim, const int64_t* sizes, const int64_t* strides, int32_t dtype, int device,
                          const StreamRef& stream, Tensor* out) {
  Tensor s;
  s.ndim = ndim;
  s.dtype = dtype;
  std::memcpy(s.sizes, sizes, static_cast<size_t>(ndim) * sizeof(int64_t));
  if (strides)
    std::memcpy(s.strides, strides, static_cast<size_t>(ndim) * sizeof(int64_t));
  else
    contiguous_strides(ndim, s.sizes, s.strides);
  AOTIRT_TRY(allocate_storage(static_cast<size_t>(s.numel()) * s.itemsize(), AOTIRT_DEVICE_CUDA, device, stream,
                              &s.storage));
  s.stream = stream;
  *out = std::move(s);
  return AOTIRT_OK;
}

aotirt_status scratch(const Tensor& t, const int64_t* strides, const StreamRef& stream, Tensor* out) {
  int64_t own[AOTIRT_MAX_DIMS];
  for (int64_t d = 0; d < t.ndim; ++d) own[d] = t.ndim == 3 ? strides[d < 2 ? d : 3] : strides[d];
  return new_scratch(t.ndim, t.sizes, own, t.dtype, t.storage->device_index, stream, out);
}

std::string list(int64_t n, const int64_t* v) {
  std::string s = "[";
  for (int64_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string describe(const Spec& s) {
  std::string text = std::string(s.transposed ? "transposed " : "") + dtype_name(s.dtype) + " convolution, input " +
                     list(s.x.ndim, s.x.sizes) + " strides " + list(s.x.ndim, s.x.strides) + ", weight " +
                     list(s.w.ndim, s.w.sizes) + " strides " + list(s.w.ndim, s.w.strides) + ", output " +
                     list(s.y.ndim, s.y.sizes) + " strides " + list(s.y.ndim, s.y.strides) + ", stride " +
                     list(s.spatial, s.stride) + ", padding " + list(s.spatial, s.padding) + ", dilation " +
                     list(s.spatial, s.dilation);
  if (s.dtype == 6) text += s.tf32 ? ", TF32 allowed" : ", no TF32";
  return text;
}

namespace {
void append(std::string* key, int64_t v) { key->append(reinterpret_cast<const char*>(&v), sizeof(v)); }
}  // namespace

std::string key_of(const Spec& s) {
  std::string key = "conv";
  append(&key, s.transposed);
  append(&key, s.dtype);
  append(&key, s.dtype == 6 && s.tf32);
  for (const View* v : {&s.x, &s.w, &s.y}) {
    append(&key, v->ndim);
    for (int64_t d = 0; d < v->ndim; ++d) {
      append(&key, v->sizes[d]);
      append(&key, v->strides[d]);
    }
  }
  for (int64_t d = 0; d < s.spatial; ++d) {
    append(&key, s.stride[d]);
    append(&key, s.padding[d]);
    append(&key, s.dilation[d]);
  }
  return key;
}

bool matmul_of(const Spec& s, conv_layout::MatmulShape* product) {
  return conv_layout::as_matmul(s.x.ndim, s.x.sizes, s.x.strides, s.w.sizes, s.w.strides, s.y.sizes, s.y.strides,
                                s.stride, s.padding, s.transposed, product);
}

}  // namespace conv_cuda
}  // namespace aotirt
