// aoti_torch_cuda__weight_int4pack_mm: aten._weight_int4pack_mm on CUDA,
// C[m][n] = sum_k A[m][k] * W[n][k] with W dequantised from torch's packed
// int4 weight: bfloat16 A, float accumulation, bfloat16 C, queued on the
// current stream with no host wait (capturable).
//
// The weight is in the layout torch's _convert_weight_to_int4pack_cuda
// writes (aten/src/ATen/native/cuda/int4mm.cu, matrix_to_m16n8k16_Bint4_layout),
// the B-operand fragments of the m16n8k16 tensor-core MMA:
//   int32 [n / 8][k / (innerKTiles * 16)][32 lanes][innerKTiles / 2]
// Word [nt][ko][t][j] holds two k-tiles of 16, kt0 = ko * innerKTiles + 2j
// and kt0 + 1, for column n = nt * 8 + t / 4; its eight nibbles, lowest
// first, are the values at these k within those tiles (c = 2 * (t % 4)):
//   nibble 0: tile kt0,     k = c        nibble 4: tile kt0,     k = c + 1
//   nibble 1: tile kt0,     k = c + 8    nibble 5: tile kt0,     k = c + 9
//   nibble 2: tile kt0 + 1, k = c        nibble 6: tile kt0 + 1, k = c + 1
//   nibble 3: tile kt0 + 1, k = c + 8    nibble 7: tile kt0 + 1, k = c + 9
// (the packing's `pack` expression: the even k of each byte of its uint8
// [n][k / 2] input is that byte's high nibble, the odd k its low one).
// A nibble q is the value q - 8, dequantised as torch's kernel does it, in
// bfloat16: (q - 8) * scale + zero, with qScaleAndZeros bfloat16
// [k / qGroupSize][n][2] holding (scale, zero).
//
// Three kernels: up to int4pack::kDecodeMaxRows (16) rows, a tensor-core
// decode kernel with the weight as the A operand and the activations staged
// in shared memory (int4pack_decode.cuh); more rows, or activations too long
// to stage, tensor-core mma.sync with the activations as A (int4pack_mma.cuh).
// Both need aligned pointers (a tensor with a storage offset may not be) and
// sm_80; anything else takes the plain tiled kernel below (each block
// dequantises a tile of W into shared memory, then every thread adds its
// outputs' products in float). The fast ones dequantise in one bfloat16 fma
// as torch's does; the plain one rounds a float fma to bfloat16, which can
// differ from that in the last bit of a weight.

#include <cuda_bf16.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "aotirt/shim.h"
#include "runtime/errors.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"
#include "shims/matmul/int4pack_decode.cuh"
#include "shims/matmul/int4pack_mma.cuh"
#include "shims/shim_helpers.h"

