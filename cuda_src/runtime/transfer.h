// Moving tensors between devices: GPU to GPU by stream-ordered peer copies,
// and to or from the host for Tensor.to.
//
// A copy between two GPUs is queued on a stream of the consumer's device,
// after an event recorded on the producer's stream (use_on): no host wait,
// and nothing is queued on the producer's device but that event. The source's
// storage notes the consumer's stream as a user, so its stream-ordered free
// waits for the copy. The copy is cudaMemcpyPeerAsync, always: with peer
// access on (enabled once per pair of devices, where the hardware allows) it
// is a direct DMA over NVLink or PCIe; without, the driver stages it through
// host memory itself, still stream-ordered and with no host wait.
#pragma once

#include "aotirt/aotirt.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace aotirt {

// A copy of CUDA tensor `src` on CUDA device `device`: the same dtype, sizes
// and strides (an exact replica of the view), over a new storage holding the
// bytes the view spans (extent_bytes, from its first element). Queued on `on`
// (a stream of `device`; NULL: that device's shared stream), which the new
// tensor belongs to. `src` on `device` itself is copied too (a plain device
// copy), so callers that want no copy check the device first.
aotirt_status copy_to_device(const Tensor& src, int device, Stream* on, Tensor** out);

// dst <- src for two CUDA tensors of one dtype and shape on different
// devices, any strides: queued on `on`, a stream of dst's device, after src's
// producer; dst must already be ordered on `on` (use_on) by the caller.
aotirt_status copy_across_devices(const Tensor& dst, const Tensor& src, Stream* on);

// Tensor.to: `src` on `device_type`/`device_index`. The same device: an
// alias (no copy). Another GPU: copy_to_device (the same strides). To or from
// the host: a new contiguous tensor, uploaded on `on` without a wait, or
// read back through the copy routine (which waits for src's stream only).
aotirt_status tensor_to(const Tensor& src, int32_t device_type, int32_t device_index, Stream* on, Tensor** out);

// Whether direct peer access from `consumer` to `producer` memory is on
// (enabled at the first copy between them). For tests and benchmarks.
bool peer_access_enabled(int consumer, int producer);

}  // namespace aotirt
