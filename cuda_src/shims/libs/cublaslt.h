// cuBLASLt, opened with dlopen the first time a shim needs it (the fp8
// _scaled_mm, and addmm / _addmm_activation with a bias epilogue:
// matmul/gemm_epilogue.h), as cuBLAS is (libs/cublas.h): never linked, built without its
// headers, so the few declarations it needs are here (values from CUDA 13's
// cublasLt.h; each enum is int-sized there).
#pragma once

#include <cuda_runtime_api.h>
#include <library_types.h>  // cudaDataType_t: CUDA_R_8F_E4M3 28, CUDA_R_8F_E5M2 29

#include <cstddef>
#include <cstdint>

#include "aotirt/aotirt.h"
#include "shims/libs/cublas.h"  // Status, kSuccess, kCompute32F

namespace aotirt {
namespace cublaslt {

using Handle = struct cublasLtContext*;
using MatmulDesc = struct cublasLtMatmulDescOpaque_t*;
using Layout = struct cublasLtMatrixLayoutOpaque_t*;
using Preference = struct cublasLtMatmulPreferenceOpaque_t*;
using cublas::Status;

struct Algo {  // cublasLtMatmulAlgo_t
  uint64_t data[8];
};

struct HeuristicResult {  // cublasLtMatmulHeuristicResult_t
  Algo algo;
  size_t workspace_size;
  Status state;
  float waves_count;
  int reserved[4];
};

// cublasLtMatmulDescAttributes_t
constexpr int kDescTransA = 3;            // int32 cublasOperation_t
constexpr int kDescTransB = 4;
constexpr int kDescEpilogue = 7;          // uint32 cublasLtEpilogue_t
constexpr int kDescBiasPointer = 8;       // const void*
constexpr int kDescAScalePointer = 17;    // const float* (device)
constexpr int kDescBScalePointer = 18;
constexpr int kDescDScalePointer = 20;
constexpr int kDescFastAccum = 25;        // int8
constexpr int kDescBiasDataType = 26;     // int32 cudaDataType_t
constexpr uint32_t kEpilogueDefault = 1;  // CUBLASLT_EPILOGUE_DEFAULT
constexpr uint32_t kEpilogueBias = 4;     // CUBLASLT_EPILOGUE_BIAS
constexpr uint32_t kEpilogueReluBias = 6; // CUBLASLT_EPILOGUE_RELU_BIAS
constexpr uint32_t kEpilogueGeluBias = 36; // CUBLASLT_EPILOGUE_GELU_BIAS (the tanh approximation)
constexpr int kPrefMaxWorkspaceBytes = 1; // uint64 CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
// uint32 CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_{A,B,C,D}_BYTES: the heuristic
// assumes 256-byte aligned buffers unless told less.
constexpr int kPrefMinAlignmentA = 5, kPrefMinAlignmentB = 6, kPrefMinAlignmentC = 7, kPrefMinAlignmentD = 8;
constexpr Status kStatusNotSupported = 15;  // CUBLAS_STATUS_NOT_SUPPORTED
constexpr int kOpN = 0, kOpT = 1;         // cublasOperation_t

struct Api {
  Status (*create)(Handle*);                                                  // cublasLtCreate
  Status (*desc_create)(MatmulDesc*, int compute_type, cudaDataType_t scale);  // cublasLtMatmulDescCreate
  Status (*desc_destroy)(MatmulDesc);
  Status (*desc_set)(MatmulDesc, int attr, const void* buf, size_t bytes);    // ...DescSetAttribute
  Status (*layout_create)(Layout*, cudaDataType_t, uint64_t rows, uint64_t cols, int64_t ld);
  Status (*layout_destroy)(Layout);
  Status (*pref_create)(Preference*);
  Status (*pref_destroy)(Preference);
  Status (*pref_set)(Preference, int attr, const void* buf, size_t bytes);
  Status (*heuristic)(Handle, MatmulDesc, Layout a, Layout b, Layout c, Layout d, Preference, int requested,
                      HeuristicResult* results, int* returned);  // cublasLtMatmulAlgoGetHeuristic
  Status (*matmul)(Handle, MatmulDesc, const void* alpha, const void* a, Layout, const void* b, Layout,
                   const void* beta, const void* c, Layout, void* d, Layout, const Algo*, void* workspace,
                   size_t workspace_bytes, cudaStream_t);  // cublasLtMatmul
  const char* (*status_string)(Status);  // cublasLtGetStatusString
};

// The loaded library, opened on the first call: AOTIRT_CUBLASLT when set
// (and nothing else), else the pip wheels' copies (nvidia-cublas:
// nvidia/cu13/lib/libcublasLt.so.13; nvidia-cublas-cu12:
// nvidia/cublas/lib/libcublasLt.so.12), then libcublasLt.so.13, .so.12 and
// .so through the dynamic linker. On failure the message starts with `who`.
aotirt_status api(const char* who, const Api** out);

// The calling thread's handle for `device` (the current device), made on
// first use and kept for the thread's life.
aotirt_status thread_handle(const char* who, int device, Handle* out);

// AOTIRT_OK for success, else an error naming `who`, the call and the status.
aotirt_status check(const Api& lt, const char* who, const char* call, Status status);

}  // namespace cublaslt
}  // namespace aotirt
