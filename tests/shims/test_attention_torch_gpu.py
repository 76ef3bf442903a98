"""The CUDA SDPA shims (efficient, cuDNN, flash) against torch's own
torch.nn.functional.scaled_dot_product_attention on the GPU, with the same
arguments and the same values, computed in a torch process of its own
(tests/support/torch_reference.py; this process never imports torch),
every reference of this file in one call. test_attention_gpu.py,
test_attention_cudnn_gpu.py and test_attention_cublas_gpu.py check the
shims' numerics against float64 numpy; this file checks that they mean by
causal, a mask, a scale and grouped-query heads (enable_gqa) what torch
does, at the lengths and head sizes models use.

float16 and bfloat16 run on cuDNN's fused attention where it takes the
call, float32 on cuBLAS. Errors are max |out - ref| / max |ref|
(support.torch_reference.max_error):
- float16 and bfloat16: 2e-2. Each side rounds its output to the dtype
  (2^-11 and 2^-8 relative) and, as flash attention does, the
  probabilities before the second matrix product, in its own order.
- float32: 1e-3. Neither side uses TF32 here (torch's
  torch.backends.cuda.matmul.allow_tf32 is False by default, and aotirt's
  cuBLAS attention computes in float32); both come within about 1e-5 of the
  exact result, so 1e-3 holds any mismatch in meaning to account while
  leaving room for summation orders over 1024 keys.

Causal masks are top-left (key j <= query i), torch's is_causal; the flash
shim aligns to the bottom right (as torch's flash op does), so it is
compared only where the two agree (L == S) and, taking no mask, only
without one. torch takes no mask with is_causal, so masks are not causal.
"""

import numpy as np
import pytest

from support.attention_shims import cudnn, efficient, flash
from support.gpu_shim_tests import DEV
from support.shims import dense, layout, read, rounded
from support.torch_reference import Call, compute, max_error

pytestmark = pytest.mark.gpu
TOLERANCE = {"float32": 1e-3, "float16": 2e-2, "bfloat16": 2e-2}
DTYPES = ["float16", "bfloat16", "float32"]

CASES = {  # name: B, H, Hk (key/value heads), L, S, E (head size), causal, mask, scale
    "L1024_E64": (1, 8, 8, 1024, 1024, 64, False, None, None),
    "L1024_E64_causal": (1, 8, 8, 1024, 1024, 64, True, None, None),
    "L1024_E128_causal": (1, 4, 4, 1024, 1024, 128, True, None, None),
    "L256_S512_E128": (2, 4, 4, 256, 512, 128, False, None, None),
    "L128_S384_E64_causal": (1, 4, 4, 128, 384, 64, True, None, None),     # top-left with more keys
    "gqa_L512_E128_causal": (2, 8, 2, 512, 512, 128, True, None, None),
    "gqa_L200_S300_E64_additive_mask": (1, 8, 4, 200, 300, 64, False, "additive", None),
    "L200_S300_E64_additive_mask": (1, 8, 8, 200, 300, 64, False, "additive", None),
    "L64_S1000_E64_bool_mask": (2, 4, 4, 64, 1000, 64, False, "bool", None),
    "gqa_decode_step_S1024_E128": (2, 8, 2, 1, 1024, 128, False, None, None),   # one query row
    "L77_E64_scale_causal": (1, 2, 2, 77, 77, 64, True, None, 0.3),
}
OPS = {"efficient": efficient, "cudnn": cudnn, "flash": flash}


def flash_takes(case):
    _, _, _, L, S, _, causal, mask, _ = CASES[case]
    return mask is None and (not causal or L == S)


PARAMS = [(op, case, dtype) for case in CASES for dtype in DTYPES for op in OPS if op != "flash" or flash_takes(case)]


def operands(case, dtype):
    """q, k, v and the mask (or None) of a case: float64 values rounded to
    `dtype`; a bool mask (True attends) keeps key 0 for every query, so that
    no row is masked out entirely (what such a row gives differs between
    torch's backends)."""
    B, H, Hk, L, S, E, _, mask, _ = CASES[case]
    rng = np.random.default_rng(list(CASES).index(case) * 10 + DTYPES.index(dtype))
    q = rounded(rng.standard_normal((B, H, L, E)), dtype)
    k = rounded(rng.standard_normal((B, Hk, S, E)), dtype)
    v = rounded(rng.standard_normal((B, Hk, S, E)), dtype)
    if mask == "bool":
        keep = rng.random((B, 1, L, S)) > 0.5
        keep[..., 0] = True
        return q, k, v, keep
    if mask == "additive":   # an additive bias of the query's dtype, as cuDNN takes it
        return q, k, v, rounded(rng.standard_normal((L, S)), dtype)
    return q, k, v, None


@pytest.fixture(scope="module")
def torch_outputs(tmp_path_factory):
    keys = [(case, dtype) for case in CASES for dtype in DTYPES]
    calls = []
    for case, dtype in keys:
        _, H, Hk, _, _, _, causal, _, scale = CASES[case]
        q, k, v, mask = operands(case, dtype)
        options = {"dtype": dtype, "is_causal": causal, "scale": scale, "enable_gqa": Hk != H}
        calls.append(Call("sdpa", {"q": q, "k": k, "v": v, "mask": mask}, options))
    return dict(zip(keys, compute(calls, tmp_path_factory.mktemp("torch_sdpa"), device="cuda")))


@pytest.mark.parametrize(("op", "case", "dtype"), PARAMS, ids=[f"{op}-{case}-{dtype}" for op, case, dtype in PARAMS])
def test_matches_torch(op, case, dtype, torch_outputs):
    _, _, _, _, _, _, causal, _, scale = CASES[case]
    q, k, v, mask = operands(case, dtype)
    handles = [dense(a, DEV, dtype)[0] for a in (q, k, v)]
    kwargs = {"causal": causal, "scale": scale}
    if mask is not None:
        kwargs["bias"] = dense(mask, DEV, None if mask.dtype == np.bool_ else dtype)[0]
    result = OPS[op](*handles, **kwargs).ok()
    assert layout(result.out)[2:] == (dtype, 1)
    want = torch_outputs[(case, dtype)]
    assert max_error(read(result.out), want) < TOLERANCE[dtype]


def test_float32_mask_without_logsumexp_matches_torch(torch_outputs):
    """A float32 additive mask over plain heads with no log-sum-exp wanted,
    as a transformers model's inference asks for it: CUTLASS's fused kernel
    with its bias (test_attention_fmha_gpu.py checks which path runs)."""
    case, dtype = "L200_S300_E64_additive_mask", "float32"
    q, k, v, mask = operands(case, dtype)
    handles = [dense(a, DEV, dtype)[0] for a in (q, k, v)]
    result = efficient(*handles, bias=dense(mask, DEV, dtype)[0], lse=False).ok()
    assert max_error(read(result.out), torch_outputs[(case, dtype)]) < TOLERANCE[dtype]
