// The public C API of libaotirt.so: tensors, streams, handles and the copy
// routine (CUDA graphs and loops: aotirt/graphs.h, included at the end). Python (pyx/aotirt) and the C benchmark harness (bench/) both call
// exactly these functions, so a figure measured in C is the floor of the same
// operation in Python.
//
// Conventions:
// - Every function that can fail returns an aotirt_status. On failure the
//   thread's last error (aotirt_last_error_*) says what failed and why.
// - An aotirt_tensor* is an AtenTensorHandle: one owner, deleted with
//   aotirt_tensor_free. Its storage is reference counted and shared by aliases.
// - Sizes and strides are in elements (torch's convention).
// - The host waits for the GPU only inside aotirt_copy_to_host.
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aotirt/aoti_abi.h"
#include "aotirt/dlpack.h"

#if defined(AOTIRT_BUILDING_CORE)
#define AOTIRT_API __attribute__((visibility("default")))
#else
#define AOTIRT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum aotirt_status {
  AOTIRT_OK = 0,
  AOTIRT_ERROR_CUDA = 1,       // a CUDA call failed: aotirt_last_error_cuda_code
  AOTIRT_ERROR_AOTI = 2,       // loading a model library or running it failed
  AOTIRT_ERROR_VALUE = 3,      // a wrong value: shape, count, device, index
  AOTIRT_ERROR_TYPE = 4,       // a wrong kind of thing: dtype
  AOTIRT_ERROR_CLOSED = 5,     // the handle was closed
  AOTIRT_ERROR_MEMORY = 6,     // host memory could not be allocated
} aotirt_status;

enum { AOTIRT_DEVICE_CPU = 0, AOTIRT_DEVICE_CUDA = 1 };
enum { AOTIRT_MAX_DIMS = 16 };

typedef struct AtenTensorOpaque aotirt_tensor;
typedef struct aotirt_stream aotirt_stream;
typedef struct aotirt_handle aotirt_handle;
typedef struct aotirt_graph aotirt_graph;

// ---- errors (thread-local) -------------------------------------------------
AOTIRT_API const char* aotirt_last_error_message(void);
// The cudaError_t of the last AOTIRT_ERROR_CUDA, and its name
// ("cudaErrorNoDevice"), or 0 and "" when the last error was not CUDA's.
AOTIRT_API int aotirt_last_error_cuda_code(void);
AOTIRT_API const char* aotirt_last_error_cuda_name(void);

// ---- devices ---------------------------------------------------------------
// Number of usable CUDA devices; 0 (not an error) when there is no driver.
AOTIRT_API int aotirt_device_count(void);
// The same, and why there is none: AOTIRT_OK with the count, or
// AOTIRT_ERROR_CUDA (count 0) whose message says why CUDA sees no device
// ("no NVIDIA driver found: libcuda.so.1 cannot be loaded", cudaErrorNoDevice...).
AOTIRT_API aotirt_status aotirt_cuda_device_count(int* count);
// 1 when this build has CUTLASS's fused attention kernel, which float32
// attention runs on (sm_80 and newer, unless AOTIRT_ATTENTION_FUSED=0); 0
// when it was built without the CUTLASS headers (float32 attention on cuBLAS).
AOTIRT_API int aotirt_has_fused_attention(void);

// ---- dtypes ----------------------------------------------------------------
// c10's ScalarType codes, torch's numbering: the int32_t dtype of every
// function here and of the aoti_torch_* shims. aotirt has tensors of every
// dtype below but the float8 ones, whose codes aoti_torch_dtype_float8_*
// return (aotirt_dtype_itemsize is 0 for them).
typedef enum aotirt_dtype {
  AOTIRT_DTYPE_UINT8 = 0,
  AOTIRT_DTYPE_INT8 = 1,
  AOTIRT_DTYPE_INT16 = 2,
  AOTIRT_DTYPE_INT32 = 3,
  AOTIRT_DTYPE_INT64 = 4,
  AOTIRT_DTYPE_FLOAT16 = 5,
  AOTIRT_DTYPE_FLOAT32 = 6,
  AOTIRT_DTYPE_FLOAT64 = 7,
  AOTIRT_DTYPE_BOOL = 11,
  AOTIRT_DTYPE_BFLOAT16 = 15,
  AOTIRT_DTYPE_FLOAT8_E5M2 = 23,
  AOTIRT_DTYPE_FLOAT8_E4M3FN = 24,
} aotirt_dtype;

