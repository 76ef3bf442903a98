// aoti_torch_cpu_cumsum: aten.cumsum on the CPU, as torch computes it: the
// input is first converted to the output dtype (cumsum.h), then summed in
// torch's CPU accumulation type (double for float32 and float64, float for
// float16 and bfloat16, int64 for integers), each partial sum converted to
// the output dtype. The output is contiguous, as torch's.

#include <string>
#include <type_traits>

#include "aotirt/shim.h"
#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "runtime/tensor.h"
#include "shims/host_elements.h"
#include "shims/scan/cumsum.h"
#include "shims/shim_helpers.h"

namespace aotirt {
namespace {

constexpr const char* kName = "aoti_torch_cpu_cumsum";

template <typename T>
using Accumulator = std::conditional_t<
    std::is_same_v<T, float> || std::is_same_v<T, double>, double,
    std::conditional_t<std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, float, int64_t>>;

template <typename In, typename Out>
void cumsum_loop(const Tensor& self, int64_t dim, const Tensor& out) {
  using Acc = Accumulator<Out>;
  const In* x = static_cast<const In*>(self.data());
  Out* y = static_cast<Out*>(out.data());
  const int64_t length = self.ndim ? self.sizes[dim] : 1;
  const int64_t x_step = self.ndim ? self.strides[dim] : 0;
  const int64_t y_step = out.ndim ? out.strides[dim] : 0;
  // Every line along `dim`: walk the other dimensions with an index.
  int64_t index[AOTIRT_MAX_DIMS] = {};
  const int64_t lines = length ? self.numel() / length : 0;
  for (int64_t line = 0; line < lines; ++line) {
    const In* xl = x + host::offset_at(self, index);
    Out* yl = y + host::offset_at(out, index);
    Acc acc = 0;
    for (int64_t i = 0; i < length; ++i) {
      // Converted to the output dtype first, as torch's self.to(out dtype).
      const Out value = host::cast<Out>(xl[i * x_step]);
      acc += host::cast<Acc>(value);
      yl[i * y_step] = host::cast<Out>(acc);
    }
    for (int64_t d = self.ndim - 1; d >= 0; --d) {  // next line: odometer over dims other than `dim`
      if (d == dim) continue;
      if (++index[d] < self.sizes[d]) break;
      index[d] = 0;
    }
  }
}

aotirt_status run(const Tensor* self, int64_t dim, const int32_t* dtype, Tensor** ret) {
  if (!ret) return null_argument(kName);
  cumsum::Call call;
  AOTIRT_TRY(cumsum::prepare(kName, AOTIRT_DEVICE_CPU, self, dim, dtype, &call));
  bool known = false;
  host::dispatch_dtype(self->dtype, [&](auto in) {
    known = host::dispatch_dtype(call.out_dtype, [&](auto o) {
      cumsum_loop<decltype(in), decltype(o)>(*self, call.dim, *call.out);
    });
  });
  if (!known)
    return fail(AOTIRT_ERROR_TYPE, std::string(kName) + ": no loop from " + dtype_name(self->dtype) + " to " +
                                       dtype_name(call.out_dtype));
  *ret = call.out.release();
  return AOTIRT_OK;
}

}  // namespace
}  // namespace aotirt

extern "C" AOTITorchError aoti_torch_cpu_cumsum(AtenTensorHandle self, int64_t dim, int32_t* dtype,
                                                AtenTensorHandle* ret0) {
  return aotirt::shim(aotirt::kName, [&] { return aotirt::run(self, dim, dtype, ret0); });
}
