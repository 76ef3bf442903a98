"""Scaled dot-product attention in float64 numpy, the tests' reference, and
the layouts torch's meta functions give the SDPA ops' outputs."""

import numpy as np


def sdpa(q, k, v, bias=None, causal=None, scale=None):
    """(out, lse) of softmax(scale * q k^T + bias, causal) v, in float64.

    q [B, H, L, E]; k, v [B, Hk, S, E|Ev] with H a multiple of Hk (query head
    h reads key/value head h // (H // Hk)); bias broadcasts to [B, H, L, S]
    (bool: True attends); causal None, "top_left" (key j <= row i) or
    "bottom_right" (j <= i + S - L). Rows with every key masked out give
    zeros and a log-sum-exp of 0, as torch's CPU and efficient kernels do.
    """
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    if scale is None:
        scale = 1.0 / np.sqrt(q.shape[-1])
    s = q @ np.swapaxes(k, -1, -2) * scale
    if bias is not None:
        bias = np.asarray(bias)
        s = np.where(bias, s, -np.inf) if bias.dtype == np.bool_ else s + bias.astype(np.float64)
    L, S = s.shape[-2:]
    if causal:
        offset = 0 if causal == "top_left" else S - L
        keep = np.arange(S)[None, :] <= np.arange(L)[:, None] + offset
        s = np.where(keep, s, -np.inf)
    top = s.max(axis=-1, keepdims=True) if S else np.full(s.shape[:-1] + (1,), -np.inf)
    top = np.where(np.isneginf(top), 0.0, top)
    p = np.exp(s - top)
    total = p.sum(axis=-1, keepdims=True)
    out = (p @ v) / np.where(total == 0, 1.0, total)
    lse = np.where(total == 0, 0.0, top + np.log(np.where(total == 0, 1.0, total)))[..., 0]
    return out, lse


def relative_error(out, ref):
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    norm = np.linalg.norm(ref)
    return float(np.linalg.norm(out - ref) / (norm if norm else 1.0))


# Query layouts, as (name, element strides of a [B, H, L, E] view over a
# base array, elements in that base), and the output strides torch 2.13's
# meta functions give each for B, H, L, E = 2, 3, 5, 8 (computed with
# torch.ops.aten._scaled_dot_product_*_attention on meta tensors; value head
# size 8, and 10 where the op allows another).
B, H, L, E = 2, 3, 5, 8
QUERY_LAYOUTS = {
    # contiguous [B, H, L, E]
    "contiguous": ((H * L * E, L * E, E, 1), B * H * L * E),
    # [B, L, H, E] memory, transposed: what a batch-first projection gives
    "blhe": ((L * H * E, E, H * E, 1), B * H * L * E),
    # q of a packed qkv projection [B, L, 3, H, E]: not dense
    "packed_qkv": ((L * 3 * H * E, E, 3 * H * E, 1), B * L * 3 * H * E),
    # [L, B, H, E] memory (sequence first)
    "lbhe": (((H * E), E, B * H * E, 1), B * H * L * E),
}
# torch.empty_like(query): the flash ops (CPU and CUDA) and cuDNN when the
# output has the query's shape.
EMPTY_LIKE = {
    "contiguous": (120, 40, 8, 1),
    "blhe": (120, 8, 24, 1),
    "packed_qkv": (120, 8, 24, 1),
    "lbhe": (24, 8, 48, 1),
}
# The cuDNN op's output with value head size 10 (another shape than the query's).
CUDNN_EV10 = {
    "contiguous": (150, 50, 10, 1),
    "blhe": (150, 10, 30, 1),
    "packed_qkv": (150, 10, 30, 1),
    "lbhe": (30, 10, 60, 1),
}
# The efficient op's output, whatever the query: torch.empty(B, L, H, Ev).transpose(1, 2).
EFFICIENT_EV10 = (150, 10, 30, 1)
