// The aoti_torch_* functions that generated model code calls, implemented by
// libaotirt.so with torch's exact names and signatures (see torch's
// torch/csrc/inductor/aoti_torch/c/shim.h). A model library built without
// libtorch leaves these undefined and resolves them from the process, which
// is why libaotirt.so is made globally visible before a model is opened.
// Every function declared here has its line in aotirt/shim_table.h.
//
// Codes are c10's: dtypes as the aotirt_dtype enum of aotirt/aotirt.h (u8 0,
// i8 1, i16 2, i32 3, i64 4, f16 5, f32 6, f64 7, bool 11, bf16 15); device
// type cpu 0, cuda 1.
#pragma once

#include <stdbool.h>

#include "aotirt/aoti_abi.h"

#if defined(AOTIRT_BUILDING_CORE)
#define AOTI_SHIM_EXPORT __attribute__((visibility("default")))
#else
#define AOTI_SHIM_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

// Constants. Generated code asks for these while the library is being opened.
AOTI_SHIM_EXPORT int32_t aoti_torch_device_type_cpu(void);
AOTI_SHIM_EXPORT int32_t aoti_torch_device_type_cuda(void);
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_float8_e5m2(void);
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_float8_e4m3fn(void);
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_bfloat16(void);
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_float16(void);
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_float32(void);
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_float64(void);
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_uint8(void);
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_int8(void);
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_int16(void);
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_int32(void);
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_int64(void);
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_bool(void);
AOTI_SHIM_EXPORT size_t aoti_torch_dtype_element_size(int32_t dtype);
AOTI_SHIM_EXPORT int32_t aoti_torch_layout_strided(void);
AOTI_SHIM_EXPORT int32_t aoti_torch_memory_format_contiguous_format(void);

AOTI_SHIM_EXPORT bool aoti_torch_grad_mode_is_enabled(void);
AOTI_SHIM_EXPORT void aoti_torch_grad_mode_set_enabled(bool enabled);

// Tensor objects.
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_delete_tensor_object(AtenTensorHandle tensor);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_data_ptr(AtenTensorHandle tensor, void** ret_data_ptr);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_storage_size(AtenTensorHandle tensor, int64_t* ret_size);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_dim(AtenTensorHandle tensor, int64_t* ret_dim);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_numel(AtenTensorHandle tensor, int64_t* ret_numel);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_sizes(AtenTensorHandle tensor, int64_t** ret_sizes);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_size(AtenTensorHandle tensor, int64_t d, int64_t* ret_size);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_strides(AtenTensorHandle tensor, int64_t** ret_strides);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_stride(AtenTensorHandle tensor, int64_t d, int64_t* ret_stride);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_dtype(AtenTensorHandle tensor, int32_t* ret_dtype);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_device_type(AtenTensorHandle tensor, int32_t* ret_device_type);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_device_index(AtenTensorHandle tensor, int32_t* ret_device_index);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_storage_offset(AtenTensorHandle tensor, int64_t* ret_storage_offset);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_is_contiguous(AtenTensorHandle tensor, bool* ret_is_contiguous);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_new_tensor_handle(AtenTensorHandle orig_handle, AtenTensorHandle* new_handle);

// Creation. CUDA memory comes from the device's stream-ordered pool, on the
// thread's current stream.
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_empty_strided(
    int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr,
    int32_t dtype, int32_t device_type, int32_t device_index,
    AtenTensorHandle* ret_new_tensor);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_create_tensor_from_blob(
    void* data, int64_t ndim, const int64_t* sizes_ptr,
    const int64_t* strides_ptr, int64_t storage_offset, int32_t dtype,
    int32_t device_type, int32_t device_index, AtenTensorHandle* ret);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_create_tensor_from_blob_v2(
    void* data, int64_t ndim, const int64_t* sizes_ptr,
    const int64_t* strides_ptr, int64_t storage_offset, int32_t dtype,
    int32_t device_type, int32_t device_index, AtenTensorHandle* ret,
    int32_t layout, const uint8_t* opaque_metadata,
    int64_t opaque_metadata_size);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch__reinterpret_tensor(
    AtenTensorHandle self, int64_t ndim, const int64_t* sizes_ptr,
    const int64_t* strides_ptr, int64_t storage_offset,
    AtenTensorHandle* ret_new_tensor);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_clone(AtenTensorHandle self, AtenTensorHandle* ret);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_clone_preserve_strides(AtenTensorHandle self, AtenTensorHandle* ret);
// Copies src into self. A CPU destination from a CUDA source goes through the
// copy routine and therefore waits; every other direction is stream-ordered.
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_copy_(AtenTensorHandle self, AtenTensorHandle src, int32_t non_blocking);