// What the elements of a dtype are (aotirt_dtype_kind).
enum {
  AOTIRT_DTYPE_KIND_NONE = 0,      // not a dtype aotirt has tensors of
  AOTIRT_DTYPE_KIND_BOOL = 1,
  AOTIRT_DTYPE_KIND_SIGNED = 2,    // int8 ... int64
  AOTIRT_DTYPE_KIND_UNSIGNED = 3,  // uint8
  AOTIRT_DTYPE_KIND_FLOATING = 4,  // float16, bfloat16, float32, float64
};

// The dtypes aotirt has tensors of, from one table: aotirt_dtype_code(i) for
// i < aotirt_dtype_count() lists their codes in increasing order (-1 past the
// end); for any code, its bytes per element (0 when aotirt has no such
// tensors), its name as numpy spells it ("float32", "bool"; "bfloat16") or
// NULL, and its kind (AOTIRT_DTYPE_KIND_NONE when aotirt has no such tensors).
AOTIRT_API size_t aotirt_dtype_count(void);
AOTIRT_API int32_t aotirt_dtype_code(size_t i);
AOTIRT_API size_t aotirt_dtype_itemsize(int32_t dtype);
AOTIRT_API const char* aotirt_dtype_name(int32_t dtype);
AOTIRT_API int aotirt_dtype_kind(int32_t dtype);

// ---- streams ---------------------------------------------------------------
// Each returns a new reference, released with aotirt_stream_release.
// The shared stream of a device: one per device per process, created
// non-blocking on first use and destroyed when its last user is gone.
AOTIRT_API aotirt_status aotirt_stream_shared(int device, aotirt_stream** out);
// A new non-blocking stream owned by the returned reference.
AOTIRT_API aotirt_status aotirt_stream_create(int device, aotirt_stream** out);
// Wraps a stream someone else owns (never destroyed by aotirt). Once a
// handle opens on it, it keeps a cache of device memory, freed onto the
// stream when aotirt's last reference to the stream goes: the stream must
// outlive that reference.
AOTIRT_API aotirt_status aotirt_stream_adopt(void* cuda_stream, int device, aotirt_stream** out);
// The same, for a stream that an object owns: `release(release_ctx)` runs
// when aotirt's last reference to the stream is gone (any thread), so the
// owner can be kept alive until then. Tensors and storages remember the
// streams that used them and record events on them when they are freed:
// their owner must not destroy them before that.
AOTIRT_API aotirt_status aotirt_stream_adopt_owned(void* cuda_stream, int device, void (*release)(void*),
                                                   void* release_ctx, aotirt_stream** out);
AOTIRT_API aotirt_stream* aotirt_stream_retain(aotirt_stream* stream);
AOTIRT_API void aotirt_stream_release(aotirt_stream* stream);
AOTIRT_API void* aotirt_stream_handle(const aotirt_stream* stream);
AOTIRT_API int aotirt_stream_device(const aotirt_stream* stream);

// ---- tensors ---------------------------------------------------------------
// Uninitialised contiguous tensor. A CUDA tensor is allocated stream-ordered
// on `stream` (NULL: the device's shared stream) and belongs to it.
AOTIRT_API aotirt_status aotirt_tensor_empty(
    int64_t ndim, const int64_t* sizes, int32_t dtype, int32_t device_type,
    int32_t device_index, aotirt_stream* stream, aotirt_tensor** out);
// Borrows host memory: `release(release_ctx)` runs when the last alias of the
// storage is gone (from whichever thread drops it).
AOTIRT_API aotirt_status aotirt_tensor_wrap_host(
    void* data, int64_t ndim, const int64_t* sizes, const int64_t* strides,
    int32_t dtype, void (*release)(void*), void* release_ctx,
    aotirt_tensor** out);
// Marks the memory of `t` (its storage, so every alias) read-only, for good:
// copies into it, shims' outputs in it and writes by a model are refused or
// avoided (aotirt_handle_run gives a model a private copy of a read-only
// input), and a DLPack export says read-only (a legacy one is refused).
// Call it right after wrapping memory its owner marks immutable.
AOTIRT_API void aotirt_tensor_mark_read_only(aotirt_tensor* t);
AOTIRT_API bool aotirt_tensor_is_read_only(const aotirt_tensor* t);
// Uploads contiguous host data to a new CUDA tensor with cudaMemcpyAsync on
// `stream` (NULL: the shared stream). No host wait.
AOTIRT_API aotirt_status aotirt_tensor_upload(
    const void* host_data, int64_t ndim, const int64_t* sizes, int32_t dtype,
    int32_t device_index, aotirt_stream* stream, aotirt_tensor** out);
