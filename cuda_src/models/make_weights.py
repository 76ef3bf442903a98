#!/usr/bin/env python3
"""Writes the weights of the encoder and decoder example models.

    python3 make_weights.py OUT_DIR      # writes OUT_DIR/encoder.weights, OUT_DIR/decoder.weights

Pure standard library (setup.py runs it at build time, before anything is
installed). The values are deterministic: normal draws from
random.Random(seed), scaled by 1/sqrt(fan_in) so that activations stay of
order one through the layers.

File format: the float32 values of the tensors below, little-endian,
row-major, concatenated in the order listed, with nothing else (no header):
that is the blob AOTInductorModelUpdateConstantsFromBlob receives. The shapes
must match the models (cuda_src/models/encoder.cpp, decoder.cpp) and
aotirt/_layout.py; a test checks that they do.

encoder (seed 1): frames [T, F] -> hidden [T, D]
    conv_w  [D, F, 3]  conv1d weight (out channel, in channel, tap)
    conv_b  [D]
    lin_w   [D, D]     linear, applied as x @ lin_w ([in, out])
    lin_b   [D]
    gamma   [D]        layer norm scale
    beta    [D]        layer norm shift

decoder (seed 2): hidden [T, D], token [1] -> logits [V], next_token [1]
    embedding [V, D]
    wq, wk, wv [D, D]  each applied as x @ w
    w1 [D, H], b1 [H]
    w2 [H, V], b2 [V]
"""

import math
import os
import random
import sys
from array import array

T, F, D, H, V = 64, 80, 256, 512, 1024

# model -> [(tensor, shape, distribution, scale)], in file order. "normal" is
# scale * N(0, 1); "one_plus_normal" is 1 + scale * N(0, 1).
LAYOUT = {
    "encoder": [
        ("conv_w", (D, F, 3), "normal", 1 / math.sqrt(3 * F)),
        ("conv_b", (D,), "normal", 0.1),
        ("lin_w", (D, D), "normal", 1 / math.sqrt(D)),
        ("lin_b", (D,), "normal", 0.1),
        ("gamma", (D,), "one_plus_normal", 0.1),
        ("beta", (D,), "normal", 0.1),
    ],
    "decoder": [
        ("embedding", (V, D), "normal", 1.0),
        ("wq", (D, D), "normal", 1 / math.sqrt(D)),
        ("wk", (D, D), "normal", 1 / math.sqrt(D)),
        ("wv", (D, D), "normal", 1 / math.sqrt(D)),
        ("w1", (D, H), "normal", 1 / math.sqrt(D)),
        ("b1", (H,), "normal", 0.1),
        ("w2", (H, V), "normal", 1 / math.sqrt(H)),
        ("b2", (V,), "normal", 0.1),
    ],
}
SEEDS = {"encoder": 1, "decoder": 2}


def values(name):
    """The model's weights as one array('f'), in file order."""
    rng = random.Random(SEEDS[name])
    out = array("f")
    for _tensor, shape, kind, scale in LAYOUT[name]:
        count = math.prod(shape)
        offset = 1.0 if kind == "one_plus_normal" else 0.0
        out.extend(offset + scale * rng.gauss(0.0, 1.0) for _ in range(count))
    return out


def write(name, folder):
    data = values(name)
    if sys.byteorder != "little":
        data.byteswap()
    path = os.path.join(folder, f"{name}.weights")
    # Written beside and renamed: a build that is interrupted never leaves a
    # truncated file that looks up to date.
    partial = path + ".partial"
    with open(partial, "wb") as f:
        data.tofile(f)
    os.replace(partial, path)
    return path


def main(argv):
    if len(argv) != 2:
        sys.exit(f"usage: {argv[0]} OUT_DIR")
    os.makedirs(argv[1], exist_ok=True)
    for name in LAYOUT:
        print(write(name, argv[1]))


if __name__ == "__main__":
    main(sys.argv)
