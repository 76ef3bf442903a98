"""Computes the torch references of tests/support/torch_reference.py, in a
Python with torch (never in the test process):

    python torch_reference_worker.py FOLDER DEVICE

FOLDER holds calls.json (a list of {"op", "arrays", "options"}) and
inputs.npz (call i's operand NAME under "i.NAME"); the outputs go to
FOLDER/outputs.npz, call i's under "i", as float32 (float64 for a float64
call). DEVICE is "cuda" or "cpu". Exit status 3, with a line "SKIP: why",
when torch cannot be imported or, for "cuda", sees no GPU. Needs numpy and
torch only.
"""

import json
import os
import sys

import numpy as np

# The exit status that says torch is not there to compute (torch_reference
# skips the calling test); anything else non-zero is a failure.
SKIP_STATUS = 3


def expanded(values, nd):
    """A stride, padding... of one value for every spatial dimension, or nd values."""
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    return tuple(values * nd if len(values) == 1 else values)


def tensor(torch, array, dtype, device):
    t = torch.from_numpy(np.ascontiguousarray(array)).to(device)
    return t if t.dtype == torch.bool else t.to(getattr(torch, dtype))


def channels_last(torch, t):
    if t.dim() == 4:
        return t.contiguous(memory_format=torch.channels_last)
    if t.dim() == 5:
        return t.contiguous(memory_format=torch.channels_last_3d)
    return t


def run(torch, call, arrays, device):
    import torch.nn.functional as F

    options = dict(call["options"])
    dtype = options.pop("dtype", "float32")
    torch.backends.cudnn.allow_tf32 = options.pop("allow_tf32", True)
    to_channels_last = options.pop("channels_last", False)
    t = {name: tensor(torch, array, dtype, device) for name, array in arrays.items()}
    if call["op"] in ("conv", "conv_transpose"):
        x, w = t["x"], t["w"]
        if to_channels_last:
            x, w = channels_last(torch, x), channels_last(torch, w)
        nd = x.dim() - 2
        kwargs = {key: expanded(options[key], nd) for key in ("stride", "padding", "dilation", "output_padding")
                  if key in options}
        kwargs["groups"] = options.get("groups", 1)
        if call["op"] == "conv":
            kwargs.pop("output_padding", None)
        op = getattr(F, f"{call['op']}{nd}d")
        return op(x, w, t.get("b"), **kwargs)
    if call["op"] == "sdpa":
        kwargs = {"attn_mask": t.get("mask"), "is_causal": options.get("is_causal", False),
                  "scale": options.get("scale")}
        if options.get("enable_gqa"):
            kwargs["enable_gqa"] = True
        return F.scaled_dot_product_attention(t["q"], t["k"], t["v"], **kwargs)
    raise ValueError(f"unknown op {call['op']!r}")


def main(folder, device):
    try:
        import torch
    except ImportError as e:
        print(f"SKIP: torch cannot be imported by {sys.executable}: {e}")
        return SKIP_STATUS
    if device == "cuda" and not torch.cuda.is_available():
        print(f"SKIP: torch {torch.__version__} of {sys.executable} sees no CUDA GPU")
        return SKIP_STATUS
    with open(os.path.join(folder, "calls.json")) as f:
        calls = json.load(f)
    outputs = {}
    with np.load(os.path.join(folder, "inputs.npz")) as inputs, torch.no_grad():
        for i, call in enumerate(calls):
            arrays = {name: inputs[f"{i}.{name}"] for name in call["arrays"]}
            out = run(torch, call, arrays, device)
            out = out if out.dtype == torch.float64 else out.float()
            outputs[str(i)] = out.cpu().contiguous().numpy()
    np.savez(os.path.join(folder, "outputs.npz"), **outputs)
    return 0


if __name__ == "__main__":
    # Run as a script, this folder comes first on sys.path, and its modules
    # (helpers, shims...) before any of the same name that torch may import.
    if os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]
    sys.exit(main(sys.argv[1], sys.argv[2]))