AOTIRT_API void aotirt_tensor_free(aotirt_tensor* t);

AOTIRT_API int64_t aotirt_tensor_ndim(const aotirt_tensor* t);
AOTIRT_API const int64_t* aotirt_tensor_sizes(const aotirt_tensor* t);
AOTIRT_API const int64_t* aotirt_tensor_strides(const aotirt_tensor* t);
AOTIRT_API int64_t aotirt_tensor_numel(const aotirt_tensor* t);
AOTIRT_API int32_t aotirt_tensor_dtype(const aotirt_tensor* t);
AOTIRT_API int32_t aotirt_tensor_device_type(const aotirt_tensor* t);
AOTIRT_API int32_t aotirt_tensor_device_index(const aotirt_tensor* t);
// Address of the first element (storage offset included).
AOTIRT_API void* aotirt_tensor_data(const aotirt_tensor* t);
AOTIRT_API bool aotirt_tensor_is_contiguous(const aotirt_tensor* t);
// The stream the tensor's producing work was queued on (NULL for CPU), as a
// borrowed pointer valid while the tensor lives.
AOTIRT_API aotirt_stream* aotirt_tensor_stream(const aotirt_tensor* t);

// A new tensor viewing elements [start, start + length) of dimension `dim`.
AOTIRT_API aotirt_status aotirt_tensor_narrow(const aotirt_tensor* t, int64_t dim, int64_t start,
                                              int64_t length, aotirt_tensor** out);
// A new tensor handle to the same storage and view as `t` (one more owner of
// the memory), deleted with aotirt_tensor_free.
AOTIRT_API aotirt_status aotirt_tensor_alias(const aotirt_tensor* t, aotirt_tensor** out);
// dst <- src (one dtype and shape, any devices). Device work is queued on
// dst's stream (ordered after src's producer) without a host wait; only a
// CPU destination of a CUDA source waits, through the copy routine.
AOTIRT_API aotirt_status aotirt_tensor_copy(aotirt_tensor* dst, const aotirt_tensor* src);
// `t` on `device_type`/`device_index` (Tensor.to). The same device: an alias,
// no copy. Another GPU: a stream-ordered peer copy (cudaMemcpyPeerAsync) on
// `stream` (NULL: the target's shared stream), after an event from t's
// stream, with no host wait; the copy has t's sizes and strides and holds the
// bytes t's view spans. CPU to GPU: a contiguous upload on `stream`, no wait.
// GPU to CPU: a contiguous host tensor through the copy routine (waits for
// t's stream only). `stream` must be on the target device.
AOTIRT_API aotirt_status aotirt_tensor_to(const aotirt_tensor* t, int32_t device_type, int32_t device_index,
                                          aotirt_stream* stream, aotirt_tensor** out);
// 1 when copies from `producer`'s memory to `consumer` go over direct peer
// access (enabled at the first copy between them, where the hardware allows),
// 0 when they are staged by the driver or no copy has been made yet.
AOTIRT_API int aotirt_peer_access_enabled(int consumer, int producer);
// ---- interop: memory other libraries own, DLPack, pinned host memory ------
// Borrowed memory is never freed by aotirt: `release(release_ctx)` tells its
// owner when aotirt is done with it. For CUDA memory that is once the last
// alias is gone AND the GPU has passed, on every stream that used it, the work
// queued until then (checked without waiting at later aotirt calls), so the
// owner's caching allocator cannot hand the memory to new work too early. It
// runs on whichever thread made that call, possibly without the GIL.

// The device of CUDA memory at `ptr` (cudaPointerGetAttributes): device or
// managed memory. AOTIRT_ERROR_VALUE for host memory, pinned or not.
AOTIRT_API aotirt_status aotirt_pointer_device(const void* ptr, int32_t* device_index);
// Wraps device memory someone else owns as a CUDA tensor on `stream` (NULL:
// the device's shared stream). `strides` in elements (NULL: contiguous), not
// negative. When `producer_stream` is not NULL (a cudaStream_t of the device,
// or cudaStreamLegacy (1) or cudaStreamPerThread (2)), `stream` first waits,
// on the device, for the work queued on it so far (an event, no host wait).
// On failure `release` is not called.
AOTIRT_API aotirt_status aotirt_tensor_wrap_device(
    void* data, int64_t ndim, const int64_t* sizes, const int64_t* strides,
    int32_t dtype, int32_t device_index, void* producer_stream, aotirt_stream* stream,
    void (*release)(void*), void* release_ctx, aotirt_tensor** out);
