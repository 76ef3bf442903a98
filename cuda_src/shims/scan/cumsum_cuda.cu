// aoti_torch_cuda_cumsum: aten.cumsum on CUDA, queued on the current stream
// of self's device with no host wait and no cudaMalloc (the workspace comes
// from the stream-ordered pool), so a CUDA graph can capture it.
//
// One segmented scan for every line along `dim`, whatever the layout: CUB's
// DeviceScan::InclusiveSumByKey over the elements in line order (element i is
// line i / n, position i % n), the key of each element its line number, so
// the sums restart at every line. Keys and values are read through
// transform iterators (no buffer of keys, no gathered copy of the input):
// a value is the input element converted to the output dtype (torch's
// self.to(dtype) first), then to the accumulator. The sums go to a buffer in
// line order, and one kernel converts them to the output dtype and writes
// them where the contiguous output keeps them.
//
// Accumulators: int64 for integer outputs (an int32 or narrower output then
// wraps exactly as torch's own sums in that type do, since both are exact
// modulo 2^bits), double for float64, float for float32, float16 and
// bfloat16 (torch's CUDA scan adds float16 and bfloat16 in their own type,
// rounding every partial sum; float partial sums are at least as close to
// the exact ones). A parallel scan adds in another order than the CPU loop,
// so floating results agree with the CPU shim to rounding, not bit for bit.

#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

#include "aotirt/shim.h"
#include "runtime/errors.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"
#include "shims/host_elements.h"
#include "shims/scan/cumsum.h"
#include "shims/shim_helpers.h"
#include "shims/sort/lines.cuh"  // Lines, FastDivmod: the sorts' line addressing, shared

namespace aotirt {
namespace {

constexpr const char* kName = "aoti_torch_cuda_cumsum";
constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 16;  // a grid-stride loop covers the rest

using sort::FastDivmod;
using sort::Lines;

template <typename Out>
using Accumulator = std::conditional_t<
    std::is_same_v<Out, double>, double,
    std::conditional_t<std::is_same_v<Out, float> || std::is_same_v<Out, __half> ||
                           std::is_same_v<Out, __nv_bfloat16>,
                       float, int64_t>>;

struct LineOf {
  FastDivmod n;
  __device__ uint32_t operator()(uint32_t i) const { return n.div(i); }
};

template <typename In, typename Out>
struct ValueOf {
  const In* x;
  Lines in;
  FastDivmod n;
  __device__ Accumulator<Out> operator()(uint32_t i) const {
    const uint32_t line = n.div(i);
    const In v = x[in.start(line) + static_cast<int64_t>(i - line * n.divisor) * in.step];
    return host::cast<Accumulator<Out>>(host::cast<Out>(v));
  }
};

template <typename Out>
__global__ void write_out(const Accumulator<Out>* sums, FastDivmod n, uint32_t total, Lines out, Out* y) {
  const uint32_t stride = gridDim.x * blockDim.x;  // i + stride < 2^31 + 2^24: no overflow
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const uint32_t line = n.div(i);
    y[out.start(line) + static_cast<int64_t>(i - line * n.divisor) * out.step] = host::cast<Out>(sums[i]);
  }
}

size_t round_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

template <typename In, typename Out>
aotirt_status scan(const cumsum::Call& call, const StreamRef& stream) {
  using Acc = Accumulator<Out>;
  const Tensor& self = *call.self;
  const uint32_t total = static_cast<uint32_t>(self.numel());
  const FastDivmod n(static_cast<uint32_t>(call.length));
  const auto keys = thrust::make_transform_iterator(thrust::counting_iterator<uint32_t>(0), LineOf{n});
  const auto values = thrust::make_transform_iterator(
      thrust::counting_iterator<uint32_t>(0), ValueOf<In, Out>{static_cast<const In*>(self.data()),
                                                               sort::lines_of(self, call.dim), n});
  cudaStream_t s = stream->handle;
  size_t temp_bytes = 0;
  AOTIRT_CUDA_TRY(cub::DeviceScan::InclusiveSumByKey(nullptr, temp_bytes, keys, values, static_cast<Acc*>(nullptr),
                                                     total, ::cuda::std::equal_to<>(), s));
  const size_t sums_bytes = round_up(static_cast<size_t>(total) * sizeof(Acc));
  StorageRef work;  // freed stream-ordered after the work queued here
  AOTIRT_TRY(allocate_storage(sums_bytes + round_up(temp_bytes), AOTIRT_DEVICE_CUDA, stream->device, stream, &work));
  Acc* sums = static_cast<Acc*>(work->data);
  void* temp = static_cast<char*>(work->data) + sums_bytes;
  AOTIRT_CUDA_TRY(
      cub::DeviceScan::InclusiveSumByKey(temp, temp_bytes, keys, values, sums, total, ::cuda::std::equal_to<>(), s));
  const Tensor& out = *call.out;
  const unsigned blocks =
      static_cast<unsigned>(std::min<int64_t>((int64_t{total} + kThreads - 1) / kThreads, kMaxBlocks));
  write_out<Out><<<blocks, kThreads, 0, s>>>(sums, n, total, sort::lines_of(out, call.dim),
                                             static_cast<Out*>(out.data()));
  AOTIRT_CUDA_TRY(cudaGetLastError());
  return AOTIRT_OK;
}

aotirt_status run(const Tensor* self, int64_t dim, const int32_t* dtype, Tensor** ret) {
  if (!ret) return null_argument(kName);
  cumsum::Call call;
  AOTIRT_TRY(cumsum::prepare(kName, AOTIRT_DEVICE_CUDA, self, dim, dtype, &call));
  const int64_t total = self->numel();
  if (total > INT_MAX)
    return fail(AOTIRT_ERROR_VALUE, std::string(kName) + ": " + std::to_string(total) +
                                        " elements are more than this scan takes (2^31 - 1)");
  if (total > 0) {
    const int device = self->storage->device_index;
    AOTIRT_TRY(check_device_usable(device));
    DeviceGuard guard;
    AOTIRT_TRY(guard.enter(device));
    StreamRef stream;
    AOTIRT_TRY(stream_for_device(device, &stream));
    AOTIRT_TRY(use_on(*self, stream.get()));
    AOTIRT_TRY(use_on(*call.out, stream.get()));
    aotirt_status status = AOTIRT_OK;
    bool known = false;
    host::dispatch_dtype(self->dtype, [&](auto in) {
      known = host::dispatch_dtype(call.out_dtype, [&](auto o) {
        if constexpr (!std::is_same_v<decltype(o), bool>)  // refused by prepare
          status = scan<decltype(in), decltype(o)>(call, stream);
      });
    });
    if (!known)
      return fail(AOTIRT_ERROR_TYPE, std::string(kName) + ": no scan from " + dtype_name(self->dtype) + " to " +
                                         dtype_name(call.out_dtype));
    AOTIRT_TRY(status);
  }
  *ret = call.out.release();
  return AOTIRT_OK;
}

}  // namespace
}  // namespace aotirt

extern "C" AOTITorchError aoti_torch_cuda_cumsum(AtenTensorHandle self, int64_t dim, int32_t* dtype,
                                                 AtenTensorHandle* ret0) {
  return aotirt::shim(aotirt::kName, [&] { return aotirt::run(self, dim, dtype, ret0); });
}
