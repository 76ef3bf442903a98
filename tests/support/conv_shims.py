"""The caller of aoti_torch_cuda_convolution for tests: it takes handles
from support.shims and passes them as generated code does."""

import ctypes

from support.shims import I32, I64, H, P, owned, shim

CONV = shim("aoti_torch_cuda_convolution", H, H, P, P, I64, P, I64, P, I64, I32, P, I64, I64, P)


def ints(values):
    return (I64 * max(len(values), 1))(*values), len(values)


def conv(x, w, b=None, stride=(1,), padding=(0,), dilation=(1,), groups=1, transposed=False, output_padding=(0,)):
    """Calls the shim; returns (status, output handle or None)."""
    out = H()
    s, p, d, op = ints(stride), ints(padding), ints(dilation), ints(output_padding)
    bias = ctypes.byref(H(b.ptr.value)) if b is not None else None
    status = CONV(x.ptr, w.ptr, bias, s[0], s[1], p[0], p[1], d[0], d[1], int(transposed), op[0], op[1], groups,
                  ctypes.byref(out))
    return status, owned([out])[0]
