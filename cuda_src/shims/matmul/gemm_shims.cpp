// aoti_torch_{cpu,cuda}_{mm,addmm,bmm}_out (include/aotirt/shim.h): check,
// then hand the Problem to the CPU loop or to cuBLAS.

#include "aotirt/shim.h"

#include "shims/matmul/gemm.h"
#include "shims/shim_helpers.h"

using aotirt::Tensor;

namespace {

aotirt_status matmul(const char* name, int32_t device_type, Tensor* out, const Tensor* self, const Tensor* mat1,
                     const Tensor* mat2, double beta, double alpha, bool batched) {
  aotirt::matmul::Problem p;
  AOTIRT_TRY(aotirt::matmul::prepare(name, device_type, out, self, mat1, mat2, beta, alpha, batched, &p));
  if (device_type == AOTIRT_DEVICE_CPU) return aotirt::matmul::run_cpu(p);
  aotirt::StreamRef stream;
  AOTIRT_TRY(aotirt::matmul::run_cuda(p, &stream));
  if (stream) out->stream = std::move(stream);  // consumers of out now wait for this stream
  return AOTIRT_OK;
}

}  // namespace

// One definition of the three shims, made for each device (named in full,
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
      return matmul(name, DEVICE_TYPE, out, self, mat1, mat2, beta, alpha, false);                                     \
    });                                                                                                                \
  }                                                                                                                    \
  AOTITorchError bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {                         \
    const char* name = #bmm_out;                                                                                       \
    return aotirt::shim(name, [&] { return matmul(name, DEVICE_TYPE, out, nullptr, self, mat2, 0.0, 1.0, true); });    \
  }

extern "C" {

AOTIRT_GEMM_SHIMS(aoti_torch_cpu_mm_out, aoti_torch_cpu_addmm_out, aoti_torch_cpu_bmm_out, AOTIRT_DEVICE_CPU)
AOTIRT_GEMM_SHIMS(aoti_torch_cuda_mm_out, aoti_torch_cuda_addmm_out, aoti_torch_cuda_bmm_out, AOTIRT_DEVICE_CUDA)

}  // extern "C"

#undef AOTIRT_GEMM_SHIMS
