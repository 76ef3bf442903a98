// The DLPack exchange structs (https://dmlc.github.io/dlpack/latest/), written
// out here with the field layout of dlpack.h v1.0 (unchanged through v1.1):
// aotirt exports and imports tensors through them. Only what aotirt uses is
// declared; names and values are the standard's, so code written against the
// upstream header reads the same.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// The version of the structs below, reported in DLManagedTensorVersioned.
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0

// Bits of DLManagedTensorVersioned.flags.
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

// DLDeviceType values (an int32 in DLDevice).
enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,      // pinned host memory (cudaHostAlloc)
  kDLCUDAManaged = 13,  // unified memory (cudaMallocManaged)
};

typedef struct {
  int32_t device_type;
  int32_t device_id;
} DLDevice;

// DLDataTypeCode values (a uint8 in DLDataType).
enum {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
};

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void* data;             // for CUDA: a device pointer
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;         // ndim entries
  int64_t* strides;       // ndim entries, in elements; NULL: compact row-major
  uint64_t byte_offset;   // bytes from `data` to the first element
} DLTensor;

// The legacy (pre-1.0) managed tensor, in a capsule named "dltensor".
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

// The DLPack 1.x managed tensor, in a capsule named "dltensor_versioned".
// Everything up to `flags` stays put in every 1.x (and later) version, so a
// consumer can always read the version and call the deleter.
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#ifdef __cplusplus
}  // extern "C"

#include <cstddef>

// The layout is the ABI: check it against the standard's (64-bit) offsets.
static_assert(sizeof(DLDevice) == 8, "DLDevice layout");
static_assert(sizeof(DLDataType) == 4, "DLDataType layout");
static_assert(sizeof(DLTensor) == 48 && offsetof(DLTensor, device) == 8 && offsetof(DLTensor, ndim) == 16 &&
                  offsetof(DLTensor, dtype) == 20 && offsetof(DLTensor, shape) == 24 &&
                  offsetof(DLTensor, strides) == 32 && offsetof(DLTensor, byte_offset) == 40,
              "DLTensor layout");
static_assert(sizeof(DLManagedTensor) == 64 && offsetof(DLManagedTensor, manager_ctx) == 48 &&
                  offsetof(DLManagedTensor, deleter) == 56,
              "DLManagedTensor layout");
static_assert(sizeof(DLManagedTensorVersioned) == 80 && offsetof(DLManagedTensorVersioned, manager_ctx) == 8 &&
                  offsetof(DLManagedTensorVersioned, deleter) == 16 &&
                  offsetof(DLManagedTensorVersioned, flags) == 24 &&
                  offsetof(DLManagedTensorVersioned, dl_tensor) == 32,
              "DLManagedTensorVersioned layout");
#endif
