"""Sizes and weights layouts of the encoder/decoder example models.

Shared by :mod:`aotirt.models` (which checks a weights file's size before
handing it to a library: the C ABI passes no size) and
:mod:`aotirt.reference`. The models (cuda_src/models/pipeline.h, encoder.cpp,
decoder.cpp) and the generator (cuda_src/models/make_weights.py) have the
same numbers; a test checks that they agree.

A weights file is the float32 values of its tensors, little-endian,
row-major, concatenated in the order below, with nothing else. The libraries
list the same constants, in the same order, by name (a test checks it).
"""

T = 64     # frames per utterance
F = 80     # features per frame
D = 256    # model width
H = 512    # width of the decoder's MLP
V = 1024   # vocabulary
LAYER_NORM_EPS = 1e-5

LAYOUT = {
    "encoder": [
        ("conv_w", (D, F, 3)),
        ("conv_b", (D,)),
        ("lin_w", (D, D)),
        ("lin_b", (D,)),
        ("gamma", (D,)),
        ("beta", (D,)),
    ],
    "decoder": [
        ("embedding", (V, D)),
        ("wq", (D, D)),
        ("wk", (D, D)),
        ("wv", (D, D)),
        ("w1", (D, H)),
        ("b1", (H,)),
        ("w2", (H, V)),
        ("b2", (V,)),
    ],
}


def count(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def nbytes(name):
    """Size in bytes of model `name`'s weights file."""
    return 4 * sum(count(shape) for _tensor, shape in LAYOUT[name])


def split(name, blob):
    """Model `name`'s weights blob (a buffer of exactly :func:`nbytes`
    bytes) as ``{tensor: float32 array}`` in layout order, each a view of
    `blob` (writable when `blob` is)."""
    import numpy as np

    flat = np.frombuffer(blob, dtype="<f4")
    out = {}
    offset = 0
    for tensor, shape in LAYOUT[name]:
        n = count(shape)
        out[tensor] = flat[offset:offset + n].reshape(shape)
        offset += n
    return out