// Imports a DLPack tensor without a copy. On success aotirt owns `managed`
// and calls its deleter once done with the memory (as above); on failure the
// caller still owns it. A CUDA tensor belongs to `stream` (NULL: the shared
// stream of its device): the producer must have ordered its work before that
// stream (the consumer stream of the DLPack handshake). The versioned form
// takes major version 1 only; its read-only flag marks the tensor read-only
// (aotirt_tensor_mark_read_only).
AOTIRT_API aotirt_status aotirt_tensor_from_dlpack(DLManagedTensor* managed, aotirt_stream* stream,
                                                   aotirt_tensor** out);
AOTIRT_API aotirt_status aotirt_tensor_from_dlpack_versioned(DLManagedTensorVersioned* managed,
                                                             aotirt_stream* stream, aotirt_tensor** out);
// Exports `t` without a copy: the managed tensor holds a reference to its
// storage and stream until its deleter runs (any thread, no GIL needed). A
// read-only tensor gets DLPACK_FLAG_BITMASK_READ_ONLY; the legacy form,
// which cannot say so, refuses it (AOTIRT_ERROR_VALUE).
AOTIRT_API aotirt_status aotirt_tensor_to_dlpack(const aotirt_tensor* t, DLManagedTensor** out);
AOTIRT_API aotirt_status aotirt_tensor_to_dlpack_versioned(const aotirt_tensor* t,
                                                           DLManagedTensorVersioned** out);
// The DLPack/CUDA-array-interface handshake: `consumer_stream` (a cudaStream_t
// of the tensor's device, cudaStreamLegacy (1) or cudaStreamPerThread (2))
// waits, on the device, for the work queued so far on the stream `t` belongs
// to. Nothing for a CPU tensor. No host wait.
AOTIRT_API aotirt_status aotirt_tensor_order_before(const aotirt_tensor* t, void* consumer_stream);
// Page-locked host memory (cudaHostAlloc, portable to every device), freed
// with aotirt_host_free_pinned (cudaFreeHost, which CUDA may make wait for the
// device: allocate once, reuse, free off the hot path).
AOTIRT_API aotirt_status aotirt_host_alloc_pinned(size_t nbytes, void** out);
AOTIRT_API void aotirt_host_free_pinned(void* ptr);

// ---- the copy routine --------------------------------------------------------
// Copies `t` into `dst`, `dst_nbytes` bytes of C-contiguous host memory. For a
// CUDA tensor the copy is queued on the tensor's stream (a strided source is
// first made contiguous there) and then the host waits for that stream: this
// is the only cudaStreamSynchronize in aotirt.
AOTIRT_API aotirt_status aotirt_copy_to_host(const aotirt_tensor* t, void* dst, size_t dst_nbytes);

// ---- cuBLAS ------------------------------------------------------------------
// Opens cuBLAS now, as the CUDA matmul shims otherwise do on their first call
// (AOTIRT_CUBLAS, a full path, is tried alone when set; else the pip wheels'
// copies in the process's site-packages folders, then libcublas.so.13, .12,
// libcublas.so). Needs no GPU. On failure (AOTIRT_ERROR_AOTI) the message
// names every file tried and how to provide cuBLAS. A failure is final for
// the process.
AOTIRT_API aotirt_status aotirt_cublas_load(void);

// ---- optional libraries (cuBLAS, cuDNN) ---------------------------------------
// The site-packages folders (colon-separated absolute paths) in which the
// loaders look for pip wheels' copies of the optional libraries, e.g.
// <dir>/nvidia/cudnn/lib/libcudnn.so.9, after the folder above libaotirt.so's.
// Python registers sys.path once, before its first handle opens. Replaces
// what an earlier call set; NULL or "" clears it.
AOTIRT_API aotirt_status aotirt_set_wheel_dirs(const char* colon_separated_paths);
// Opens the optional library `name` ("cublas" or "cudnn") now, as the shims
// that need it otherwise do on their first call, and gives the path of the
// file loaded (valid for the life of the process). cuDNN: AOTIRT_CUDNN, a
// full path, is tried alone when set; else the pip wheel's copy
// (nvidia-cudnn-cu13 or -cu12), else the system's libcudnn.so.9. Needs no GPU.
// On failure (AOTIRT_ERROR_AOTI) the message names every file tried and how
// to install the library. A failure is final for the process.
AOTIRT_API aotirt_status aotirt_load_optional_library(const char* name, const char** path_out);
// Whether float32 CUDA convolutions may use TF32 tensor cores (cuDNN), as
// torch.backends.cudnn.allow_tf32 says for torch: allowed by default, unless
// the environment has AOTIRT_CUDNN_ALLOW_TF32=0. Applies to plans built
// afterwards (plans are cached per setting).
AOTIRT_API aotirt_status aotirt_set_cudnn_allow_tf32(int allow);
AOTIRT_API int aotirt_cudnn_allow_tf32(void);

