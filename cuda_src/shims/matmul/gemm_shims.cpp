// aoti_torch_{cpu,cuda}_{mm,addmm,bmm,baddbmm}_out, addmv, _addmm_activation
// and _int_mm_out (include/aotirt/shim.h): check, then hand the Problem to
// the CPU loop or to cuBLAS (cuBLASLt for a CUDA addmm with a bias row:
// gemm_epilogue.h). The ops that return a new tensor lay it out as
// torch's meta functions do: contiguous ([M, N] for _addmm_activation, [M]
// for addmv), with mat1's (mat's) dtype.

#include <string>

#include "aotirt/shim.h"

#include "runtime/dtypes.h"
#include "shims/matmul/activation.h"
#include "shims/matmul/gemm.h"
#include "shims/matmul/gemm_epilogue.h"
#include "shims/shim_helpers.h"

using aotirt::OwnedTensor;
using aotirt::Tensor;

namespace {

std::string prefix(const char* name) { return std::string(name) + ": "; }

std::string sizes_of(const Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.ndim; ++d) s += (d ? ", " : "") + std::to_string(t.sizes[d]);
  return s + "]";
}

// A new contiguous result on the device of `like` (which must be on the
// shim's device: checked here, before anything is allocated there).
aotirt_status new_result(const char* name, int32_t device_type, const Tensor& like, int64_t ndim,
                         const int64_t* sizes, OwnedTensor* out) {
  if (!like.storage || like.storage->device_type != device_type)
    return aotirt::fail(AOTIRT_ERROR_VALUE, prefix(name) + "the operands must be " +
                                                (device_type == AOTIRT_DEVICE_CPU ? "CPU" : "CUDA") + " tensors");
  Tensor* made = nullptr;
  AOTIRT_TRY(aotirt::new_tensor(ndim, sizes, nullptr, like.dtype, device_type, like.storage->device_index, &made));
  out->reset(made);
  return AOTIRT_OK;
}

using aotirt::matmul::Epilogue;

// `epilogue` (addmm, _addmm_activation): on CUDA, try the problem as one
// cuBLASLt matmul with that epilogue first (gemm_epilogue.h); `*fused` says
// whether it ran, the activation included. Otherwise, and on the CPU, cuBLAS
// or the CPU loop computes the plain addmm.
aotirt_status matmul(const char* name, int32_t device_type, Tensor* out, const Tensor* self, const Tensor* mat1,
                     const Tensor* mat2, double beta, double alpha, bool batched, bool int8 = false,
                     const Epilogue* epilogue = nullptr, bool* fused = nullptr) {
  if (fused) *fused = false;
  aotirt::matmul::Problem p;
  AOTIRT_TRY(aotirt::matmul::prepare(name, device_type, out, self, mat1, mat2, beta, alpha, batched, &p, int8));
  if (device_type == AOTIRT_DEVICE_CPU) return aotirt::matmul::run_cpu(p);
  aotirt::StreamRef stream;
  bool ran = false;
  if (epilogue) AOTIRT_TRY(aotirt::matmul::run_cuda_epilogue(p, *epilogue, &stream, &ran));
  if (!ran) AOTIRT_TRY(aotirt::matmul::run_cuda(p, &stream));
  if (fused) *fused = ran;
  if (stream) out->stream = std::move(stream);  // consumers of out now wait for this stream
  return AOTIRT_OK;
}

// _addmm_activation: addmm into a new [M, N], then relu or gelu in place;
// on CUDA with a bias row, one cuBLASLt matmul does all of it.
aotirt_status run_addmm_activation(const char* name, int32_t device_type, const Tensor* self, const Tensor* mat1,
                               const Tensor* mat2, double beta, double alpha, bool gelu, AtenTensorHandle* ret0) {
  if (!self || !mat1 || !mat2 || !ret0) return aotirt::null_argument(name);
  if (mat1->ndim != 2 || mat2->ndim != 2)
    return aotirt::fail(AOTIRT_ERROR_VALUE, prefix(name) + "mat1 and mat2 must be 2-D, got " + sizes_of(*mat1) +
                                                " and " + sizes_of(*mat2));
  const int64_t sizes[] = {mat1->sizes[0], mat2->sizes[1]};
  OwnedTensor out;
  AOTIRT_TRY(new_result(name, device_type, *mat1, 2, sizes, &out));
  const Epilogue epilogue = gelu ? Epilogue::GeluBias : Epilogue::ReluBias;
  bool fused = false;
  AOTIRT_TRY(matmul(name, device_type, out.get(), self, mat1, mat2, beta, alpha, false, false, &epilogue, &fused));
  if (fused) {
    *ret0 = out.release();
    return AOTIRT_OK;
  }
  using aotirt::matmul::Activation;
  const Activation act = !gelu ? Activation::Relu
                               : device_type == AOTIRT_DEVICE_CPU ? Activation::GeluErf : Activation::GeluTanh;
  if (device_type == AOTIRT_DEVICE_CPU) {
    AOTIRT_TRY(aotirt::matmul::activate_cpu(*out, act));
  } else if (out->numel() > 0) {
    AOTIRT_TRY(aotirt::matmul::activate_cuda(*out, act, out->stream.get()));  // the product's stream
  }
  *ret0 = out.release();
  return AOTIRT_OK;
}

