"""The zoo's models written to reach one op each (issue 18), as users write
them: top-k sampling, top-p sampling (argsort), torch.cond, scatters, and an
int4 weight-only linear through torch's own quantisation ops. Imported by
zoo.py (torch processes only).

Sampling takes its uniform random numbers as an input, so that the sampled
token ids are a function of the inputs, exactly comparable with torch eager.
"""

import torch


def _inverse_cdf(probs, uniform):
    """The index of the first cumulative probability above `uniform`: one
    sample per row of `probs` [B, k] for `uniform` [B, 1] in [0, 1)."""
    below = (probs.cumsum(-1) < uniform * probs.sum(-1, keepdim=True)).sum(-1, keepdim=True)
    return below.clamp(max=probs.shape[-1] - 1)


class TopKSampling(torch.nn.Module):
    """Top-k sampling as a decoder's last step: the k largest logits
    (aten.topk), their softmax at a temperature, one token per row by
    inverse-CDF sampling. Outputs: token ids int64 [B, 1], the top-k
    probabilities [B, k]."""

    def __init__(self, k=50, temperature=0.7):
        super().__init__()
        self.k, self.temperature = k, temperature

    def forward(self, logits, uniform):
        values, indices = logits.topk(self.k, dim=-1)
        probs = torch.softmax(values / self.temperature, dim=-1)
        return indices.gather(-1, _inverse_cdf(probs, uniform)), probs


class TopPSampling(torch.nn.Module):
    """Nucleus (top-p) sampling: the logits ordered by torch.argsort
    (aten.sort), the smallest prefix whose probability reaches p kept, one
    token per row by inverse-CDF sampling. Outputs: token ids int64 [B, 1],
    the order int64 [B, V], the kept probabilities [B, V]."""

    def __init__(self, p=0.9):
        super().__init__()
        self.p = p

    def forward(self, logits, uniform):
        order = torch.argsort(logits, dim=-1, descending=True)
        probs = torch.softmax(logits.gather(-1, order), dim=-1)
        before = probs.cumsum(-1) - probs                # the mass ahead of each entry
        kept = torch.where(before < self.p, probs, torch.zeros_like(probs))
        return order.gather(-1, _inverse_cdf(kept, uniform)), order, kept


class CondBranches(torch.nn.Module):
    """torch.cond on a predicate computed on the device: the same cond
    twice, once taking each branch, so that one run runs both."""

    def __init__(self, d=64):
        super().__init__()
        self.up = torch.nn.Linear(d, d)
        self.down = torch.nn.Linear(d, d)

    def forward(self, x):
        def grow(t):
            return torch.relu(self.up(t)) + t

        def shrink(t):
            return torch.tanh(self.down(t)) * 0.5

        positive = x.mean() > 0
        return torch.cond(positive, grow, shrink, (x,)), torch.cond(~positive, grow, shrink, (x,))


class ScatterOps(torch.nn.Module):
    """The scatters models use: scatter_add (a float sum, order-free within
    tolerance), index_put with accumulate on int64 (a histogram: exact),
    scatter of a source along a permutation (no duplicate index, so exact)
    and scatter_reduce amax."""

    def __init__(self, bins=64):
        super().__init__()
        self.bins = bins

    def forward(self, src, index, ids, perm):
        summed = torch.zeros(src.shape[0], self.bins, dtype=src.dtype, device=src.device).scatter_add(1, index, src)
        counts = torch.zeros(self.bins, dtype=torch.int64, device=src.device).index_put(
            (ids,), torch.ones_like(ids), accumulate=True)
        placed = torch.zeros_like(src).scatter(1, perm, src * 2.0)
        largest = torch.full((src.shape[0], self.bins), -1.0, dtype=src.dtype, device=src.device).scatter_reduce(
            1, index, src, reduce="amax", include_self=False)
        return summed, counts, placed, largest


class Int4WeightOnlyLinear(torch.nn.Module):
    """A weight-only int4 linear layer as torch's own quantisation ops give
    it (what torchao's int4 weight-only quantisation calls):
    y = silu(x @ dequantize(W).T + b), W [N, K] quantised in groups of
    `group` along K to 4 bits (asymmetric: (q - 8) * scale + zero).

    The packed layout depends on the device (aten._convert_weight_to_int4pack
    on CUDA, aten._convert_weight_to_int4pack_for_cpu on the CPU), so the
    weight is packed by pack_for(device), which build.py calls once the
    module is on its device; until then the module holds the 4-bit values."""

    def __init__(self, k=512, n=1024, group=128, inner_k_tiles=8):
        super().__init__()
        self.group, self.inner_k_tiles = group, inner_k_tiles
        weight = torch.randn(n, k, generator=torch.Generator().manual_seed(7)) * 0.05
        grouped = weight.reshape(n, k // group, group)
        low, high = grouped.amin(-1, keepdim=True), grouped.amax(-1, keepdim=True)
        scale = ((high - low) / 15).clamp(min=1e-6)
        q = ((grouped - low) / scale).round().clamp(0, 15).to(torch.int32).reshape(n, k)
        zero = low + 8 * scale
        self.register_buffer("q", q)
        # [K / group, N, 2]: (scale, zero) per group and output row, torch's layout.
        self.register_buffer("scales_and_zeros", torch.cat([scale, zero], -1).transpose(0, 1).contiguous())
        self.bias = torch.nn.Parameter(torch.randn(n, generator=torch.Generator().manual_seed(8)) * 0.1)
        self.device_type = None

    @torch.no_grad()
    def pack_for(self, device):
        q = self.q.to(device)
        if torch.device(device).type == "cuda":
            pairs = (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8)          # two 4-bit values per byte
            packed = torch.ops.aten._convert_weight_to_int4pack(pairs, self.inner_k_tiles)
        else:
            packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q, self.inner_k_tiles)
        del self.q
        self.register_buffer("packed", packed)
        self.device_type = torch.device(device).type

    def forward(self, x):
        if self.device_type is None:
            raise RuntimeError("Int4WeightOnlyLinear: call pack_for(device) once the module is on its device")
        mm = torch.ops.aten._weight_int4pack_mm if self.device_type == "cuda" else \
            torch.ops.aten._weight_int4pack_mm_for_cpu
        return torch.nn.functional.silu(mm(x, self.packed, self.group, self.scales_and_zeros) + self.bias)
