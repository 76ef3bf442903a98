// uncapturable: a test-only model that runs eagerly but cannot be captured as
// a CUDA graph, so that tests can check how a capture fails (a clear
// AotiError) and that the handle still runs afterwards.
//
// y = x, by a copy on the stream; then the model asks, without waiting,
// whether the copy is done: cudaEventQuery on an event recorded on the stream.
// Eagerly that is allowed (the answer may be "not ready"); while the stream is
// being captured CUDA refuses it (an event recorded in a capture cannot be
// queried, and a thread-local capture forbids queries), and the run fails.
// Calls that would break the capture as surely but are banned from the
// sources (a host wait, cudaMalloc) are not an option here.
#include <cuda_runtime_api.h>

#include <string>

#include "../container.h"

namespace model {
namespace {

void check_cuda(cudaError_t err, const char* call) {
  if (err != cudaSuccess)
    fail(std::string(call) + " failed: " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

}  // namespace

const Spec& spec() {
  static const Spec s{{"x"}, {"y"}, true};
  return s;
}

void run(const Device& device, std::vector<Tensor>& inputs, std::vector<Tensor>& outputs, void* stream) {
  const Tensor& x = inputs[0];
  if (x.dtype() != aoti_torch_dtype_float32() || !x.is_contiguous())
    fail("input 0 (x): uncapturable takes a contiguous float32 tensor");
  Tensor y = empty_like_shape(x.sizes(), aoti_torch_dtype_float32(), device);
  auto s = static_cast<cudaStream_t>(stream);
  if (x.numel() > 0)
    check_cuda(cudaMemcpyAsync(y.data(), x.data(), x.numel() * sizeof(float), cudaMemcpyDeviceToDevice, s),
               "cudaMemcpyAsync");
  cudaEvent_t copied = nullptr;
  check_cuda(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  cudaError_t recorded = cudaEventRecord(copied, s);
  cudaError_t queried = recorded == cudaSuccess ? cudaEventQuery(copied) : recorded;
  // Not a wait: CUDA releases the event once the recorded work is done.
  cudaError_t destroyed = cudaEventDestroy(copied);
  check_cuda(recorded, "cudaEventRecord");
  if (queried == cudaErrorNotReady)
    (void)cudaGetLastError();  // "not ready" is an answer, not an error
  else
    check_cuda(queried, "cudaEventQuery");
  check_cuda(destroyed, "cudaEventDestroy");
  outputs[0] = std::move(y);
}

}  // namespace model
