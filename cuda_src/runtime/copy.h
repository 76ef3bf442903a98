// Element copies between tensors of one dtype and shape, and the copy routine.
#pragma once

#include "aotirt/aotirt.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace aotirt {

// The copy routine: `t` into `nbytes` of C-contiguous host memory at `dst`.
// The only function in aotirt that waits for the GPU.
aotirt_status copy_to_host(const Tensor& t, void* dst, size_t nbytes);

// dst <- src for two CUDA tensors of one dtype and shape, any strides, queued
// on `stream` (which must be ordered after src's producer already).
aotirt_status copy_device_to_device(const Tensor& dst, const Tensor& src, Stream* stream);

// dst <- src for two tensors of one dtype and shape on any devices. Device
// work is queued on `on` when it is a stream of the device the work runs on
// (src's for a copy within one GPU, dst's for a copy between two GPUs (a peer
// copy, transfer.h) and for an upload), else on that device's shared stream,
// ordered after src's producer; dst then belongs to that stream. A CPU destination of a CUDA source goes through copy_to_host
// (on src's stream) and so waits.
aotirt_status copy_between(Tensor& dst, const Tensor& src, Stream* on);

// dst <- src for two CPU tensors of one dtype and shape, any strides.
void copy_host_to_host(const Tensor& dst, const Tensor& src);

}  // namespace aotirt