// ---- handles -----------------------------------------------------------------
// The strong undefined symbols of a shared library that start with `prefix`
// (read from its ELF symbol table, without loading it), one per line, in a
// thread-local string valid until the thread's next call.
AOTIRT_API aotirt_status aotirt_library_undefined_symbols(const char* path, const char* prefix, const char** names);

// The aoti_torch_* functions libaotirt implements (include/aotirt/shim_table.h,
// the list the check before a library is opened reads): for i below
// aotirt_shim_count(), entry i's name, family ("tensor", "memory", "stream",
// "diagnostics", "matmul", "attention", "convolution", "scan") and devices
// ("cpu", "cuda", "any"), as static strings (each out pointer may be NULL).
// AOTIRT_ERROR_VALUE for an i past the end.
AOTIRT_API size_t aotirt_shim_count(void);
AOTIRT_API aotirt_status aotirt_shim_at(size_t i, const char** name, const char** family, const char** devices);

// Opens a model library for `device_type`/`device_index`. A CUDA handle runs
// on `stream` (NULL: the device's shared stream); a CPU handle ignores it.
// An adopted `stream` keeps a block cache from then on (aotirt_stream_adopt).
// `path` is resolved once (realpath) and exactly that file is checked and
// opened. The first open sets AOTI_RUNTIME_CHECK_INPUTS=1 unless it is set,
// so that torch's generated libraries check their inputs before each run;
// a run those checks refuse fails with AOTIRT_ERROR_VALUE (dtype:
// AOTIRT_ERROR_TYPE) naming the input, and leaks none of the input handles
// the model did not take.
AOTIRT_API aotirt_status aotirt_handle_open(
    const char* path, int32_t device_type, int32_t device_index,
    aotirt_stream* stream, aotirt_handle** out);
AOTIRT_API size_t aotirt_handle_num_inputs(const aotirt_handle* h);
AOTIRT_API size_t aotirt_handle_num_outputs(const aotirt_handle* h);
// Name of input/output i, or NULL when the library does not export names.
AOTIRT_API const char* aotirt_handle_input_name(const aotirt_handle* h, size_t i);
AOTIRT_API const char* aotirt_handle_output_name(const aotirt_handle* h, size_t i);
AOTIRT_API bool aotirt_handle_is_closed(const aotirt_handle* h);
AOTIRT_API int32_t aotirt_handle_device_type(const aotirt_handle* h);
AOTIRT_API int32_t aotirt_handle_device_index(const aotirt_handle* h);
// Borrowed; NULL for a CPU handle.
AOTIRT_API aotirt_stream* aotirt_handle_stream(const aotirt_handle* h);
// Runs the model once. `inputs` are borrowed (the model gets fresh aliases);
// `outputs` receives num_outputs new tensors owned by the caller. Returns as
// soon as the work is queued.
AOTIRT_API aotirt_status aotirt_handle_run(
    aotirt_handle* h, aotirt_tensor* const* inputs, size_t num_inputs,
    aotirt_tensor** outputs, size_t num_outputs);
// Loads the model's weights from one blob of `nbytes` bytes with the
// library's AOTInductorModelUpdateConstantsFromBlob (AotiError when it has
// none). That call takes a bare pointer and reads as much as the library
// expects, so the size is checked first against what the library says
// (aotirt_handle_constants_blob_size): a blob of another size is refused
// (AOTIRT_ERROR_VALUE), as is any blob for a library that reads none (torch
// libraries whose weights are compiled in: AOTIRT_ERROR_AOTI). A library that
// says nothing gets the blob unchecked. The blob is read during the call;
// CUDA copies are queued on the handle's stream.
AOTIRT_API aotirt_status aotirt_handle_update_constants_from_blob_sized(aotirt_handle* h, const uint8_t* blob,
                                                                      size_t nbytes);
