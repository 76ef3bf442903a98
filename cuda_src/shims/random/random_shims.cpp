// aoti_torch_{cpu,cuda}_{rand,randn,randint,randint_low,randint_low_out}
// (include/aotirt/shim.h, torch's c_shim_cpu.h / c_shim_cuda.h signatures):
// the arguments checked as torch checks them, the output made contiguous
// (torch's factory functions: empty(size, options)), then filled on the
// CPU or queued on CUDA (random.h) from the current generator
// (runtime/rng.h: the handle's during a run).
//
// Inductor calls randint_low_out itself, for the seeds of the random
// numbers it draws inside its own kernels (inductor_seeds: a [n] int64
// draw in [0, 2^63 - 1)), so a compiled model with dropout or torch.rand
// needs that one even where its other random ops are lowered.

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "aotirt/shim.h"
#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"
#include "shims/random/random.h"
#include "shims/shim_helpers.h"

namespace aotirt {
namespace random {
namespace {

std::string prefix(const char* name) { return std::string(name) + ": "; }

// torch's check_from_to_in_range: [low, high - 1] must be values of the dtype
// (floating dtypes: integers up to 2^digits exactly representable).
aotirt_status check_range(const char* name, int64_t low, int64_t high, int32_t dtype) {
  if (low >= high)
    return fail(AOTIRT_ERROR_VALUE, prefix(name) + "random_ expects 'from' to be less than 'to', but got from=" +
                                        std::to_string(low) + " >= to=" + std::to_string(high));
  int64_t lowest = 0, highest = 0;
  switch (dtype) {
    case AOTIRT_DTYPE_BOOL: lowest = 0; highest = 1; break;
    case AOTIRT_DTYPE_UINT8: lowest = 0; highest = 255; break;
    case AOTIRT_DTYPE_INT8: lowest = -128; highest = 127; break;
    case AOTIRT_DTYPE_INT16: lowest = -32768; highest = 32767; break;
    case AOTIRT_DTYPE_INT32:
      lowest = std::numeric_limits<int32_t>::min();
      highest = std::numeric_limits<int32_t>::max();
      break;
    case AOTIRT_DTYPE_INT64: return AOTIRT_OK;
    case AOTIRT_DTYPE_FLOAT16: highest = int64_t{1} << 11; lowest = -highest; break;
    case AOTIRT_DTYPE_BFLOAT16: highest = int64_t{1} << 8; lowest = -highest; break;
    case AOTIRT_DTYPE_FLOAT32: highest = int64_t{1} << 24; lowest = -highest; break;
    case AOTIRT_DTYPE_FLOAT64: highest = int64_t{1} << 53; lowest = -highest; break;
    default:
      return fail(AOTIRT_ERROR_TYPE, prefix(name) + "dtype " + dtype_name(dtype) + " is not supported");
  }
  if (low < lowest || low > highest)
    return fail(AOTIRT_ERROR_VALUE, prefix(name) + "from is out of bounds for " + dtype_name(dtype));
  if (high - 1 < lowest || high - 1 > highest)
    return fail(AOTIRT_ERROR_VALUE, prefix(name) + "to - 1 is out of bounds for " + dtype_name(dtype));
  return AOTIRT_OK;
}

Draw integers(int64_t low, int64_t high) {
  Draw d;
  d.kind = Kind::Integer;
  d.low = low;
  d.range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  return d;
}

// The device a factory call makes its tensor on: `device_type` (NULL: the
// shim's own) must be the shim's; a CUDA index < 0 is the current device.
aotirt_status resolve_device(const char* name, int32_t shim_device, const int32_t* device_type,
                             int32_t device_index, int32_t* index) {
  if (device_type && *device_type != shim_device)
    return fail(AOTIRT_ERROR_VALUE, prefix(name) + "device type " + std::to_string(*device_type) + " given to the " +
                                        (shim_device == AOTIRT_DEVICE_CUDA ? "CUDA" : "CPU") + " shim");
  if (shim_device == AOTIRT_DEVICE_CPU) {
    *index = 0;
    return AOTIRT_OK;
  }
  if (device_index >= 0) {
    *index = device_index;
    return AOTIRT_OK;
  }
  if (Stream* current = current_stream()) {
    *index = current->device;
    return AOTIRT_OK;
  }
  int device = 0;
  AOTIRT_CUDA_TRY(cudaGetDevice(&device));
  *index = device;
  return AOTIRT_OK;
}

aotirt_status fill(const char* name, int32_t device_type, const Draw& d, Tensor& out) {
  return device_type == AOTIRT_DEVICE_CPU ? run_cpu(name, d, out) : run_cuda(name, d, out);
}

// rand, randn, randint, randint_low: a new contiguous tensor of `size`.
aotirt_status factory(const char* name, int32_t shim_device, Kind kind, int64_t low, int64_t high,
                      const int64_t* size, int64_t size_len, const int32_t* dtype, const int32_t* layout,
                      const int32_t* device_type, int32_t device_index, AtenTensorHandle* ret0) {
  if (!ret0 || (!size && size_len > 0) || size_len < 0) return null_argument(name);
  if (size_len > AOTIRT_MAX_DIMS)
    return fail(AOTIRT_ERROR_VALUE, prefix(name) + std::to_string(size_len) + " dimensions; at most " +
                                        std::to_string(AOTIRT_MAX_DIMS) + " are supported");
  if (layout && *layout != 0)  // torch.strided
    return fail(AOTIRT_ERROR_VALUE, prefix(name) + "only the strided layout is supported, got layout " +
                                        std::to_string(*layout));
  const bool ints = kind == Kind::Integer;
  const int32_t type = dtype ? *dtype : (ints ? AOTIRT_DTYPE_INT64 : AOTIRT_DTYPE_FLOAT32);
  Draw d;
  if (ints) {
    AOTIRT_TRY(check_range(name, low, high, type));
    d = integers(low, high);
  } else {
    if (!is_floating(type))
      return fail(AOTIRT_ERROR_TYPE, prefix(name) + "dtype " + dtype_name(type) +
                                         " is not supported: rand and randn make floating dtypes only");
    d.kind = kind;
  }
  int32_t index = 0;
  AOTIRT_TRY(resolve_device(name, shim_device, device_type, device_index, &index));
  Tensor* made = nullptr;
  AOTIRT_TRY(new_tensor(size_len, size, nullptr, type, shim_device, index, &made));
  OwnedTensor out(made);
  AOTIRT_TRY(fill(name, shim_device, d, *out));
  *ret0 = out.release();
  return AOTIRT_OK;
}

// randint.low_out: `out` must already have `size` (aotirt does not resize).
aotirt_status fill_out(const char* name, int32_t device_type, Tensor* out, int64_t low, int64_t high,
                       const int64_t* size, int64_t size_len) {
  if (!out || (!size && size_len > 0)) return null_argument(name);
  if (!out->storage) return fail(AOTIRT_ERROR_VALUE, prefix(name) + "out has no storage");
  if (out->storage->device_type != device_type)
    return fail(AOTIRT_ERROR_VALUE, prefix(name) + "out must be a " +
                                        (device_type == AOTIRT_DEVICE_CPU ? "CPU" : "CUDA") + " tensor");
  AOTIRT_TRY(check_writable(*out, prefix(name) + "out"));
  bool same = size_len == out->ndim;
  for (int64_t d = 0; same && d < size_len; ++d) same = size[d] == out->sizes[d];
  if (!same) {
    std::string want = "[", got = "[";
    for (int64_t d = 0; d < size_len; ++d) want += (d ? ", " : "") + std::to_string(size[d]);
    for (int64_t d = 0; d < out->ndim; ++d) got += (d ? ", " : "") + std::to_string(out->sizes[d]);
    return fail(AOTIRT_ERROR_VALUE, prefix(name) + "out is " + got + "], size is " + want +
                                        "] (aotirt does not resize an out tensor)");
  }
  for (int64_t d = 0; d < out->ndim && out->numel() > 1; ++d)
    if (out->sizes[d] > 1 && out->strides[d] == 0)
      return fail(AOTIRT_ERROR_VALUE, prefix(name) + "out has stride 0 in a dimension of size " +
                                          std::to_string(out->sizes[d]) + " (its elements overlap)");
  AOTIRT_TRY(check_range(name, low, high, out->dtype));
  return fill(name, device_type, integers(low, high), *out);
}

}  // namespace
}  // namespace random
}  // namespace aotirt

