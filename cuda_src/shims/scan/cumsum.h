// aten.cumsum, shared by the CPU loop (cumsum_cpu.cpp) and the CUDA scan
// (cumsum_cuda.cu): one checked call, its output made as torch's meta
// function makes it (contiguous, of the output dtype), then the device's run.
//
// torch's dtype rule, on both devices: the input is first converted to the
// output dtype (`dtype` if given, else int64 for integer and bool inputs,
// else the input's), then summed; a bool result is refused (torch has no bool
// cumsum either).
#pragma once

#include <cstdint>

#include "runtime/errors.h"
#include "runtime/tensor.h"
#include "shims/shim_helpers.h"

namespace aotirt {
namespace cumsum {

struct Call {
  const char* name = nullptr;
  const Tensor* self = nullptr;
  int64_t dim = 0;          // wrapped: 0 <= dim < max(ndim, 1)
  int64_t length = 1;       // elements along dim (1 for a 0-d tensor)
  int32_t out_dtype = 0;
  OwnedTensor out;          // contiguous, on self's device (CUDA: ordered on the current stream)
};

// Checks self (on `device_type`), dim and dtype, and makes the output.
aotirt_status prepare(const char* name, int32_t device_type, const Tensor* self, int64_t dim, const int32_t* dtype,
                      Call* call);

}  // namespace cumsum
}  // namespace aotirt
