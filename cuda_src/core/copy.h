// Element copies between tensors of one dtype and shape, and the copy routine.
#pragma once

#include "aotirt/aotirt.h"
#include "stream.h"
#include "tensor.h"

namespace aotirt {

// The copy routine: `t` into `nbytes` of C-contiguous host memory at `dst`.
// The only function in aotirt that waits for the GPU.
aotirt_status copy_to_host(const Tensor& t, void* dst, size_t nbytes);

// dst <- src for two CUDA tensors of one dtype and shape, any strides, queued
// on `stream` (which must be ordered after src's producer already).
aotirt_status copy_device_to_device(const Tensor& dst, const Tensor& src, Stream* stream);

// dst <- src for two CPU tensors of one dtype and shape, any strides.
void copy_host_to_host(const Tensor& dst, const Tensor& src);

}  // namespace aotirt
