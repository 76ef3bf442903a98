"""Calling the scatter and index_put shims through ctypes (tests/support/shims.py
makes the operands), the cases the CPU and GPU tests share, and numpy's
reference of each.

Values are small integers, so every sum, product and maximum is exact in
every dtype (bfloat16 holds integers to 256) and the order in which repeated
targets combine cannot change a result; mean's one rounding is the
division's, which the reference rounds the same way."""

import ctypes

import numpy as np

from support.shims import F64, I32, I64, H, P, dense, last_error, owned, read, rounded, shim

C_STR = ctypes.c_char_p
DEVICES = ("cpu", "cuda")
SCATTER_SRC = {d: shim(f"aoti_torch_{d}_scatter_src_out", H, H, I64, H, H) for d in DEVICES}
SCATTER_VALUE = {d: shim(f"aoti_torch_{d}_scatter_value_out", H, H, I64, H, F64) for d in DEVICES}
SCATTER_REDUCE = {d: shim(f"aoti_torch_{d}_scatter_reduce_two_out", H, H, I64, H, H, C_STR, I32) for d in DEVICES}
INDEX_PUT_NEW = {d: shim(f"aoti_torch_{d}_index_put", H, P, I64, H, I32, P) for d in DEVICES}
SCATTER_OUT = shim("aoti_torch_scatter_out", H, H, I64, H, H)
SCATTER_REDUCE_OUT = shim("aoti_torch_scatter_reduce_out", H, H, I64, H, H, C_STR, I32)
INDEX_PUT_OUT = shim("aoti_torch_index_put_out", H, H, P, ctypes.c_uint32, H, ctypes.c_bool)

FLOATING = ("float32", "float16", "bfloat16", "float64")
DTYPES = FLOATING + ("int64", "int32", "int16", "int8", "uint8", "bool")


def values_of(shape, dtype, rng, low=-3, high=4):
    """Small integers (0/1 for bool, non-negative for uint8) as a numpy array of `dtype`'s storage."""
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    data = rng.integers(0 if dtype == "uint8" else low, high, shape)
    return data.astype(np.float32 if dtype == "bfloat16" else dtype)


def operand(array, device, dtype):
    """A handle of `array` on `device` (bfloat16 from float data)."""
    handle, _ = dense(array, device, "bfloat16" if dtype == "bfloat16" else None)
    return handle


class Call:
    """One shim call's operands on one device: self, out (a fresh tensor, or self)."""

    def __init__(self, device, self_array, dtype, out_is_self=False):
        self.device, self.dtype = device, dtype
        self.self = operand(self_array, device, dtype)
        self.out = self.self if out_is_self else operand(np.zeros_like(self_array), device, dtype)
        self.keep = []

    def tensor(self, array, dtype=None):
        h = operand(np.asarray(array), self.device, dtype or self.dtype)
        self.keep.append(h)
        return h

    def result(self):
        return read(self.out)


def scatter(device, self_array, dim, index, src=None, value=None, reduce=None, include_self=True, dtype="float32",
            index_dtype="int64", out_is_self=False, door=None):
    """(status, call) of one scatter shim call; call.result() reads out."""
    c = Call(device, self_array, dtype, out_is_self)
    idx = c.tensor(np.asarray(index).astype(index_dtype), index_dtype)
    if reduce is not None:
        fn = door or SCATTER_REDUCE[device]
        status = fn(c.out.ptr, c.self.ptr, dim, idx.ptr, c.tensor(src).ptr, reduce.encode(), int(include_self))
    elif value is not None:
        status = SCATTER_VALUE[device](c.out.ptr, c.self.ptr, dim, idx.ptr, value)
    else:
        status = (door or SCATTER_SRC[device])(c.out.ptr, c.self.ptr, dim, idx.ptr, c.tensor(src).ptr)
    return status, c


def index_put(device, self_array, indices, values, accumulate=False, dtype="float32", out_is_self=False):
    """(status, call) of aoti_torch_index_put_out; None entries of `indices` are full slices.
    An index's dtype is its numpy array's (int64, int32, bool)."""
    c = Call(device, self_array, dtype, out_is_self)
    handles = [None if i is None else c.tensor(i, np.asarray(i).dtype.name) for i in indices]
    array = (H * max(len(handles), 1))(*[h.ptr if h else None for h in handles])
    status = INDEX_PUT_OUT(c.out.ptr, c.self.ptr, array, len(handles), c.tensor(values).ptr, accumulate)
    return status, c


