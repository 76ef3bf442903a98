// The AOTInductor ABI types that model libraries and aotirt must agree on.
//
// These mirror torch/csrc/inductor/aoti_runtime/interface.h and
// torch/csrc/inductor/aoti_torch/c/shim.h: the names, the integer widths and
// the calling convention are part of the contract with libraries compiled by
// torch, so none of them may change here.
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Every aoti_torch_* shim returns one of these.
typedef int32_t AOTITorchError;
#define AOTI_TORCH_SUCCESS 0
#define AOTI_TORCH_FAILURE 1

// Every AOTInductorModelContainer* entry point returns one of these (0 = ok).
typedef int32_t AOTIRuntimeError;

struct AtenTensorOpaque;
typedef struct AtenTensorOpaque* AtenTensorHandle;

struct CUDAStreamGuardOpaque;
typedef struct CUDAStreamGuardOpaque* CUDAStreamGuardHandle;

struct AOTIProxyExecutorOpaque;
typedef struct AOTIProxyExecutorOpaque* AOTIProxyExecutorHandle;

struct AOTInductorModelContainerOpaque;
typedef struct AOTInductorModelContainerOpaque* AOTInductorModelContainerHandle;

struct AOTInductorStreamOpaque;
typedef struct AOTInductorStreamOpaque* AOTInductorStreamHandle;

// Function types of the container entry points, in the order aotirt resolves
// them. Signatures follow interface.h exactly.
typedef AOTIRuntimeError (*AOTInductorModelContainerCreateWithDeviceFunc)(
    AOTInductorModelContainerHandle* container_handle, size_t num_models,
    const char* device_str, const char* cubin_dir);
typedef AOTIRuntimeError (*AOTInductorModelContainerDeleteFunc)(
    AOTInductorModelContainerHandle container_handle);
typedef AOTIRuntimeError (*AOTInductorModelContainerGetNumInputsFunc)(
    AOTInductorModelContainerHandle container_handle, size_t* ret_num_inputs);
typedef AOTIRuntimeError (*AOTInductorModelContainerGetNumOutputsFunc)(
    AOTInductorModelContainerHandle container_handle, size_t* ret_num_outputs);
// Input handles are stolen by the model; output handles are created by the
// model and owned by the caller afterwards. Both arrays are borrowed.
typedef AOTIRuntimeError (*AOTInductorModelContainerRunFunc)(
    AOTInductorModelContainerHandle container_handle,
    AtenTensorHandle* input_handles, size_t num_inputs,
    AtenTensorHandle* output_handles, size_t num_outputs,
    AOTInductorStreamHandle stream_handle,
    AOTIProxyExecutorHandle proxy_executor_handle);
typedef AOTIRuntimeError (*AOTInductorModelContainerGetInputNameFunc)(
    AOTInductorModelContainerHandle container_handle, size_t input_idx,
    const char** ret_input_names);
typedef AOTIRuntimeError (*AOTInductorModelContainerGetOutputNameFunc)(
    AOTInductorModelContainerHandle container_handle, size_t output_idx,
    const char** ret_output_names);
typedef AOTIRuntimeError (*AOTInductorModelContainerGetCallSpecFunc)(
    AOTInductorModelContainerHandle container_handle, const char** in_spec,
    const char** out_spec);
typedef AOTIRuntimeError (*AOTInductorModelUpdateConstantsFromBlobFunc)(
    AOTInductorModelContainerHandle container_handle,
    const uint8_t* weight_blob_ptr);
typedef AOTIRuntimeError (*AOTInductorModelContainerGetNumConstantsFunc)(
    AOTInductorModelContainerHandle container_handle, size_t* num_constants);
typedef AOTIRuntimeError (*AOTInductorGetLastErrorFunc)(const char** error_msg);
// What a library says about its constants (all optional), for checking a
// weights blob before the library reads it: the blob's size (torch: only
// for weights kept outside the library, else it fails), each constant's
// bytes, whether constant folding makes it (then it is not in the blob).
typedef AOTIRuntimeError (*AOTInductorModelContainerGetConstantsBlobSizeFunc)(
    AOTInductorModelContainerHandle container_handle, uint64_t* ret_size);
typedef AOTIRuntimeError (*AOTInductorModelContainerGetConstantDataSizeFunc)(
    AOTInductorModelContainerHandle container_handle, size_t idx, size_t* data_size);
typedef AOTIRuntimeError (*AOTInductorModelContainerGetConstantFromFoldedFunc)(
    AOTInductorModelContainerHandle container_handle, size_t idx, bool* from_folded);
// The constants the container holds now: fewer than its non-folded
// constants means its weights were not loaded yet.
typedef struct AOTInductorConstantMapEntry {
  const char* name;
  AtenTensorHandle handle;
} AOTInductorConstantMapEntry;
// Constants by name (torch 2.11's interface.h): each constant's name as the
// library knows it, its original module path (FQN), type (ConstantType:
// 1 parameter, 2 buffer, 3 tensor constant, 4 folded), dtype (c10 code).
typedef AOTIRuntimeError (*AOTInductorModelContainerGetConstantNameFunc)(
    AOTInductorModelContainerHandle container_handle, size_t idx, const char** name);
typedef AOTIRuntimeError (*AOTInductorModelContainerGetConstantOriginalFQNFunc)(
    AOTInductorModelContainerHandle container_handle, size_t idx, const char** original_fqn);
typedef AOTIRuntimeError (*AOTInductorModelContainerGetConstantTypeFunc)(
    AOTInductorModelContainerHandle container_handle, size_t idx, int32_t* type);
typedef AOTIRuntimeError (*AOTInductorModelContainerGetConstantDtypeFunc)(
    AOTInductorModelContainerHandle container_handle, size_t idx, int32_t* dtype);
// torch's AOTInductorConstantMapHandle: a std::unordered_map<std::string,
// AtenTensorHandle>* in its implementation (interface.cpp), keyed by FQN for
// ExtractConstantsMap. Only C++ code that builds that map may pass one.
struct AOTInductorConstantMap;
typedef struct AOTInductorConstantMap* AOTInductorConstantMapHandle;
typedef AOTIRuntimeError (*AOTInductorModelContainerExtractConstantsMapFunc)(
    AOTInductorModelContainerHandle container_handle, AOTInductorConstantMapHandle constant_map_handle,
    bool use_inactive);
// Tensors the caller keeps alive (the container stores the pointers, owns
// nothing), keyed by constant name; no std::unordered_map crosses the call.
// use_inactive: the second buffer, which SwapConstantBuffer makes active.
typedef AOTIRuntimeError (*AOTInductorModelContainerUpdateUserManagedConstantBufferPairsFunc)(
    AOTInductorModelContainerHandle container_handle, const struct AOTInductorConstantMapEntry* pairs,
    size_t num_pairs, bool use_inactive, bool validate_full_update);
typedef AOTIRuntimeError (*AOTInductorModelContainerSwapConstantBufferFunc)(
    AOTInductorModelContainerHandle container_handle);
typedef AOTIRuntimeError (*AOTInductorModelContainerExtractConstantsMapEntriesFunc)(
    AOTInductorModelContainerHandle container_handle, const AOTInductorConstantMapEntry** entries,
    size_t* num_entries, bool use_inactive);

#ifdef __cplusplus
}  // extern "C"
#endif