// A [R] vector as the [R, 1] matrix of its elements.
Tensor as_column(const Tensor& v) {
  Tensor c = v;
  c.ndim = 2;
  c.sizes[0] = v.sizes[0];
  c.strides[0] = v.strides[0];
  c.sizes[1] = 1;
  c.strides[1] = 1;
  return c;
}

// addmv: out[M] = beta * self + alpha * (mat[M, K] @ vec[K]), as addmm of
// [M, 1] columns; self (0-d or [M] or [1]) broadcasts to [M].
aotirt_status run_addmv(const char* name, int32_t device_type, const Tensor* self, const Tensor* mat, const Tensor* vec,
                    double beta, double alpha, AtenTensorHandle* ret0) {
  if (!self || !mat || !vec || !ret0) return aotirt::null_argument(name);
  if (mat->ndim != 2 || vec->ndim != 1 || self->ndim > 1)
    return aotirt::fail(AOTIRT_ERROR_VALUE, prefix(name) + "vector + matrix @ vector expected, got " +
                                                std::to_string(self->ndim) + ", " + std::to_string(mat->ndim) + ", " +
                                                std::to_string(vec->ndim));
  const int64_t m = mat->sizes[0];
  if (mat->sizes[1] != vec->sizes[0] || (self->numel() != m && self->numel() != 1))
    return aotirt::fail(AOTIRT_ERROR_VALUE, prefix(name) + "size mismatch, got input " + sizes_of(*self) + ", mat " +
                                                sizes_of(*mat) + ", vec " + sizes_of(*vec));
  OwnedTensor out;
  AOTIRT_TRY(new_result(name, device_type, *mat, 1, &m, &out));
  Tensor out_column = as_column(*out), vec_column = as_column(*vec);
  Tensor self_view = self->ndim == 1 ? as_column(*self) : *self;
  AOTIRT_TRY(matmul(name, device_type, &out_column, &self_view, mat, &vec_column, beta, alpha, false));
  out->stream = out_column.stream;  // the product's stream, where matmul left it
  *ret0 = out.release();
  return AOTIRT_OK;
}

// _int_mm_out: out[M, N] int32 = self[M, K] int8 @ mat2[K, N] int8. On
// CUDA torch also requires what its cuBLAS path does: M > 16, K and N
// positive multiples of 8.
aotirt_status run_int_mm(const char* name, int32_t device_type, Tensor* out, const Tensor* self, const Tensor* mat2) {
  if (!out || !self || !mat2) return aotirt::null_argument(name);
  if (self->ndim != 2 || mat2->ndim != 2)
    return aotirt::fail(AOTIRT_ERROR_VALUE, prefix(name) + "Expected self and mat2 to be of dimension 2, got " +
                                                sizes_of(*self) + " and " + sizes_of(*mat2));
  if (device_type == AOTIRT_DEVICE_CUDA) {
    const int64_t k = self->sizes[1], n = mat2->sizes[1];
    std::string why;
    if (self->sizes[0] <= 16)
      why = "self.size(0) needs to be greater than 16, but got " + std::to_string(self->sizes[0]);
    else if (k <= 0 || k % 8 != 0)
      why = "self.size(1) needs to be greater than 0 and a multiple of 8, but got " + std::to_string(k);
    else if (n <= 0 || n % 8 != 0)
      why = "mat2.size(1) needs to be greater than 0 and a multiple of 8, but got " + std::to_string(n);
    if (!why.empty()) return aotirt::fail(AOTIRT_ERROR_VALUE, prefix(name) + why);
  }
  return matmul(name, device_type, out, nullptr, self, mat2, 0.0, 1.0, false, true);
}

}  // namespace