// Streams.
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_create_cuda_stream_guard(
    void* stream, int32_t device_index, CUDAStreamGuardHandle* ret_guard);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_delete_cuda_stream_guard(CUDAStreamGuardHandle guard);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index, void** ret_stream);

// Matrix multiplies: the fallbacks generated code calls when it does not
// emit its own GEMM (torch's c_shim_cpu.h / c_shim_cuda.h). Torch semantics:
//   mm:    out[M,N]   = self[M,K] @ mat2[K,N]
//   addmm: out[M,N]   = beta * self + alpha * (mat1 @ mat2); `self` broadcasts
//          to [M,N] and is not read when beta == 0; `out` may be `self`
//   bmm:   out[B,M,N] = self[B,M,K] @ mat2[B,K,N]
// Operands may have any strides and storage offsets. float32, float64,
// float16 and bfloat16. The CUDA versions load cuBLAS on first use.
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_addmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                         AtenTensorHandle mat1, AtenTensorHandle mat2,
                                                         double beta, double alpha);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_addmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                          AtenTensorHandle mat1, AtenTensorHandle mat2,
                                                          double beta, double alpha);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2);
//   baddbmm: out[B,M,N] = beta * self + alpha * (batch1 @ batch2); self broadcasts to [B,M,N]
//   addmv:   ret0[M] = beta * self + alpha * (mat[M,K] @ vec[K]); self broadcasts to [M]
//   _addmm_activation: ret0[M,N] = act(addmm(self, mat1, mat2, beta, alpha)), act relu, or
//          gelu (tanh approximation on CUDA, erf on the CPU, as torch)
//   _int_mm: out[M,N] int32 = self[M,K] int8 @ mat2[K,N] int8 (CUDA: M > 16, K and N
//          multiples of 8, as torch)
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_baddbmm_out(AtenTensorHandle out, AtenTensorHandle self,
    AtenTensorHandle batch1, AtenTensorHandle batch2, double beta, double alpha);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_addmv(AtenTensorHandle self, AtenTensorHandle mat, AtenTensorHandle vec,
    double beta, double alpha, AtenTensorHandle* ret0);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu__addmm_activation(AtenTensorHandle self, AtenTensorHandle mat1,
    AtenTensorHandle mat2, double beta, double alpha, int32_t use_gelu, AtenTensorHandle* ret0);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu__int_mm_out(AtenTensorHandle out, AtenTensorHandle self,
    AtenTensorHandle mat2);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_baddbmm_out(AtenTensorHandle out, AtenTensorHandle self,
    AtenTensorHandle batch1, AtenTensorHandle batch2, double beta, double alpha);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_addmv(AtenTensorHandle self, AtenTensorHandle mat, AtenTensorHandle vec,
    double beta, double alpha, AtenTensorHandle* ret0);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda__addmm_activation(AtenTensorHandle self, AtenTensorHandle mat1,
    AtenTensorHandle mat2, double beta, double alpha, int32_t use_gelu, AtenTensorHandle* ret0);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda__int_mm_out(AtenTensorHandle out, AtenTensorHandle self,
    AtenTensorHandle mat2);

// Diagnostics. aoti_torch_check records the message as the thread's last
// error (the model then fails its run and aotirt reports that message).
AOTI_SHIM_EXPORT void aoti_torch_warn(const char* func, const char* file, uint32_t line, const char* msg);
AOTI_SHIM_EXPORT void aoti_torch_check(bool cond, const char* func, const char* file, uint32_t line, const char* msg);

// Fallback ops (torch's generated c_shim_cuda.h / c_shim_cpu.h, the same in
// torch 2.11 and 2.13). Optional arguments are pointers that may be NULL;
// results come back through ret pointers, which for the attention ops may
// also be NULL (an output the model does not use).
//
// Scaled dot-product attention, inference only (dropout_p must be 0).
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_efficient_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_cudnn_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, int32_t return_debug_mask, double* scale,
    AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4,
    int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7, AtenTensorHandle* ret8);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_flash_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    int32_t return_debug_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7,
    AtenTensorHandle* ret8);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    AtenTensorHandle* attn_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1);

// CUDA convolution (aten.convolution, on cuDNN: 1-, 2-, 3-D, transposed too;
// float32, float16, bfloat16).
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_convolution(
    AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias, const int64_t* stride,
    int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation, int64_t dilation_len_,
    int32_t transposed, const int64_t* output_padding, int64_t output_padding_len_, int64_t groups,
    AtenTensorHandle* ret0);