namespace aotirt {
namespace {

constexpr const char* kName = "aoti_torch_cuda__weight_int4pack_mm";
constexpr int kTileM = 16, kTileN = 64, kTileK = 32;  // k is a multiple of 32 (innerKTiles * 16)
constexpr int kThreads = 256;                         // kTileN columns x 4 row groups

struct Shape {
  int32_t m, n, k, inner_k_tiles, k_outer_tiles, group_size;
};

__device__ __forceinline__ float bf16_to_float(uint16_t bits) { return __uint_as_float(uint32_t{bits} << 16); }

// W[n][k], dequantised, rounded to bfloat16 as torch's __hfma2 leaves it.
__device__ __forceinline__ float weight_at(const int32_t* packed, const uint16_t* scale_zero, const Shape& s, int n,
                                           int k) {
  const int n_tile = n >> 3, k_tile = k >> 4;
  const int k_outer = k_tile / s.inner_k_tiles, inner = k_tile % s.inner_k_tiles;
  const int kk = k & 15;
  const int lane = (n & 7) * 4 + ((kk & 7) >> 1);
  const int nibble = 2 * (inner & 1) + (kk >> 3) + ((kk & 1) ? 4 : 0);
  const int64_t word = ((int64_t{n_tile} * s.k_outer_tiles + k_outer) * 32 + lane) * (s.inner_k_tiles / 2) + (inner >> 1);
  const int q = static_cast<int>((static_cast<uint32_t>(packed[word]) >> (4 * nibble)) & 0xF);
  const int64_t at = (int64_t{k / s.group_size} * s.n + n) * 2;
  const float scale = bf16_to_float(scale_zero[at]), zero = bf16_to_float(scale_zero[at + 1]);
  return __bfloat162float(__float2bfloat16_rn(fmaf(static_cast<float>(q - 8), scale, zero)));
}

__global__ void __launch_bounds__(kThreads) int4_mm(const uint16_t* a, const int32_t* packed,
                                                    const uint16_t* scale_zero, __nv_bfloat16* c, Shape s) {
  __shared__ float a_tile[kTileM][kTileK];
  __shared__ float w_tile[kTileK][kTileN + 1];
  const int m0 = blockIdx.y * kTileM, n0 = blockIdx.x * kTileN;
  const int col = threadIdx.x % kTileN, row_group = threadIdx.x / kTileN;  // rows row_group + 4i
  float acc[kTileM / 4] = {};
  for (int k0 = 0; k0 < s.k; k0 += kTileK) {
    for (int e = threadIdx.x; e < kTileM * kTileK; e += kThreads) {
      const int r = e / kTileK, kk = e % kTileK, m = m0 + r;
      a_tile[r][kk] = m < s.m ? bf16_to_float(a[int64_t{m} * s.k + k0 + kk]) : 0.0f;
    }
    for (int e = threadIdx.x; e < kTileK * kTileN; e += kThreads) {
      const int kk = e / kTileN, cc = e % kTileN, n = n0 + cc;
      w_tile[kk][cc] = n < s.n ? weight_at(packed, scale_zero, s, n, k0 + kk) : 0.0f;
    }
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < kTileK; ++kk) {
      const float w = w_tile[kk][col];
#pragma unroll
      for (int i = 0; i < kTileM / 4; ++i) acc[i] = fmaf(a_tile[row_group + 4 * i][kk], w, acc[i]);
    }
    __syncthreads();
  }
  const int n = n0 + col;
  if (n >= s.n) return;
  for (int i = 0; i < kTileM / 4; ++i) {
    const int m = m0 + row_group + 4 * i;
    if (m < s.m) c[int64_t{m} * s.n + n] = __float2bfloat16_rn(acc[i]);
  }
}

aotirt_status refuse(const std::string& why) { return fail(AOTIRT_ERROR_VALUE, std::string(kName) + ": " + why); }

bool on_cuda(const Tensor* t) { return t->storage && t->storage->device_type == AOTIRT_DEVICE_CUDA; }

// torch's checks (_weight_int4pack_mm_cuda), each with its reason.
aotirt_status check(const Tensor* a, const Tensor* b, int64_t group_size, const Tensor* sz, Shape* s) {
  if (!on_cuda(a) || !on_cuda(b) || !on_cuda(sz)) return refuse("self, mat2 and qScaleAndZeros must be CUDA tensors");
  if (a->storage->device_index != b->storage->device_index || a->storage->device_index != sz->storage->device_index)
    return refuse("self, mat2 and qScaleAndZeros must be on one device");
  if (a->dtype != AOTIRT_DTYPE_BFLOAT16 || a->ndim != 2 || !a->is_contiguous())
    return fail(AOTIRT_ERROR_TYPE, std::string(kName) + ": self must be a contiguous 2-D bfloat16 tensor, not " +
                                       dtype_name(a->dtype) + " with " + std::to_string(a->ndim) + " dimensions");
  if (b->dtype != AOTIRT_DTYPE_INT32 || b->ndim != 4 || !b->is_contiguous())
    return fail(AOTIRT_ERROR_TYPE, std::string(kName) + ": mat2 must be the contiguous 4-D int32 weight "
                                                        "_convert_weight_to_int4pack makes, not " +
                                       dtype_name(b->dtype) + " with " + std::to_string(b->ndim) + " dimensions");
  const int64_t inner = b->sizes[3] * 2, m = a->sizes[0], k = a->sizes[1], n = b->sizes[0] * 8;
  if (inner != 2 && inner != 4 && inner != 8)
    return refuse("mat2's last size must be 1, 2 or 4 (innerKTiles 2, 4 or 8), not " + std::to_string(b->sizes[3]));
  if (b->sizes[2] != 32) return refuse("mat2's third size must be 32 (lanes), not " + std::to_string(b->sizes[2]));
  if (k % (inner * 16) != 0 || b->sizes[1] != k / (inner * 16))
    return refuse("self has k = " + std::to_string(k) + " columns, which mat2 (" + std::to_string(b->sizes[1]) +
                  " k-tiles of " + std::to_string(inner * 16) + ") does not hold");
  if (group_size != 32 && group_size != 64 && group_size != 128 && group_size != 256)
    return refuse("qGroupSize must be 32, 64, 128 or 256, not " + std::to_string(group_size));
  if (k % group_size != 0)
    return refuse("k = " + std::to_string(k) + " is not a multiple of qGroupSize " + std::to_string(group_size));
  if (sz->dtype != AOTIRT_DTYPE_BFLOAT16 || !sz->is_contiguous() || sz->ndim != 3 || sz->sizes[0] != k / group_size ||
      sz->sizes[1] != n || sz->sizes[2] != 2)
    return refuse("qScaleAndZeros must be a contiguous bfloat16 [" + std::to_string(k / group_size) + ", " +
                  std::to_string(n) + ", 2] tensor (k / qGroupSize, n, scale and zero)");
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX || m * k > INT_MAX || m * n > INT_MAX)
    return refuse("the problem is larger than this kernel takes (sizes and products below 2^31)");
  *s = Shape{static_cast<int32_t>(m), static_cast<int32_t>(n), static_cast<int32_t>(k),
             static_cast<int32_t>(inner), static_cast<int32_t>(b->sizes[1]), static_cast<int32_t>(group_size)};
  return AOTIRT_OK;
}