// The same without a size, for callers that trust their blob: checked only
// for libraries that read none; refused (AOTIRT_ERROR_VALUE) for a library
// that does not say its blob's size, where nothing could be checked.
AOTIRT_API aotirt_status aotirt_handle_update_constants_from_blob(aotirt_handle* h, const uint8_t* blob);
// The size of the weights blob the library reads: `exact` true when it says
// so (AOTInductorModelContainerGetConstantsBlobSize), false for a lower bound
// (the sum of its constants' sizes). AOTIRT_ERROR_VALUE when it says nothing.
AOTIRT_API aotirt_status aotirt_handle_constants_blob_size(const aotirt_handle* h, uint64_t* nbytes, bool* exact);
// ---- Constants by name -----------------------------------------------------
// What the library says about constant `i` (0 <= i < count), through the
// container ABI (AOTInductorModelContainerGetConstant*). The strings and
// `sizes` belong to the handle and live as long as it.
typedef struct aotirt_constant_info {
  const char* name;  // the library's own name ("" when it says none)
  const char* fqn;   // the module's path (its state_dict key), "" when not said
  int32_t dtype;     // an aotirt_dtype code, -1 when not said
  int32_t kind;      // torch's ConstantType: 0 unknown, 1 parameter, 2 buffer, 3 tensor constant, 4 folded
  uint64_t nbytes;   // AOTInductorModelContainerGetConstantDataSize
  bool from_folded;  // made by constant folding: not something a user gives
  int64_t ndim;      // -1 while the shape is not known (no value loaded yet)
  const int64_t* sizes;
  bool aotirt_owned;  // the active value is aotirt's (can be shared)
} aotirt_constant_info;
AOTIRT_API size_t aotirt_handle_num_constants(const aotirt_handle* h);
AOTIRT_API aotirt_status aotirt_handle_constant_info(const aotirt_handle* h, size_t i, aotirt_constant_info* out);
// Replaces constants `keys[i]` (names or FQNs) by `values[i]` (borrowed),
// all checked first: an unknown name, a folded constant, a wrong dtype,
// shape or device, or a parameter left out is AOTIRT_ERROR_VALUE naming each,
// and nothing changes. Buffers and tensor constants left out keep their
// values. Values are copied on the handle's stream (no host wait) into
// tensors aotirt owns, except where `share` (may be NULL) is nonzero and the
// value already is on the model's device in its layout: it is then kept as
// it is (shared, not copied; buffers are always copied). `inactive`: the
// second buffer, made active by aotirt_handle_swap_constants.
AOTIRT_API aotirt_status aotirt_handle_update_constants(aotirt_handle* h, const char* const* keys,
                                                        aotirt_tensor* const* values, const int* share, size_t n,
                                                        int inactive);
// Makes the second buffer active: runs queued before use the old weights,
// runs after the new ones. AOTIRT_ERROR_VALUE while it holds no full set.
AOTIRT_API aotirt_status aotirt_handle_swap_constants(aotirt_handle* h);
// A new tensor aliasing constant `i`'s active value, when aotirt owns it
// (AOTIRT_ERROR_VALUE when the library's own value is active).
AOTIRT_API aotirt_status aotirt_handle_constant_value(aotirt_handle* h, size_t i, aotirt_tensor** out);
// Deletes the model container; does not wait for queued work, which keeps
// its memory alive. The library stays mapped for the life of the process
// (unloading one is unsafe: worker threads, queued kernels). A second close
// does nothing.
AOTIRT_API aotirt_status aotirt_handle_close(aotirt_handle* h);
// Closes (if needed) and frees the handle object.
AOTIRT_API void aotirt_handle_free(aotirt_handle* h);
// The seed of the handle's random number generator (what its runs' rand,
// randn and randint shims draw from: Philox4x32-10, runtime/rng.h), and a
// new one, which also restarts its counter: the same seed then draws the
// same numbers again, eagerly and in CUDA graph replays alike (the counter
// lives in device memory; setting it is queued on the handle's stream, no
// wait). Until set: AOTIRT_SEED when set, else 67280421310721 (torch's
// default seed). aotirt_set_default_seed seeds the generator that shims
// called outside any run use.
AOTIRT_API aotirt_status aotirt_handle_set_seed(aotirt_handle* h, uint64_t seed);
AOTIRT_API aotirt_status aotirt_handle_seed(aotirt_handle* h, uint64_t* seed);
AOTIRT_API aotirt_status aotirt_set_default_seed(uint64_t seed);

#ifdef __cplusplus
}  // extern "C"
#endif

// CUDA graphs, explicit and automatic, and device-resident loops: a header of
// their own, part of this API (every user of aotirt.h has them).
#include "aotirt/graphs.h"
