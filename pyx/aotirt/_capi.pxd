# Declarations of libaotirt's public C API (include/aotirt/aotirt.h).
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

cdef extern from "aotirt/dlpack.h" nogil:
    enum:
        DLPACK_MAJOR_VERSION
        kDLCPU
        kDLCUDA
        kDLCUDAHost
        kDLCUDAManaged

    ctypedef struct DLPackVersion:
        uint32_t major
        uint32_t minor

    ctypedef struct DLManagedTensor:
        void (*deleter)(DLManagedTensor* self) noexcept nogil

    ctypedef struct DLManagedTensorVersioned:
        DLPackVersion version
        void (*deleter)(DLManagedTensorVersioned* self) noexcept nogil
        uint64_t flags

cdef extern from "aotirt/aotirt.h" nogil:
    ctypedef enum aotirt_status:
        AOTIRT_OK
        AOTIRT_ERROR_CUDA
        AOTIRT_ERROR_AOTI
        AOTIRT_ERROR_VALUE
        AOTIRT_ERROR_TYPE
        AOTIRT_ERROR_CLOSED
        AOTIRT_ERROR_MEMORY

    enum:
        AOTIRT_DEVICE_CPU
        AOTIRT_DEVICE_CUDA
        AOTIRT_MAX_DIMS

    ctypedef struct aotirt_tensor:
        pass
    ctypedef struct aotirt_stream:
        pass
    ctypedef struct aotirt_handle:
        pass
    ctypedef struct aotirt_graph:
        pass

    const char* aotirt_last_error_message()
    int aotirt_last_error_cuda_code()
    const char* aotirt_last_error_cuda_name()

    # The aotirt_dtype enum: torch's c10 ScalarType codes.
    enum:
        AOTIRT_DTYPE_UINT8
        AOTIRT_DTYPE_INT8
        AOTIRT_DTYPE_INT16
        AOTIRT_DTYPE_INT32
        AOTIRT_DTYPE_INT64
        AOTIRT_DTYPE_FLOAT16
        AOTIRT_DTYPE_FLOAT32
        AOTIRT_DTYPE_FLOAT64
        AOTIRT_DTYPE_BOOL
        AOTIRT_DTYPE_BFLOAT16
        AOTIRT_DTYPE_FLOAT8_E5M2
        AOTIRT_DTYPE_FLOAT8_E4M3FN

    # The aotirt_dtype_kind enum: what aotirt_dtype_kind() returns.
    enum:
        AOTIRT_DTYPE_KIND_NONE
        AOTIRT_DTYPE_KIND_BOOL
        AOTIRT_DTYPE_KIND_SIGNED
        AOTIRT_DTYPE_KIND_UNSIGNED
        AOTIRT_DTYPE_KIND_FLOATING

    int aotirt_device_count()
    aotirt_status aotirt_cuda_device_count(int* count)
    int aotirt_has_fused_attention()
    # 0, NULL and AOTIRT_DTYPE_KIND_NONE for a code the core does not support.
    size_t aotirt_dtype_itemsize(int32_t dtype)
    const char* aotirt_dtype_name(int32_t dtype)
    int aotirt_dtype_kind(int32_t dtype)

    aotirt_status aotirt_stream_shared(int device, aotirt_stream** out)
    aotirt_status aotirt_stream_create(int device, aotirt_stream** out)
    aotirt_status aotirt_stream_adopt(void* cuda_stream, int device, aotirt_stream** out)
    aotirt_status aotirt_stream_adopt_owned(void* cuda_stream, int device, void (*release)(void*) noexcept nogil,
                                            void* release_ctx, aotirt_stream** out)
    aotirt_stream* aotirt_stream_retain(aotirt_stream* stream)
    void aotirt_stream_release(aotirt_stream* stream)
    void* aotirt_stream_handle(const aotirt_stream* stream)
    int aotirt_stream_device(const aotirt_stream* stream)

    aotirt_status aotirt_tensor_empty(int64_t ndim, const int64_t* sizes, int32_t dtype,
                                      int32_t device_type, int32_t device_index,
                                      aotirt_stream* stream, aotirt_tensor** out)
    aotirt_status aotirt_tensor_wrap_host(void* data, int64_t ndim, const int64_t* sizes,
                                          const int64_t* strides, int32_t dtype,
                                          void (*release)(void*) noexcept nogil, void* release_ctx,
                                          aotirt_tensor** out)
    void aotirt_tensor_mark_read_only(aotirt_tensor* t)
    bint aotirt_tensor_is_read_only(const aotirt_tensor* t)
    aotirt_status aotirt_tensor_upload(const void* host_data, int64_t ndim, const int64_t* sizes,
                                       int32_t dtype, int32_t device_index, aotirt_stream* stream,
                                       aotirt_tensor** out)
    void aotirt_tensor_free(aotirt_tensor* t)
    int64_t aotirt_tensor_ndim(const aotirt_tensor* t)
    const int64_t* aotirt_tensor_sizes(const aotirt_tensor* t)
    const int64_t* aotirt_tensor_strides(const aotirt_tensor* t)
    int64_t aotirt_tensor_numel(const aotirt_tensor* t)
    int32_t aotirt_tensor_dtype(const aotirt_tensor* t)
    int32_t aotirt_tensor_device_type(const aotirt_tensor* t)
    int32_t aotirt_tensor_device_index(const aotirt_tensor* t)
    void* aotirt_tensor_data(const aotirt_tensor* t)
    bint aotirt_tensor_is_contiguous(const aotirt_tensor* t)
    aotirt_stream* aotirt_tensor_stream(const aotirt_tensor* t)

    aotirt_status aotirt_tensor_narrow(const aotirt_tensor* t, int64_t dim, int64_t start, int64_t length,
                                       aotirt_tensor** out)
    aotirt_status aotirt_tensor_alias(const aotirt_tensor* t, aotirt_tensor** out)
    aotirt_status aotirt_tensor_copy(aotirt_tensor* dst, const aotirt_tensor* src)
    aotirt_status aotirt_tensor_to(const aotirt_tensor* t, int32_t device_type, int32_t device_index,
                                   aotirt_stream* stream, aotirt_tensor** out)
    int aotirt_peer_access_enabled(int consumer, int producer)
    aotirt_status aotirt_pointer_device(const void* ptr, int32_t* device_index)
    aotirt_status aotirt_tensor_wrap_device(void* data, int64_t ndim, const int64_t* sizes,
                                            const int64_t* strides, int32_t dtype, int32_t device_index,
                                            void* producer_stream, aotirt_stream* stream,
                                            void (*release)(void*) noexcept nogil, void* release_ctx,
                                            aotirt_tensor** out)
    aotirt_status aotirt_tensor_from_dlpack(DLManagedTensor* managed, aotirt_stream* stream,
                                            aotirt_tensor** out)
    aotirt_status aotirt_tensor_from_dlpack_versioned(DLManagedTensorVersioned* managed,
                                                      aotirt_stream* stream, aotirt_tensor** out)
    aotirt_status aotirt_tensor_to_dlpack(const aotirt_tensor* t, DLManagedTensor** out)
    aotirt_status aotirt_tensor_to_dlpack_versioned(const aotirt_tensor* t, DLManagedTensorVersioned** out)
    aotirt_status aotirt_tensor_order_before(const aotirt_tensor* t, void* consumer_stream)
    aotirt_status aotirt_host_alloc_pinned(size_t nbytes, void** out)
    void aotirt_host_free_pinned(void* ptr)

    aotirt_status aotirt_copy_to_host(const aotirt_tensor* t, void* dst, size_t dst_nbytes)

    aotirt_status aotirt_library_undefined_symbols(const char* path, const char* prefix, const char** names)
    size_t aotirt_shim_count()
    aotirt_status aotirt_shim_at(size_t i, const char** name, const char** family, const char** devices)
    aotirt_status aotirt_set_wheel_dirs(const char* colon_separated_paths)
    aotirt_status aotirt_load_optional_library(const char* name, const char** path_out)
    aotirt_status aotirt_set_cudnn_allow_tf32(int allow)
    aotirt_status aotirt_handle_open(const char* path, int32_t device_type, int32_t device_index,
                                     aotirt_stream* stream, aotirt_handle** out)
    size_t aotirt_handle_num_inputs(const aotirt_handle* h)
    size_t aotirt_handle_num_outputs(const aotirt_handle* h)
    const char* aotirt_handle_input_name(const aotirt_handle* h, size_t i)
    const char* aotirt_handle_output_name(const aotirt_handle* h, size_t i)
    bint aotirt_handle_is_closed(const aotirt_handle* h)
    int32_t aotirt_handle_device_type(const aotirt_handle* h)
    int32_t aotirt_handle_device_index(const aotirt_handle* h)
    aotirt_stream* aotirt_handle_stream(const aotirt_handle* h)
    aotirt_status aotirt_handle_run(aotirt_handle* h, aotirt_tensor* const* inputs, size_t num_inputs,
                                    aotirt_tensor** outputs, size_t num_outputs)
    aotirt_status aotirt_handle_update_constants_from_blob(aotirt_handle* h, const uint8_t* blob)
    aotirt_status aotirt_handle_update_constants_from_blob_sized(aotirt_handle* h, const uint8_t* blob, size_t nbytes)
    aotirt_status aotirt_handle_constants_blob_size(const aotirt_handle* h, uint64_t* nbytes, bint* exact)
    ctypedef struct aotirt_constant_info:
        const char* name
        const char* fqn
        int32_t dtype
        int32_t kind
        uint64_t nbytes
        bint from_folded
        int64_t ndim
        const int64_t* sizes
        bint aotirt_owned
    size_t aotirt_handle_num_constants(const aotirt_handle* h)
    aotirt_status aotirt_handle_constant_info(const aotirt_handle* h, size_t i, aotirt_constant_info* out)
    aotirt_status aotirt_handle_update_constants(aotirt_handle* h, const char* const* keys,
                                                 aotirt_tensor* const* values, const int* share, size_t n,
                                                 int inactive)
    aotirt_status aotirt_handle_swap_constants(aotirt_handle* h)
    aotirt_status aotirt_handle_constant_value(aotirt_handle* h, size_t i, aotirt_tensor** out)
    aotirt_status aotirt_handle_close(aotirt_handle* h)
    void aotirt_handle_free(aotirt_handle* h)
    aotirt_status aotirt_handle_set_seed(aotirt_handle* h, uint64_t seed)
    aotirt_status aotirt_handle_seed(aotirt_handle* h, uint64_t* seed)
    aotirt_status aotirt_set_default_seed(uint64_t seed)

    ctypedef struct aotirt_graph_stats:
        int enabled
        size_t graphs
        uint64_t hits
        uint64_t captures
        uint64_t evictions
        uint64_t invalidations
        uint64_t eager_runs
        uint64_t memory_bytes
        uint64_t output_copies
        size_t instances
    aotirt_status aotirt_handle_enable_graphs(aotirt_handle* h, size_t max_graphs, int static_outputs)
    aotirt_status aotirt_handle_graph_stats(aotirt_handle* h, aotirt_graph_stats* out)
    const char* aotirt_handle_graphs_disabled_reason(aotirt_handle* h)
    int aotirt_handle_take_graph_warning(aotirt_handle* h, const char** reason)
    aotirt_status aotirt_handle_loop(aotirt_handle* h, aotirt_tensor* const* inputs, size_t n_in, size_t steps,
                                     const size_t* feedback_pairs, size_t n_feedback, const size_t* collect,
                                     size_t n_collect, aotirt_tensor** collected, aotirt_tensor** outputs,
                                     size_t n_out)

    aotirt_status aotirt_graph_capture_feedback(aotirt_handle* h, aotirt_tensor* const* example_inputs, size_t n,
                                                int warmup, const size_t* feedback, size_t num_feedback,
                                                aotirt_graph** out)
    aotirt_status aotirt_graph_replay(aotirt_graph* g, aotirt_tensor* const* inputs, size_t n,
                                      aotirt_tensor** outputs)
    size_t aotirt_graph_num_inputs(const aotirt_graph* g)
    size_t aotirt_graph_num_outputs(const aotirt_graph* g)
    aotirt_tensor* aotirt_graph_input(const aotirt_graph* g, size_t i)
    aotirt_tensor* aotirt_graph_output(const aotirt_graph* g, size_t i)
    bint aotirt_graph_is_closed(const aotirt_graph* g)
    aotirt_status aotirt_graph_close(aotirt_graph* g)
    void aotirt_graph_free(aotirt_graph* g)
