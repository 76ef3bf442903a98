"""torch's int4 weight packings, re-implemented in numpy from torch's code,
for the tests of the _weight_int4pack_mm shims, and the dequantised
reference product.

A weight is q[n][k], integers 0..15 standing for q - 8.

- cuda_pack: _convert_weight_to_int4pack_cuda (aten/src/ATen/native/cuda/
  int4mm.cu, the matrix_to_m16n8k16_Bint4_layout kernel), loop for loop:
  its uint8 [n][k / 2] input holds k = 2j in the high nibble of byte j and
  k = 2j + 1 in the low one (torch's tests build it as
  `(w[:, ::2] << 4 | w[:, 1::2]).to(torch.uint8)`), its output is int32
  [ceil(n / 8)][k / (innerKTiles * 16)][32][innerKTiles / 2].
- cpu_pack: weight_to_int4pack_kernel (aten/src/ATen/native/cpu/
  int4mm_kernel.cpp) for each CPU capability: blocks of BLOCK_N columns
  (64 on AVX512, 32 otherwise), each a [k][width / 2] run of bytes; full
  blocks on AVX512/AVX2 put column d and d + BLOCK_N / 2 into byte d (low,
  high), other blocks columns 2j, 2j + 1 into byte j (low, high).
"""

import numpy as np


def cuda_pack(q, inner_k_tiles):
    n, k = q.shape
    assert k % (inner_k_tiles * 16) == 0 and inner_k_tiles in (2, 4, 8)
    q = q.astype(np.uint8)
    uint8 = (q[:, ::2] << 4) | q[:, 1::2]               # [n][k / 2]
    n_tiles, k_super = -(-n // 8), k // (inner_k_tiles * 16)
    out = np.zeros((n_tiles, k_super, 32, inner_k_tiles // 2), np.uint32)
    for k_outer in range(k_super):                      # blockIdx.x
        for n_tile in range(n_tiles):                   # blockIdx.y
            for t in range(32):                         # threadIdx.x
                for inner in range(0, inner_k_tiles, 2):
                    n0 = n_tile * 8 + t // 4
                    base0 = (k_outer * inner_k_tiles + inner) * 16 // 2
                    base1 = base0 + 16 // 2
                    ks = [base0 + t % 4, base0 + t % 4 + 4, base1 + t % 4, base1 + t % 4 + 4]
                    v = [int(uint8[n0, kk]) if n0 < n and kk < k // 2 else 0 for kk in ks]
                    pack = (((v[3] & 0xF) << 28) | ((v[2] & 0xF) << 24) | ((v[1] & 0xF) << 20)
                            | ((v[0] & 0xF) << 16) | ((v[3] & 0xF0) << 8) | ((v[2] & 0xF0) << 4)
                            | (v[1] & 0xF0) | ((v[0] & 0xF0) >> 4))
                    out[n_tile, k_outer, t, inner // 2] = pack
    return out.view(np.int32)


CPU_CAPABILITIES = {"avx512": (64, True), "avx2": (32, True), "default": (32, False)}

# The instruction sets each capability's kernels need, as torch's cpuinfo
# checks them. Forced through ATEN_CPU_CAPABILITY, torch does not check: it
# runs those kernels and dies of SIGILL on a CPU without them.
CPU_CAPABILITY_FLAGS = {"avx512": {"avx512vl", "avx512bw", "avx512dq", "fma"}, "avx2": {"avx2", "fma"}, "default": set()}


def cpu_runs(capability):
    """Whether this machine's CPU has what `capability`'s kernels execute (Linux /proc/cpuinfo)."""
    needed = CPU_CAPABILITY_FLAGS[capability]
    if not needed:
        return True
    try:
        with open("/proc/cpuinfo") as info:
            flags = next((line.split(":", 1)[1].split() for line in info if line.startswith("flags")), [])
    except OSError:
        return False
    return needed <= set(flags)


def cpu_pack(q, capability):
    block, interleaved = CPU_CAPABILITIES[capability]
    n, k = q.shape
    assert n % 16 == 0 and k % 2 == 0
    q = q.astype(np.uint8)
    out = np.zeros(n * k // 2, np.uint8)
    for b in range(-(-n // block)):
        width = min(block, n - b * block)
        src = q[b * block:b * block + width]
        dst = out[b * block * k // 2:(b * block + width) * k // 2].reshape(k, width // 2)
        if interleaved and width == block:
            half = block // 2
            dst[:] = (src[half:].T << 4) | src[:half].T
        else:
            dst[:] = (src[1::2].T << 4) | src[0::2].T
    return out.reshape(n, k // 2)


def dequantised(q, scales_and_zeros, group_size):
    """W[n][k] = (q - 8) * scale + zero, float64, from [k / group][n][2]."""
    n, k = q.shape
    groups = np.arange(k) // group_size
    scale = scales_and_zeros[groups, :, 0].T           # [n][k]
    zero = scales_and_zeros[groups, :, 1].T
    return (q.astype(np.float64) - 8) * scale + zero