bool aligned(const Tensor* t, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(t->data()) % bytes == 0; }

enum class Kernel { kDecode, kMma, kPlain };

// The fast kernels' preconditions: their vector loads' alignment (the weight's
// per-lane vector is inner * 2 bytes, the decode kernel copies A in 16-byte
// pieces, the mma kernel reads it and the scales as 32-bit pairs), bfloat16
// fma and mma.sync (sm_80), the decode kernel's room for A, and the mma
// grid's row limit.
Kernel kernel_for(const Tensor* a, const Tensor* b, const Tensor* sz, const Shape& s, int sm) {
  if (sm < 80 || !aligned(a, 4) || !aligned(sz, 4) || !aligned(b, uintptr_t(s.inner_k_tiles) * 2))
    return Kernel::kPlain;
  if (int4pack::decode_fits(s.m, s.k) && aligned(a, 16)) return Kernel::kDecode;
  return int4pack::mma_row_blocks(s.m) <= 65535 ? Kernel::kMma : Kernel::kPlain;
}

int group_shift(int group_size) {
  int shift = 0;
  while ((1 << shift) < group_size) ++shift;
  return shift;  // group_size is 32, 64, 128 or 256, so exact
}

aotirt_status run(const Tensor* a, const Tensor* b, int64_t group_size, const Tensor* sz, Tensor** ret) {
  if (!a || !b || !sz || !ret) return null_argument(kName);
  Shape s{};
  AOTIRT_TRY(check(a, b, group_size, sz, &s));
  const int device = a->storage->device_index;
  const int64_t sizes[2] = {s.m, s.n};
  Tensor* made = nullptr;
  AOTIRT_TRY(new_tensor(2, sizes, nullptr, AOTIRT_DTYPE_BFLOAT16, AOTIRT_DEVICE_CUDA, device, &made));
  OwnedTensor out(made);
  if (s.m > 0 && s.n > 0) {
    AOTIRT_TRY(check_device_usable(device));
    DeviceGuard guard;
    AOTIRT_TRY(guard.enter(device));
    StreamRef stream;
    AOTIRT_TRY(stream_for_device(device, &stream));
    AOTIRT_TRY(use_on(*a, stream.get()));
    AOTIRT_TRY(use_on(*b, stream.get()));
    AOTIRT_TRY(use_on(*sz, stream.get()));
    AOTIRT_TRY(use_on(*out, stream.get()));
    DeviceFacts facts;
    AOTIRT_TRY(device_facts(device, &facts));
    const Kernel kernel = kernel_for(a, b, sz, s, facts.sm_version);
    if (kernel != Kernel::kPlain) {
      const auto* a_pairs = static_cast<const uint32_t*>(a->data());
      const auto* packed = static_cast<const int32_t*>(b->data());
      const auto* pairs = static_cast<const uint32_t*>(sz->data());
      auto* c = static_cast<__nv_bfloat16*>(out->data());
      const int shift = group_shift(s.group_size);
      cudaStream_t h = stream->handle;
      if (kernel == Kernel::kDecode)
        AOTIRT_CUDA_TRY(int4pack::launch_decode(device, facts.multiprocessors, s.m, s.inner_k_tiles, a_pairs, packed,
                                                pairs, c, s.n, s.k, shift, h));
      else
        int4pack::launch_mma(s.m, s.inner_k_tiles, a_pairs, packed, pairs, c, s.n, s.k, shift, h);
    } else {
      const dim3 grid((s.n + kTileN - 1) / kTileN, (s.m + kTileM - 1) / kTileM);
      if (grid.y > 65535) return refuse("m = " + std::to_string(s.m) + " is more rows than this kernel takes");
      int4_mm<<<grid, kThreads, 0, stream->handle>>>(static_cast<const uint16_t*>(a->data()),
                                                     static_cast<const int32_t*>(b->data()),
                                                     static_cast<const uint16_t*>(sz->data()),
                                                     static_cast<__nv_bfloat16*>(out->data()), s);
    }
    AOTIRT_CUDA_TRY(cudaGetLastError());
  }
  *ret = out.release();
  return AOTIRT_OK;
}

}  // namespace
}  // namespace aotirt

extern "C" AOTITorchError aoti_torch_cuda__weight_int4pack_mm(AtenTensorHandle self, AtenTensorHandle mat2,
                                                              int64_t qGroupSize, AtenTensorHandle qScaleAndZeros,
                                                              AtenTensorHandle* ret0) {
  return aotirt::shim(aotirt::kName, [&] { return aotirt::run(self, mat2, qGroupSize, qScaleAndZeros, ret0); });
}
