// The shims Inductor's code for torch.cond and while_loop calls besides the
// memory ones (cpp_wrapper_cpu.py: codegen_conditional, codegen_while_loop):
//
//   aoti_torch_item_bool          the predicate, a one-element tensor, read on
//                                 the host to choose a branch or end a loop;
//   aoti_torch_assign_tensors_out a new handle to the same tensor for a
//                                 subgraph's input or a loop's carried value.
//
// item_bool of a CUDA tensor is a host read by nature: the host cannot branch
// on a value the GPU has not computed yet. It goes through the copy routine
// (runtime/copy.cu), so it is the run's one kind of wait and the wait counter
// sees it as one cudaStreamSynchronize; a CUDA graph cannot record it, so it
// is refused, with a message saying why, while a capture is under way.

#include <cuda_runtime.h>

#include <string>

#include "aotirt/shim.h"
#include "runtime/copy.h"
#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"
#include "shims/host_elements.h"
#include "shims/shim_helpers.h"

namespace aotirt {
namespace {

constexpr const char* kItem = "aoti_torch_item_bool";

aotirt_status refuse_while_capturing(Stream* stream) {
  if (!stream) return AOTIRT_OK;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  AOTIRT_CUDA_TRY(cudaStreamIsCapturing(stream->handle, &capture));
  if (capture == cudaStreamCaptureStatusNone) return AOTIRT_OK;
  return fail(AOTIRT_ERROR_AOTI, std::string(kItem) + ": the model reads a CUDA tensor's value on the host (a "
                                 "torch.cond or while_loop predicate), which waits for the GPU; a CUDA graph "
                                 "cannot record that: run this model eagerly");
}

// The element's bytes: read in place on the CPU, through the copy routine
// (the one host wait) from CUDA memory.
aotirt_status read_element(const Tensor& t, void* bytes) {
  if (t.storage->device_type == AOTIRT_DEVICE_CPU) return copy_to_host(t, bytes, t.itemsize());
  AOTIRT_TRY(refuse_while_capturing(current_stream()));
  AOTIRT_TRY(refuse_while_capturing(t.stream.get()));
  return copy_to_host(t, bytes, t.itemsize());
}

aotirt_status item_bool(const Tensor* t, bool* ret) {
  if (!t || !ret) return null_argument(kItem);
  const int64_t numel = t->numel();
  if (numel != 1)  // torch's Tensor::item() message
    return fail(AOTIRT_ERROR_VALUE, std::string(kItem) + ": a Tensor with " + std::to_string(numel) +
                                        " elements cannot be converted to Scalar");
  alignas(8) unsigned char bytes[16] = {};
  if (t->itemsize() == 0 || t->itemsize() > sizeof(bytes))
    return fail(AOTIRT_ERROR_TYPE, std::string(kItem) + ": dtype " + dtype_name(t->dtype) + " is not supported");
  bool known = host::dispatch_dtype(t->dtype, [&](auto zero) { (void)zero; });
  if (!known)
    return fail(AOTIRT_ERROR_TYPE, std::string(kItem) + ": dtype " + dtype_name(t->dtype) + " is not supported");
  AOTIRT_TRY(read_element(*t, bytes));
  // torch's item().to<bool>(): any non-zero value (NaN included) is true.
  host::dispatch_dtype(t->dtype, [&](auto zero) {
    using T = decltype(zero);
    *ret = host::cast<bool>(*reinterpret_cast<const T*>(bytes));
  });
  return AOTIRT_OK;
}

}  // namespace
}  // namespace aotirt

extern "C" {

AOTITorchError aoti_torch_item_bool(AtenTensorHandle tensor, bool* ret_value) {
  return aotirt::shim(aotirt::kItem, [&] { return aotirt::item_bool(tensor, ret_value); });
}

// torch's: `at::Tensor dst = *src; *ret_dst = new_tensor_handle(dst)`, a
// second handle to the same tensor, as aoti_torch_new_tensor_handle makes.
AOTITorchError aoti_torch_assign_tensors_out(AtenTensorHandle src, AtenTensorHandle* ret_dst) {
  return aotirt::shim("aoti_torch_assign_tensors_out", [&] {
    if (!src || !ret_dst) return aotirt::null_argument("aoti_torch_assign_tensors_out");
    aotirt::Tensor* t = aotirt::alias(*src);
    if (!t) return aotirt::fail(AOTIRT_ERROR_MEMORY, "aoti_torch_assign_tensors_out: out of host memory");
    *ret_dst = t;
    return AOTIRT_OK;
  });
}

}  // extern "C"
