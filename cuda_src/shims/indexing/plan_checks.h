// The checks scatter and index_put share (scatter_plan.cpp).
#pragma once

#include <string>

#include "aotirt/aotirt.h"
#include "runtime/tensor.h"

namespace aotirt {
namespace indexing {

// The element types the loops and kernels have: uint8, int8, int16, int32,
// int64, float16, float32, float64, bool, bfloat16.
bool supported_dtype(int32_t dtype);

// out: on self's device, of its dtype and shape, writable, a supported dtype.
aotirt_status check_out(const char* shim, const Tensor& out, const Tensor& self);

bool same_device(const Tensor& a, const Tensor& b);
bool same_shape(const Tensor& a, const Tensor& b);

// "[2, 3]"
std::string shape_string(const Tensor& t);

}  // namespace indexing
}  // namespace aotirt