// CPU convolution (aten.convolution; transposed=false only) and cumsum.
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_convolution(
    AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias, const int64_t* stride,
    int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation, int64_t dilation_len_,
    int32_t transposed, const int64_t* output_padding, int64_t output_padding_len_, int64_t groups,
    AtenTensorHandle* ret0);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_cumsum(AtenTensorHandle self, int64_t dim, int32_t* dtype,
                                                      AtenTensorHandle* ret0);
// CUDA cumsum (one segmented CUB scan, any dim; torch's dtype rules).
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_cumsum(AtenTensorHandle self, int64_t dim, int32_t* dtype,
                                                       AtenTensorHandle* ret0);

// Quantised matmuls. int4 weights in torch's packed layouts (the CUDA
// tensor-core one, the CPU one of torch's CPU capability), bfloat16 on CUDA,
// float32/float16/bfloat16 on the CPU; the CPU one takes the group size as an
// int64 tensor (torch's shim_cpu.h).
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda__weight_int4pack_mm(AtenTensorHandle self, AtenTensorHandle mat2,
                                                                    int64_t qGroupSize, AtenTensorHandle qScaleAndZeros,
                                                                    AtenTensorHandle* ret0);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu__weight_int4pack_mm_cpu_tensor(AtenTensorHandle X, AtenTensorHandle w,
                                                                              AtenTensorHandle qGroupSize,
                                                                              AtenTensorHandle qScaleAndZeros,
                                                                              AtenTensorHandle* ret0);
// float8 GEMMs with per-tensor scales (CUDA: cuBLASLt, sm_89+; CPU: a loop,
// non-float8 results).
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu__scaled_mm(AtenTensorHandle self, AtenTensorHandle mat2,
                                                          AtenTensorHandle scale_a, AtenTensorHandle scale_b,
                                                          AtenTensorHandle* bias, AtenTensorHandle* scale_result,
                                                          int32_t* out_dtype, int32_t use_fast_accum,
                                                          AtenTensorHandle* ret0);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu__scaled_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                              AtenTensorHandle mat2, AtenTensorHandle scale_a,
                                                              AtenTensorHandle scale_b, AtenTensorHandle* bias,
                                                              AtenTensorHandle* scale_result, int32_t* out_dtype,
                                                              int32_t use_fast_accum);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_mm(AtenTensorHandle self, AtenTensorHandle mat2,
                                                           AtenTensorHandle scale_a, AtenTensorHandle scale_b,
                                                           AtenTensorHandle* bias, AtenTensorHandle* scale_result,
                                                           int32_t* out_dtype, int32_t use_fast_accum,
                                                           AtenTensorHandle* ret0);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                               AtenTensorHandle mat2, AtenTensorHandle scale_a,
                                                               AtenTensorHandle scale_b, AtenTensorHandle* bias,
                                                               AtenTensorHandle* scale_result, int32_t* out_dtype,
                                                               int32_t use_fast_accum);