// One definition of each matmul shim, made for each device (named in full,
// so that a search for a shim's name finds where it is made).
#define AOTIRT_GEMM_SHIMS(mm_out, addmm_out, bmm_out, DEVICE_TYPE)                                                     \
  AOTITorchError mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {                          \
    const char* name = #mm_out;                                                                                        \
    return aotirt::shim(name, [&] { return matmul(name, DEVICE_TYPE, out, nullptr, self, mat2, 0.0, 1.0, false); });   \
  }                                                                                                                    \
  AOTITorchError addmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1,                         \
                           AtenTensorHandle mat2, double beta, double alpha) {                                         \
    const char* name = #addmm_out;                                                                                     \
    return aotirt::shim(name, [&] {                                                                                    \
      if (!self) return aotirt::fail(AOTIRT_ERROR_VALUE, std::string(name) + ": a tensor handle is NULL");             \
      const Epilogue bias = Epilogue::Bias;                                                                            \
      return matmul(name, DEVICE_TYPE, out, self, mat1, mat2, beta, alpha, false, false, &bias);                       \
    });                                                                                                                \
  }                                                                                                                    \
  AOTITorchError bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {                         \
    const char* name = #bmm_out;                                                                                       \
    return aotirt::shim(name, [&] { return matmul(name, DEVICE_TYPE, out, nullptr, self, mat2, 0.0, 1.0, true); });    \
  }

#define AOTIRT_BADDBMM_SHIM(baddbmm_out, DEVICE_TYPE)                                                                  \
  AOTITorchError baddbmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle batch1,                     \
                             AtenTensorHandle batch2, double beta, double alpha) {                                     \
    const char* name = #baddbmm_out;                                                                                   \
    return aotirt::shim(name, [&] {                                                                                    \
      if (!self) return aotirt::null_argument(name);                                                                   \
      return matmul(name, DEVICE_TYPE, out, self, batch1, batch2, beta, alpha, true);                                  \
    });                                                                                                                \
  }

#define AOTIRT_ADDMV_SHIM(addmv, DEVICE_TYPE)                                                                          \
  AOTITorchError addmv(AtenTensorHandle self, AtenTensorHandle mat, AtenTensorHandle vec, double beta, double alpha,   \
                       AtenTensorHandle* ret0) {                                                                       \
    const char* name = #addmv;                                                                                         \
    return aotirt::shim(name, [&] { return run_addmv(name, DEVICE_TYPE, self, mat, vec, beta, alpha, ret0); });        \
  }

#define AOTIRT_ADDMM_ACTIVATION_SHIM(addmm_activation, DEVICE_TYPE)                                                    \
  AOTITorchError addmm_activation(AtenTensorHandle self, AtenTensorHandle mat1, AtenTensorHandle mat2, double beta,    \
                                  double alpha, int32_t use_gelu, AtenTensorHandle* ret0) {                            \
    const char* name = #addmm_activation;                                                                              \
    return aotirt::shim(name, [&] {                                                                                    \
      return run_addmm_activation(name, DEVICE_TYPE, self, mat1, mat2, beta, alpha, use_gelu != 0, ret0);              \
    });                                                                                                                \
  }

#define AOTIRT_INT_MM_SHIM(int_mm_out, DEVICE_TYPE)                                                                    \
  AOTITorchError int_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {                      \
    const char* name = #int_mm_out;                                                                                    \
    return aotirt::shim(name, [&] { return run_int_mm(name, DEVICE_TYPE, out, self, mat2); });                         \
  }                                                                                                                    \

extern "C" {

AOTIRT_GEMM_SHIMS(aoti_torch_cpu_mm_out, aoti_torch_cpu_addmm_out, aoti_torch_cpu_bmm_out, AOTIRT_DEVICE_CPU)
AOTIRT_GEMM_SHIMS(aoti_torch_cuda_mm_out, aoti_torch_cuda_addmm_out, aoti_torch_cuda_bmm_out, AOTIRT_DEVICE_CUDA)
AOTIRT_BADDBMM_SHIM(aoti_torch_cpu_baddbmm_out, AOTIRT_DEVICE_CPU)
AOTIRT_ADDMV_SHIM(aoti_torch_cpu_addmv, AOTIRT_DEVICE_CPU)
AOTIRT_ADDMM_ACTIVATION_SHIM(aoti_torch_cpu__addmm_activation, AOTIRT_DEVICE_CPU)
AOTIRT_INT_MM_SHIM(aoti_torch_cpu__int_mm_out, AOTIRT_DEVICE_CPU)
AOTIRT_BADDBMM_SHIM(aoti_torch_cuda_baddbmm_out, AOTIRT_DEVICE_CUDA)
AOTIRT_ADDMV_SHIM(aoti_torch_cuda_addmv, AOTIRT_DEVICE_CUDA)
AOTIRT_ADDMM_ACTIVATION_SHIM(aoti_torch_cuda__addmm_activation, AOTIRT_DEVICE_CUDA)
AOTIRT_INT_MM_SHIM(aoti_torch_cuda__int_mm_out, AOTIRT_DEVICE_CUDA)

}  // extern "C"

#undef AOTIRT_GEMM_SHIMS
#undef AOTIRT_BADDBMM_SHIM
#undef AOTIRT_ADDMV_SHIM
#undef AOTIRT_ADDMM_ACTIVATION_SHIM
#undef AOTIRT_INT_MM_SHIM