def index_put_new(device, self_handle, index_handles, values_handle, accumulate=False):
    """(status, owned result) of the functional aoti_torch_{device}_index_put."""
    slots = [ctypes.pointer(h.value) if h is not None else None for h in index_handles]
    array = (ctypes.POINTER(H) * max(len(slots), 1))(*slots)
    ret = H()
    status = INDEX_PUT_NEW[device](self_handle.ptr, array, len(slots), values_handle.ptr, int(accumulate),
                                   ctypes.byref(ret))
    return status, owned([ret])[0]


def expect_ok(status):
    assert status == 0, last_error()


# numpy's references.

def as_reference(array, dtype):
    """`array` as numpy computes with it: float64 for floating dtypes."""
    return np.asarray(array).astype(np.float64) if dtype in FLOATING else np.asarray(array).copy()


def identity(reduce, dtype):
    if reduce in ("sum", "mean"):
        return 0
    if dtype == "bool":
        return reduce in ("amin", "prod")
    if dtype in FLOATING:
        return {"prod": 1, "amax": -np.inf, "amin": np.inf}[reduce]
    info = np.iinfo(dtype)
    return {"prod": 1, "amax": info.min, "amin": info.max}[reduce]


def scatter_reference(self_array, dim, index, src=None, value=None, reduce=None, include_self=True, dtype="float32"):
    """torch's scatter/scatter_reduce.two, with numpy's ufunc.at on out's flat positions."""
    out = as_reference(self_array, dtype).reshape(-1 if np.ndim(self_array) else 1)
    shape = np.shape(self_array) or (1,)
    index = np.asarray(index).astype(np.int64).reshape(np.shape(index) or (1,))
    coords = list(np.indices(index.shape))
    coords[dim % len(shape)] = index
    targets = np.ravel_multi_index(tuple(coords), shape).ravel()
    if value is not None:
        vals = np.full(targets.shape, value)
    else:
        src = as_reference(src, dtype).reshape(np.shape(src) or (1,))
        vals = src[tuple(slice(0, n) for n in index.shape)].ravel()
    if dtype not in FLOATING:
        vals = vals.astype(out.dtype)
    if reduce is None:
        out[targets] = vals
    else:
        if not include_self:
            out[targets] = identity(reduce, dtype)
        ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}[reduce]
        ufunc.at(out, targets, vals)
        if reduce == "mean":
            counts = np.bincount(targets, minlength=out.size) + int(include_self)
            divide = np.floor_divide if dtype not in FLOATING else np.divide
            out = np.where(counts > 1, divide(out, np.maximum(counts, 1)), out).astype(out.dtype)
    out = out.reshape(np.shape(self_array))
    return rounded(out, dtype) if dtype in FLOATING else out


def index_put_reference(self_array, indices, values, accumulate=False, dtype="float32"):
    out = as_reference(self_array, dtype)
    key = tuple(slice(None) if i is None else np.asarray(i) for i in indices)
    vals = as_reference(values, dtype)
    if accumulate:
        np.add.at(out, key, vals)
    else:
        out[key] = vals
    return rounded(out, dtype) if dtype in FLOATING else out


# The cases, as keyword arguments of scatter() / scatter_reference() (self, index, src made from a seed).