// Sorting (aten.sort, aten.sort.stable, aten.topk): values and int64
// indices, torch's order (NaN largest), always stable; CPU and CUDA.
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_sort(AtenTensorHandle self, int64_t dim, int32_t descending,
                                                    AtenTensorHandle* ret0, AtenTensorHandle* ret1);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_sort_stable(AtenTensorHandle self, int32_t* stable, int64_t dim,
                                                           int32_t descending, AtenTensorHandle* ret0,
                                                           AtenTensorHandle* ret1);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_topk(AtenTensorHandle self, int64_t k, int64_t dim, int32_t largest,
                                                    int32_t sorted, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_sort(AtenTensorHandle self, int64_t dim, int32_t descending,
                                                     AtenTensorHandle* ret0, AtenTensorHandle* ret1);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_sort_stable(AtenTensorHandle self, int32_t* stable, int64_t dim,
                                                            int32_t descending, AtenTensorHandle* ret0,
                                                            AtenTensorHandle* ret1);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_topk(AtenTensorHandle self, int64_t k, int64_t dim, int32_t largest,
                                                     int32_t sorted, AtenTensorHandle* ret0, AtenTensorHandle* ret1);

// Control flow (what Inductor's torch.cond / while_loop code calls).
// item_bool reads a one-element tensor of any dtype as a bool (non-zero is
// true). For a CUDA tensor that is a host read, a wait: it goes through the
// copy routine, and is refused while a CUDA graph is being captured.
// assign_tensors_out makes a second handle to src's tensor (an alias).
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_item_bool(AtenTensorHandle tensor, bool* ret_value);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_assign_tensors_out(AtenTensorHandle src, AtenTensorHandle* ret_dst);

// Scatter and index_put (aten.scatter / scatter_reduce.two / index_put_,
// torch semantics; cuda_src/shims/indexing/indexing.h says what each does).
// out has self's shape and dtype and first receives a copy of self (unless it
// is self). reduce: "sum", "prod", "mean", "amax", "amin". index: int64 or
// int32; index_put's indices may be NULL (a full slice) and, on the CPU
// only, bool masks. Out-of-range indices: an error on the CPU; skipped on
// CUDA (torch device-asserts there). dtypes: uint8, int8, int16, int32,
// int64, float16, bfloat16, float32, float64, bool.
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_scatter_out(AtenTensorHandle out, AtenTensorHandle self, int64_t dim,
                                                       AtenTensorHandle index, AtenTensorHandle src);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_scatter_reduce_out(AtenTensorHandle out, AtenTensorHandle self,
                                                              int64_t dim, AtenTensorHandle index,
                                                              AtenTensorHandle src, const char* reduce,
                                                              int32_t include_self);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_index_put_out(AtenTensorHandle out, AtenTensorHandle self,
                                                         const AtenTensorHandle* indices, const uint32_t num_indices,
                                                         const AtenTensorHandle values, bool accumulate);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_scatter_src_out(AtenTensorHandle out, AtenTensorHandle self,
                                                               int64_t dim, AtenTensorHandle index,
                                                               AtenTensorHandle src);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_scatter_value_out(AtenTensorHandle out, AtenTensorHandle self,
                                                                 int64_t dim, AtenTensorHandle index, double value);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_scatter_reduce_two_out(AtenTensorHandle out, AtenTensorHandle self,
                                                                      int64_t dim, AtenTensorHandle index,
                                                                      AtenTensorHandle src, const char* reduce,
                                                                      int32_t include_self);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_index_put(AtenTensorHandle self, const AtenTensorHandle** indices,
                                                         int64_t indices_len_, AtenTensorHandle values,
                                                         int32_t accumulate, AtenTensorHandle* ret0);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_scatter_src_out(AtenTensorHandle out, AtenTensorHandle self,
                                                                int64_t dim, AtenTensorHandle index,
                                                                AtenTensorHandle src);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_scatter_value_out(AtenTensorHandle out, AtenTensorHandle self,
                                                                  int64_t dim, AtenTensorHandle index, double value);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_scatter_reduce_two_out(AtenTensorHandle out, AtenTensorHandle self,
                                                                       int64_t dim, AtenTensorHandle index,
                                                                       AtenTensorHandle src, const char* reduce,
                                                                       int32_t include_self);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_index_put(AtenTensorHandle self, const AtenTensorHandle** indices,
                                                          int64_t indices_len_, AtenTensorHandle values,
                                                          int32_t accumulate, AtenTensorHandle* ret0);

// Random numbers (aten.rand, randn, randint, randint.low, randint.low_out):
// Philox4x32-10 from the thread's current generator (a handle's during its
// runs, seeded by aotirt_handle_set_seed / AOTIRT_SEED), rand uniform in
// [0, 1) and randn standard normal for floating dtypes (default float32),
// randint integers in [low, high) (default int64). Reproducible per seed,
// the same values on the CPU and CUDA (normal values to a few ulp), not
// torch's values. On CUDA the generator's counter lives in device memory, so
// each replay of a CUDA graph draws new numbers. layout must be NULL or
// strided; pin_memory is ignored; randint_low_out's out must have `size`.
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_rand(const int64_t* size, int64_t size_len_, int32_t* dtype, int32_t* layout,
    int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_randn(const int64_t* size, int64_t size_len_, int32_t* dtype, int32_t* layout,
    int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_randint(int64_t high, const int64_t* size, int64_t size_len_, int32_t* dtype,
    int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_randint_low(int64_t low, int64_t high, const int64_t* size, int64_t size_len_,
    int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_randint_low_out(AtenTensorHandle out, int64_t low, int64_t high,
    const int64_t* size, int64_t size_len_);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_rand(const int64_t* size, int64_t size_len_, int32_t* dtype, int32_t* layout,
    int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randn(const int64_t* size, int64_t size_len_, int32_t* dtype, int32_t* layout,
    int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randint(int64_t high, const int64_t* size, int64_t size_len_, int32_t* dtype,
    int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randint_low(int64_t low, int64_t high, const int64_t* size, int64_t size_len_,
    int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randint_low_out(AtenTensorHandle out, int64_t low, int64_t high,
    const int64_t* size, int64_t size_len_);

#ifdef __cplusplus
}  // extern "C"
#endif
