"""Callers of the CUDA SDPA shims (efficient, cuDNN, flash) for tests: each
takes handles from support.shims and returns what the shim gave back."""

import ctypes

from support.shims import F64, I32, I64, H, P, dense, last_error, out_handles, owned, shim

EFFICIENT = shim("aoti_torch_cuda__scaled_dot_product_efficient_attention",
                 H, H, H, P, I32, F64, I32, P, P, P, P, P)
CUDNN = shim("aoti_torch_cuda__scaled_dot_product_cudnn_attention",
             H, H, H, P, I32, F64, I32, I32, P, P, P, P, P, P, P, P, P, P)
FLASH = shim("aoti_torch_cuda__scaled_dot_product_flash_attention",
             H, H, H, F64, I32, I32, P, P, P, P, P, P, P, P, P, P)
NEW_HANDLE = shim("aoti_torch_new_tensor_handle", H, ctypes.POINTER(H))


def _bias(bias):
    return ctypes.byref(H(bias.ptr.value)) if bias is not None else None


def _scale(scale):
    return ctypes.byref(F64(scale)) if scale is not None else None


class Result:
    """What a shim returned: status, tensor handles by index, ints by index."""

    def __init__(self, status, handles, ints=()):
        self.status, self.handles, self.ints = status, handles, list(ints)

    def ok(self):
        assert self.status == 0, last_error()
        return self

    @property
    def out(self):
        return self.handles[0]

    @property
    def lse(self):
        return self.handles[1]


def efficient(q, k, v, bias=None, lse=True, causal=False, scale=None, dropout=0.0):
    slots = out_handles(4)
    status = EFFICIENT(q.ptr, k.ptr, v.ptr, _bias(bias), int(lse), dropout, int(causal), _scale(scale),
                       *[ctypes.byref(s) for s in slots])
    return Result(status, owned(slots))


def _nine(status_of, optional, nullable):
    """Calls a shim with the 9 outputs of the cuDNN and flash ops: handles
    0-3 and 6-8, ints 4-5. Those `nullable` (None in torch's meta function)
    get NULL unless `optional`, as generated code passes them."""
    slots = out_handles(9)
    ints = [I64(-1), I64(-1)]
    rets = []
    for i in range(9):
        if i in (4, 5):
            rets.append(ctypes.byref(ints[i - 4]))
        elif i in nullable and not optional:
            rets.append(None)
        else:
            rets.append(ctypes.byref(slots[i]))
    status = status_of(rets)
    return Result(status, owned(slots), [i.value for i in ints])


def cudnn(q, k, v, bias=None, causal=False, scale=None, dropout=0.0, debug=False, optional=False):
    return _nine(lambda rets: CUDNN(q.ptr, k.ptr, v.ptr, _bias(bias), 1, dropout, int(causal), int(debug),
                                    _scale(scale), *rets), optional, (2, 3, 8))


def flash(q, k, v, causal=False, scale=None, dropout=0.0, debug=False, optional=False):
    return _nine(lambda rets: FLASH(q.ptr, k.ptr, v.ptr, dropout, int(causal), int(debug), _scale(scale), *rets),
                 optional, (2, 3))


def inputs(rng, dtype, B, H_, L, S, E, Ev, Hk=None, device="cuda:0"):
    """Random query, key and value handles (with their float64 values)."""
    Hk = Hk or H_
    q = dense(rng.standard_normal((B, H_, L, E)), device, dtype)
    k = dense(rng.standard_normal((B, Hk, S, E)), device, dtype)
    v = dense(rng.standard_normal((B, Hk, S, Ev)), device, dtype)
    return q, k, v
