// The last step of CUTLASS's fused attention kernel for float32 outputs, as
// torch's copy of that kernel does it: each output row divided by its sum of
// exponentials, except a row whose sum is 0 (a bias masked every key with
// -inf), which stays 0 instead of becoming 0 / 0 = NaN.
//
// CUTLASS's examples/41 divides by the sum unconditionally; torch's
// mem_eff_attention/epilogue/epilogue_rescale_output.h takes 1 as the
// divisor of an empty row, and aotirt's cuBLAS path writes zeros for such
// rows too, so the fused kernel must not be the one path that answers NaN.
// This is a partial specialization of CUTLASS's
// MemoryEfficientAttentionNormalize for float outputs (every instance of
// sdpa_fmha.cu: its output, and the accumulated output of the instance that
// keeps it in memory), with the same interface; CUTLASS's own
// ApplyEpilogueOp specialization for the template calls it. Include it after
// kernel_forward.h and before any kernel is instantiated.
#pragma once

#include "kernel_forward.h"

namespace cutlass {
namespace epilogue {
namespace thread {

template <typename ElementSource_, int Count, typename ElementAccumulator_, typename ElementCompute_, bool isFirst,
          bool isLast, typename FragmentAlphaBeta_, FloatRoundStyle Round>
class MemoryEfficientAttentionNormalize<float, ElementSource_, Count, ElementAccumulator_, ElementCompute_, isFirst,
                                        isLast, FragmentAlphaBeta_, Round> {
 public:
  using ElementOutput = float;
  using ElementSource = ElementSource_;
  using ElementAccumulator = ElementAccumulator_;
  using ElementCompute = ElementCompute_;
  static int const kCount = Count;
  using FragmentOutput = Array<ElementOutput, kCount>;
  using FragmentSource = Array<ElementSource, kCount>;
  using FragmentAccumulator = Array<ElementAccumulator, kCount>;
  using ComputeFragment = Array<ElementCompute, kCount>;
  using FragmentAlphaBeta = FragmentAlphaBeta_;
  static FloatRoundStyle const kRound = Round;

  // s_prime: each row's sum of exponentials so far; m_prime: the factor that
  // rescales what was written before, when the row's maximum moved.
  CUTLASS_HOST_DEVICE
  MemoryEfficientAttentionNormalize(FragmentAlphaBeta const& s_prime, FragmentAlphaBeta const& m_prime)
      : s_prime_(s_prime), m_prime_(m_prime) {}

  CUTLASS_HOST_DEVICE
  bool is_source_needed() const { return !isFirst; }

  CUTLASS_HOST_DEVICE
  void set_k_partition(int, int) {}

  // A later block of keys: output = alpha * accumulator + alpha * m_prime * source.
  CUTLASS_HOST_DEVICE
  FragmentOutput operator()(int row, FragmentAccumulator const& accumulator, FragmentSource const& source) const {
    NumericArrayConverter<ElementCompute, ElementSource, kCount, Round> from_source;
    NumericArrayConverter<ElementCompute, ElementAccumulator, kCount, Round> from_accumulator;
    NumericArrayConverter<ElementOutput, ElementCompute, kCount, Round> to_output;
    const ElementCompute alpha = scale(row);
    const ElementCompute beta = alpha * m_prime_[row];
    multiplies<ComputeFragment> times;
    multiply_add<ComputeFragment> times_plus;
    const ComputeFragment rescaled = times(beta, from_source(source));
    return to_output(times_plus(alpha, from_accumulator(accumulator), rescaled));
  }

  // The first block of keys: output = alpha * accumulator.
  CUTLASS_HOST_DEVICE
  FragmentOutput operator()(int row, FragmentAccumulator const& accumulator) const {
    NumericArrayConverter<ElementCompute, ElementAccumulator, kCount, Round> from_accumulator;
    NumericArrayConverter<ElementOutput, ElementCompute, kCount, Round> to_output;
    multiplies<ComputeFragment> times;
    return to_output(times(scale(row), from_accumulator(accumulator)));
  }

 private:
  // 1 / the row's sum once every key is in (1 before), and 1 for a row with
  // no key left (its accumulator is 0, and so is its output).
  CUTLASS_HOST_DEVICE
  ElementCompute scale(int row) const {
    if (!isLast) return ElementCompute(1);
    const ElementCompute sum = s_prime_[row];
    return ElementCompute(1) / (sum == ElementCompute(0) ? ElementCompute(1) : sum);
  }

  FragmentAlphaBeta const& s_prime_;
  FragmentAlphaBeta const& m_prime_;
};

}  // namespace thread
}  // namespace epilogue
}  // namespace cutlass
