// The aoti_torch_* functions libaotirt.so implements: one line each,
//
//   AOTIRT_SHIM(name, family, devices)
//
// `family` names where the implementation lives under cuda_src/shims/
// ("tensor": tensor_attributes.cpp, "memory": memory.cpp, "stream":
// streams.cpp, "diagnostics": diagnostics.cpp; "matmul", "attention",
// "convolution", "scan", "sort", "control", "indexing", "random": the folder of that
// name); `devices`: "cpu", "cuda" or "any" (the device of the tensors it
// takes).
//
// The one list of the shims: the load-time check of a model library
// (runtime/handle.cpp) names the aoti_torch_* functions it needs that are not
// here; the C API (aotirt_shim_count, aotirt_shim_at) hands it to the tests,
// which check it against what libaotirt.so exports; scripts/shim-table.py
// prints the README's list from it. A new shim is its line here and its
// implementation (declared in shim.h with torch's signature).
//
// An X-macro list: define AOTIRT_SHIM(name, family, devices), then include
// this file (which has no include guard, and undefines AOTIRT_SHIM at its end).

#ifndef AOTIRT_SHIM
#error "define AOTIRT_SHIM(name, family, devices) before including aotirt/shim_table.h"
#endif

AOTIRT_SHIM(aoti_torch_device_type_cpu,                                 "tensor",       "any")
AOTIRT_SHIM(aoti_torch_device_type_cuda,                                "tensor",       "any")
AOTIRT_SHIM(aoti_torch_dtype_float8_e5m2,                               "tensor",       "any")
AOTIRT_SHIM(aoti_torch_dtype_float8_e4m3fn,                             "tensor",       "any")
AOTIRT_SHIM(aoti_torch_dtype_bfloat16,                                  "tensor",       "any")
AOTIRT_SHIM(aoti_torch_dtype_float16,                                   "tensor",       "any")
AOTIRT_SHIM(aoti_torch_dtype_float32,                                   "tensor",       "any")
AOTIRT_SHIM(aoti_torch_dtype_float64,                                   "tensor",       "any")
AOTIRT_SHIM(aoti_torch_dtype_uint8,                                     "tensor",       "any")
AOTIRT_SHIM(aoti_torch_dtype_int8,                                      "tensor",       "any")
AOTIRT_SHIM(aoti_torch_dtype_int16,                                     "tensor",       "any")
AOTIRT_SHIM(aoti_torch_dtype_int32,                                     "tensor",       "any")
AOTIRT_SHIM(aoti_torch_dtype_int64,                                     "tensor",       "any")
AOTIRT_SHIM(aoti_torch_dtype_bool,                                      "tensor",       "any")
AOTIRT_SHIM(aoti_torch_dtype_element_size,                              "tensor",       "any")
AOTIRT_SHIM(aoti_torch_layout_strided,                                  "tensor",       "any")
AOTIRT_SHIM(aoti_torch_memory_format_contiguous_format,                 "tensor",       "any")
AOTIRT_SHIM(aoti_torch_get_data_ptr,                                    "tensor",       "any")
AOTIRT_SHIM(aoti_torch_get_storage_size,                                "tensor",       "any")
AOTIRT_SHIM(aoti_torch_get_dim,                                         "tensor",       "any")
AOTIRT_SHIM(aoti_torch_get_numel,                                       "tensor",       "any")
AOTIRT_SHIM(aoti_torch_get_sizes,                                       "tensor",       "any")
AOTIRT_SHIM(aoti_torch_get_size,                                        "tensor",       "any")
AOTIRT_SHIM(aoti_torch_get_strides,                                     "tensor",       "any")
AOTIRT_SHIM(aoti_torch_get_stride,                                      "tensor",       "any")
AOTIRT_SHIM(aoti_torch_get_dtype,                                       "tensor",       "any")
AOTIRT_SHIM(aoti_torch_get_device_type,                                 "tensor",       "any")
AOTIRT_SHIM(aoti_torch_get_device_index,                                "tensor",       "any")
AOTIRT_SHIM(aoti_torch_get_storage_offset,                              "tensor",       "any")
AOTIRT_SHIM(aoti_torch_is_contiguous,                                   "tensor",       "any")
AOTIRT_SHIM(aoti_torch_delete_tensor_object,                            "memory",       "any")
AOTIRT_SHIM(aoti_torch_new_tensor_handle,                               "memory",       "any")
AOTIRT_SHIM(aoti_torch_empty_strided,                                   "memory",       "any")
AOTIRT_SHIM(aoti_torch_create_tensor_from_blob,                         "memory",       "any")
AOTIRT_SHIM(aoti_torch_create_tensor_from_blob_v2,                      "memory",       "any")
AOTIRT_SHIM(aoti_torch__reinterpret_tensor,                             "memory",       "any")
AOTIRT_SHIM(aoti_torch_clone,                                           "memory",       "any")
AOTIRT_SHIM(aoti_torch_clone_preserve_strides,                          "memory",       "any")
AOTIRT_SHIM(aoti_torch_copy_,                                           "memory",       "any")
AOTIRT_SHIM(aoti_torch_create_cuda_stream_guard,                        "stream",       "cuda")
AOTIRT_SHIM(aoti_torch_delete_cuda_stream_guard,                        "stream",       "cuda")
AOTIRT_SHIM(aoti_torch_get_current_cuda_stream,                         "stream",       "cuda")
AOTIRT_SHIM(aoti_torch_grad_mode_is_enabled,                            "diagnostics",  "any")
AOTIRT_SHIM(aoti_torch_grad_mode_set_enabled,                           "diagnostics",  "any")
AOTIRT_SHIM(aoti_torch_warn,                                            "diagnostics",  "any")
AOTIRT_SHIM(aoti_torch_check,                                           "diagnostics",  "any")
AOTIRT_SHIM(aoti_torch_cpu_mm_out,                                      "matmul",       "cpu")
AOTIRT_SHIM(aoti_torch_cpu_addmm_out,                                   "matmul",       "cpu")
AOTIRT_SHIM(aoti_torch_cpu_bmm_out,                                     "matmul",       "cpu")
AOTIRT_SHIM(aoti_torch_cpu_baddbmm_out,                                 "matmul",       "cpu")
AOTIRT_SHIM(aoti_torch_cpu_addmv,                                       "matmul",       "cpu")
AOTIRT_SHIM(aoti_torch_cpu__addmm_activation,                           "matmul",       "cpu")
AOTIRT_SHIM(aoti_torch_cpu__int_mm_out,                                 "matmul",       "cpu")
AOTIRT_SHIM(aoti_torch_cpu__weight_int4pack_mm_cpu_tensor,              "matmul",       "cpu")
AOTIRT_SHIM(aoti_torch_cpu__scaled_mm,                                  "matmul",       "cpu")
AOTIRT_SHIM(aoti_torch_cpu__scaled_mm_out,                              "matmul",       "cpu")
AOTIRT_SHIM(aoti_torch_cuda_mm_out,                                     "matmul",       "cuda")
AOTIRT_SHIM(aoti_torch_cuda_addmm_out,                                  "matmul",       "cuda")
AOTIRT_SHIM(aoti_torch_cuda_bmm_out,                                    "matmul",       "cuda")
AOTIRT_SHIM(aoti_torch_cuda_baddbmm_out,                                "matmul",       "cuda")
AOTIRT_SHIM(aoti_torch_cuda_addmv,                                      "matmul",       "cuda")
AOTIRT_SHIM(aoti_torch_cuda__addmm_activation,                          "matmul",       "cuda")
AOTIRT_SHIM(aoti_torch_cuda__int_mm_out,                                "matmul",       "cuda")
AOTIRT_SHIM(aoti_torch_cuda__weight_int4pack_mm,                        "matmul",       "cuda")
AOTIRT_SHIM(aoti_torch_cuda__scaled_mm,                                 "matmul",       "cuda")
AOTIRT_SHIM(aoti_torch_cuda__scaled_mm_out,                             "matmul",       "cuda")
AOTIRT_SHIM(aoti_torch_cuda__scaled_dot_product_efficient_attention,    "attention",    "cuda")
AOTIRT_SHIM(aoti_torch_cuda__scaled_dot_product_cudnn_attention,        "attention",    "cuda")
AOTIRT_SHIM(aoti_torch_cuda__scaled_dot_product_flash_attention,        "attention",    "cuda")
AOTIRT_SHIM(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu, "attention",    "cpu")
AOTIRT_SHIM(aoti_torch_cpu_convolution,                                 "convolution",  "cpu")
AOTIRT_SHIM(aoti_torch_cuda_convolution,                                "convolution",  "cuda")
AOTIRT_SHIM(aoti_torch_cpu_cumsum,                                      "scan",         "cpu")
AOTIRT_SHIM(aoti_torch_cuda_cumsum,                                     "scan",         "cuda")
AOTIRT_SHIM(aoti_torch_cpu_sort,                                         "sort",         "cpu")
AOTIRT_SHIM(aoti_torch_cpu_sort_stable,                                  "sort",         "cpu")
AOTIRT_SHIM(aoti_torch_cpu_topk,                                         "sort",         "cpu")
AOTIRT_SHIM(aoti_torch_cuda_sort,                                        "sort",         "cuda")
AOTIRT_SHIM(aoti_torch_cuda_sort_stable,                                 "sort",         "cuda")
AOTIRT_SHIM(aoti_torch_cuda_topk,                                        "sort",         "cuda")
AOTIRT_SHIM(aoti_torch_item_bool,                                       "control",      "any")
AOTIRT_SHIM(aoti_torch_assign_tensors_out,                              "control",      "any")
AOTIRT_SHIM(aoti_torch_scatter_out,                                     "indexing",     "any")
AOTIRT_SHIM(aoti_torch_scatter_reduce_out,                              "indexing",     "any")
AOTIRT_SHIM(aoti_torch_index_put_out,                                   "indexing",     "any")
AOTIRT_SHIM(aoti_torch_cpu_scatter_src_out,                             "indexing",     "cpu")
AOTIRT_SHIM(aoti_torch_cpu_scatter_value_out,                           "indexing",     "cpu")
AOTIRT_SHIM(aoti_torch_cpu_scatter_reduce_two_out,                      "indexing",     "cpu")
AOTIRT_SHIM(aoti_torch_cpu_index_put,                                   "indexing",     "cpu")
AOTIRT_SHIM(aoti_torch_cuda_scatter_src_out,                            "indexing",     "cuda")
AOTIRT_SHIM(aoti_torch_cuda_scatter_value_out,                          "indexing",     "cuda")
AOTIRT_SHIM(aoti_torch_cuda_scatter_reduce_two_out,                     "indexing",     "cuda")
AOTIRT_SHIM(aoti_torch_cuda_index_put,                                  "indexing",     "cuda")
AOTIRT_SHIM(aoti_torch_cpu_rand,                                        "random",       "cpu")
AOTIRT_SHIM(aoti_torch_cpu_randn,                                       "random",       "cpu")
AOTIRT_SHIM(aoti_torch_cpu_randint,                                     "random",       "cpu")
AOTIRT_SHIM(aoti_torch_cpu_randint_low,                                 "random",       "cpu")
AOTIRT_SHIM(aoti_torch_cpu_randint_low_out,                             "random",       "cpu")
AOTIRT_SHIM(aoti_torch_cuda_rand,                                       "random",       "cuda")
AOTIRT_SHIM(aoti_torch_cuda_randn,                                      "random",       "cuda")
AOTIRT_SHIM(aoti_torch_cuda_randint,                                    "random",       "cuda")
AOTIRT_SHIM(aoti_torch_cuda_randint_low,                                "random",       "cuda")
AOTIRT_SHIM(aoti_torch_cuda_randint_low_out,                            "random",       "cuda")

#undef AOTIRT_SHIM
