// cuBLAS, opened with dlopen the first time a CUDA matmul shim runs
// (libs/dynamic_library.h): aotirt never links it, and builds without its
// headers, so the few declarations it needs are here.
#pragma once

#include <cuda_runtime_api.h>
#include <library_types.h>  // cudaDataType_t: CUDA_R_32F 0, CUDA_R_64F 1, CUDA_R_16F 2, CUDA_R_16BF 14

#include <string>

#include "aotirt/aotirt.h"
#include "runtime/tensor.h"

namespace aotirt {
namespace cublas {

// From cublas_api.h; the values have not changed from cuBLAS 11 to 13. Each
// is an int-sized C enum there, so int is the same in the calling convention.
using Handle = struct cublasContext*;
using Status = int;                 // cublasStatus_t
constexpr Status kSuccess = 0;      // CUBLAS_STATUS_SUCCESS
// cublasOperation_t (CUBLAS_OP_N 0, CUBLAS_OP_T 1): see gemm_layout.h.
constexpr int kCompute32F = 68;     // CUBLAS_COMPUTE_32F: float math, no TF32
constexpr int kCompute64F = 70;     // CUBLAS_COMPUTE_64F
constexpr int kCompute32I = 72;     // CUBLAS_COMPUTE_32I
constexpr int kGemmDefault = -1;    // CUBLAS_GEMM_DEFAULT

// The cudaDataType_t of an aotirt dtype, for cuBLAS's and cuBLASLt's
// matrices; each caller passes only the dtypes its problem admits (float32
// for the rest).
inline cudaDataType_t data_type(int32_t dtype) {
  switch (dtype) {
    case AOTIRT_DTYPE_INT8: return CUDA_R_8I;
    case AOTIRT_DTYPE_INT32: return CUDA_R_32I;
    case AOTIRT_DTYPE_FLOAT64: return CUDA_R_64F;
    case AOTIRT_DTYPE_FLOAT16: return CUDA_R_16F;
    case AOTIRT_DTYPE_BFLOAT16: return CUDA_R_16BF;
    case AOTIRT_DTYPE_FLOAT8_E4M3FN: return CUDA_R_8F_E4M3;
    case AOTIRT_DTYPE_FLOAT8_E5M2: return CUDA_R_8F_E5M2;
    default: return CUDA_R_32F;
  }
}

struct Api {
  Status (*create)(Handle*);                         // cublasCreate_v2
  Status (*set_stream)(Handle, cudaStream_t);        // cublasSetStream_v2
  Status (*set_workspace)(Handle, void*, size_t);    // cublasSetWorkspace_v2; may be null (cuBLAS < 11)
  Status (*gemm)(Handle, int transa, int transb, int m, int n, int k, const void* alpha,  // cublasGemmEx
                 const void* a, cudaDataType_t a_type, int lda, const void* b, cudaDataType_t b_type, int ldb,
                 const void* beta, void* c, cudaDataType_t c_type, int ldc, int compute_type, int algo);
  Status (*gemm_strided_batched)(Handle, int transa, int transb, int m, int n, int k,  // ...StridedBatchedEx
                                 const void* alpha, const void* a, cudaDataType_t a_type, int lda,
                                 long long stride_a, const void* b, cudaDataType_t b_type, int ldb,
                                 long long stride_b, const void* beta, void* c, cudaDataType_t c_type, int ldc,
                                 long long stride_c, int batch_count, int compute_type, int algo);
  Status (*gemm_batched)(Handle, int transa, int transb, int m, int n, int k,  // cublasGemmBatchedEx
                         const void* alpha, const void* const* a, cudaDataType_t a_type, int lda,
                         const void* const* b, cudaDataType_t b_type, int ldb, const void* beta, void* const* c,
                         cudaDataType_t c_type, int ldc, int batch_count, int compute_type, int algo);
  const char* (*status_string)(Status);  // cublasGetStatusString; may be null (cuBLAS < 11.4)
};

// The loaded library, opening it on the first call. On failure the message
// starts with `who` and names every file tried and how to provide one.
//
// Search (libs/dynamic_library.h): the file named by the AOTIRT_CUBLAS
// environment variable when it is set (and nothing else), else the pip
// wheels' copies (nvidia-cublas: nvidia/cu13/lib/libcublas.so.13;
// nvidia-cublas-cu12: nvidia/cublas/lib/libcublas.so.12) under the process's
// site-packages folders, then libcublas.so.13, libcublas.so.12, libcublas.so
// through the dynamic linker.
aotirt_status api(const char* who, const Api** out);

// The calling thread's handle for `device`, which must be the current device.
// Made on first use. A handle is never destroyed (cublasDestroy waits for the
// whole device); a thread that ends leaves its handles to the next threads.
aotirt_status thread_handle(const char* who, int device, Handle* out);

// Points `handle` at `stream` for the calls that follow, with a workspace of
// aotirt's own that the caller keeps (`workspace`) until its last cuBLAS call
// on that stream is queued; freeing it is stream-ordered, so the next call on
// the stream reuses the block from the stream's cache.
//
// Why not cuBLAS's default workspace pool: with it cuBLAS queues a
// cudaEventRecord on the stream at every GEMM (15 a call of a small Gemma
// decoder, one per matmul, seen in a CUPTI trace on the H200), each one
// more operation between the kernels; torch's runner, which gives cuBLAS a
// workspace of its own as this does, queues none. Its size is torch's:
// CUBLAS_WORKSPACE_CONFIG's when set (":SIZE:COUNT" pairs, SIZE in KiB; the
// variable cuBLAS reads for its own pool, so a user's deterministic ":0:0"
// or ":16:8" still holds), else 32 MiB on Hopper and newer and 8 MiB +
// 128 KiB before, so that cuBLAS chooses among the same algorithms as torch.
// Inside a CUDA graph capture the workspace becomes an allocation node of the
// graph, as every stream-ordered allocation there does.
aotirt_status bind_stream(const Api& cublas, const char* who, Handle handle, const StreamRef& stream,
                          StorageRef* workspace);

// AOTIRT_OK for CUBLAS_STATUS_SUCCESS, else an AOTIRT_ERROR_AOTI whose message
// names `who`, the call and cuBLAS's status name and description.
aotirt_status check(const Api& cublas, const char* who, const char* call, Status status);

}  // namespace cublas
}  // namespace aotirt