using aotirt::random::Kind;

// One definition of each shim, made for each device (named in full, so that
// a search for a shim's name finds where it is made). rand and randn share
// their signature and differ in the Kind drawn.
#define AOTIRT_UNIFORM_OR_NORMAL_SHIM(rand, KIND, DEVICE)                                                              \
  AOTITorchError rand(const int64_t* size, int64_t size_len_, int32_t* dtype, int32_t* layout, int32_t* device,        \
                      int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0) {                            \
    const char* name = #rand;                                                                                          \
    (void)pin_memory;                                                                                                  \
    return aotirt::shim(name, [&] {                                                                                    \
      return aotirt::random::factory(name, DEVICE, KIND, 0, 0, size, size_len_, dtype, layout, device, device_index_,  \
                                     ret0);                                                                            \
    });                                                                                                                \
  }

#define AOTIRT_RANDINT_SHIM(randint, DEVICE)                                                                           \
  AOTITorchError randint(int64_t high, const int64_t* size, int64_t size_len_, int32_t* dtype, int32_t* layout,        \
                         int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0) {        \
    const char* name = #randint;                                                                                       \
    (void)pin_memory;                                                                                                  \
    return aotirt::shim(name, [&] {                                                                                    \
      return aotirt::random::factory(name, DEVICE, Kind::Integer, 0, high, size, size_len_, dtype, layout, device,     \
                                     device_index_, ret0);                                                             \
    });                                                                                                                \
  }