def scatter_cases():
    rng = np.random.default_rng(7)
    cases = []
    for dtype in DTYPES:
        # Every target once (a permutation per row), the whole of self.
        index = np.argsort(rng.random((3, 5)), axis=1)
        cases.append(dict(name=f"src-{dtype}", dtype=dtype, self_array=values_of((3, 5), dtype, rng), dim=1,
                          index=index, src=values_of((3, 5), dtype, rng)))
        for reduce in ("sum", "prod", "mean", "amax", "amin"):
            if reduce == "mean" and dtype == "bool":
                continue
            for include_self in (True, False):
                high = 3 if reduce == "prod" else 4
                cases.append(dict(name=f"{reduce}-{include_self}-{dtype}", dtype=dtype, reduce=reduce,
                                  include_self=include_self, self_array=values_of((4, 3), dtype, rng, high=high),
                                  dim=0, index=rng.integers(0, 4, (3, 3)),
                                  src=values_of((5, 3), dtype, rng, low=-2, high=high)))
    # An index smaller than self and src in other dimensions, and along dim 0 of three.
    cases.append(dict(name="smaller-index", dtype="float32", self_array=values_of((4, 6, 2), "float32", rng), dim=-2,
                      index=np.stack([np.argsort(rng.random((6, 2)), axis=0)[:3] for _ in range(3)]),
                      src=values_of((5, 7, 2), "float32", rng)))
    cases.append(dict(name="int32-index", dtype="float64", index_dtype="int32",
                      self_array=values_of((2, 4), "float64", rng), dim=1, index=[[3, 1], [0, 2]],
                      src=values_of((2, 2), "float64", rng)))
    cases.append(dict(name="value-float", dtype="float16", self_array=values_of((3, 4), "float16", rng), dim=1,
                      index=[[0, 3], [2, 1], [1, 1]], value=2.5))
    cases.append(dict(name="value-int", dtype="int64", self_array=values_of((3, 4), "int64", rng), dim=0,
                      index=[[2, 0, 1, 0]], value=-2.75))
    cases.append(dict(name="value-bool", dtype="bool", self_array=np.zeros(5, bool), dim=0, index=[4, 1], value=0.5))
    cases.append(dict(name="zero-dim", dtype="float32", self_array=np.array(1.0, np.float32), dim=0,
                      index=np.array(0), src=np.array(5.0, np.float32)))
    cases.append(dict(name="empty-index", dtype="float32", self_array=values_of((2, 3), "float32", rng), dim=1,
                      index=np.zeros((0, 3)), src=values_of((2, 3), "float32", rng)))
    return cases


def index_put_cases():
    rng = np.random.default_rng(11)
    cases = []
    for dtype in DTYPES:
        cases.append(dict(name=f"rows-accumulate-{dtype}", dtype=dtype, self_array=values_of((5, 3), dtype, rng),
                          indices=[np.array([0, 4, 0, 2, 0])], values=values_of((5, 3), dtype, rng, low=0, high=3),
                          accumulate=True))
        cases.append(dict(name=f"rows-{dtype}", dtype=dtype, self_array=values_of((5, 3), dtype, rng),
                          indices=[np.array([3, -1, 0])], values=values_of((3,), dtype, rng)))
        # Rows of 16 elements (16-byte multiples for every dtype): CUDA's
        # whole-row path, with values per row and values broadcast over rows.
        cases.append(dict(name=f"wide-rows-{dtype}", dtype=dtype, self_array=values_of((6, 16), dtype, rng),
                          indices=[np.array([5, -2, 0], np.int32)], values=values_of((3, 16), dtype, rng)))
        cases.append(dict(name=f"wide-rows-broadcast-{dtype}", dtype=dtype, self_array=values_of((6, 16), dtype, rng),
                          indices=[np.array([1, 3])], values=values_of((16,), dtype, rng)))
    f32 = "float32"
    cases += [
        dict(name="adjacent-broadcast", dtype=f32, self_array=values_of((2, 4, 5), f32, rng),
             indices=[None, np.array([[0], [3]]), np.array([1, 4, 2])], values=values_of((2, 3), f32, rng)),
        dict(name="separated", dtype=f32, self_array=values_of((3, 4, 5), f32, rng),
             indices=[np.array([0, 2]), None, np.array([4, 1])], values=values_of((2, 4), f32, rng)),
        dict(name="separated-accumulate", dtype=f32, self_array=values_of((3, 4, 5), f32, rng),
             indices=[np.array([0, 0]), None, np.array([4, 4])], values=values_of((2, 1), f32, rng),
             accumulate=True),
        dict(name="wide-rows-3d", dtype=f32, self_array=values_of((4, 3, 8), f32, rng),
             indices=[np.array([3, 0]), np.array([2, 1])], values=values_of((2, 8), f32, rng)),
        dict(name="wide-rows-middle-slice", dtype=f32, self_array=values_of((4, 3, 8), f32, rng),
             indices=[np.array([2, 0])], values=values_of((2, 3, 8), f32, rng)),
        dict(name="int32-scalar-values", dtype="int64", self_array=values_of((4, 4), "int64", rng),
             indices=[np.array([1, 2], np.int32), np.array([3, 0], np.int32)], values=np.array(9, np.int64)),
        dict(name="zero-dim-index", dtype="bfloat16", self_array=values_of((3, 2), "bfloat16", rng),
             indices=[np.array(2)], values=values_of((2,), "bfloat16", rng), accumulate=True),
    ]
    return cases


def case_id(case):
    return case["name"]


def scatter_args(case):
    return {k: v for k, v in case.items() if k != "name"}


def reference_args(case):
    return {k: v for k, v in case.items() if k not in ("name", "index_dtype")}