#define AOTIRT_RANDINT_LOW_SHIM(randint_low, DEVICE)                                                                   \
  AOTITorchError randint_low(int64_t low, int64_t high, const int64_t* size, int64_t size_len_, int32_t* dtype,        \
                             int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory,             \
                             AtenTensorHandle* ret0) {                                                                 \
    const char* name = #randint_low;                                                                                   \
    (void)pin_memory;                                                                                                  \
    return aotirt::shim(name, [&] {                                                                                    \
      return aotirt::random::factory(name, DEVICE, Kind::Integer, low, high, size, size_len_, dtype, layout, device,   \
                                     device_index_, ret0);                                                             \
    });                                                                                                                \
  }

#define AOTIRT_RANDINT_LOW_OUT_SHIM(randint_low_out, DEVICE)                                                           \
  AOTITorchError randint_low_out(AtenTensorHandle out, int64_t low, int64_t high, const int64_t* size,                 \
                                 int64_t size_len_) {                                                                  \
    const char* name = #randint_low_out;                                                                               \
    return aotirt::shim(name, [&] { return aotirt::random::fill_out(name, DEVICE, out, low, high, size, size_len_); });\
  }                                                                                                                    \

extern "C" {

AOTIRT_UNIFORM_OR_NORMAL_SHIM(aoti_torch_cpu_rand, Kind::Uniform, AOTIRT_DEVICE_CPU)
AOTIRT_UNIFORM_OR_NORMAL_SHIM(aoti_torch_cpu_randn, Kind::Normal, AOTIRT_DEVICE_CPU)
AOTIRT_RANDINT_SHIM(aoti_torch_cpu_randint, AOTIRT_DEVICE_CPU)
AOTIRT_RANDINT_LOW_SHIM(aoti_torch_cpu_randint_low, AOTIRT_DEVICE_CPU)
AOTIRT_RANDINT_LOW_OUT_SHIM(aoti_torch_cpu_randint_low_out, AOTIRT_DEVICE_CPU)
AOTIRT_UNIFORM_OR_NORMAL_SHIM(aoti_torch_cuda_rand, Kind::Uniform, AOTIRT_DEVICE_CUDA)
AOTIRT_UNIFORM_OR_NORMAL_SHIM(aoti_torch_cuda_randn, Kind::Normal, AOTIRT_DEVICE_CUDA)
AOTIRT_RANDINT_SHIM(aoti_torch_cuda_randint, AOTIRT_DEVICE_CUDA)
AOTIRT_RANDINT_LOW_SHIM(aoti_torch_cuda_randint_low, AOTIRT_DEVICE_CUDA)
AOTIRT_RANDINT_LOW_OUT_SHIM(aoti_torch_cuda_randint_low_out, AOTIRT_DEVICE_CUDA)

}  // extern "C"

#undef AOTIRT_UNIFORM_OR_NORMAL_SHIM
#undef AOTIRT_RANDINT_SHIM
#undef AOTIRT_RANDINT_LOW_SHIM
#undef AOTIRT_RANDINT_LOW_OUT_SHIM
