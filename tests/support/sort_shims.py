"""aoti_torch_{cpu,cuda}_{sort,sort_stable,topk} through ctypes, and their
reference without torch: numpy's stable argsort on ranks in torch's order
(NaN above every number, all NaNs equal, -0.0 equal to 0.0), so that
descending stable sorts keep ties in input order too, as torch's do.
"""

import ctypes

import numpy as np

from support.shims import I32, I64, H, P, last_error, owned, shim

_SORT = {d: shim(f"aoti_torch_{d}_sort", H, I64, I32, P, P) for d in ("cpu", "cuda")}
_SORT_STABLE = {d: shim(f"aoti_torch_{d}_sort_stable", H, P, I64, I32, P, P) for d in ("cpu", "cuda")}
_TOPK = {d: shim(f"aoti_torch_{d}_topk", H, I64, I64, I32, I32, P, P) for d in ("cpu", "cuda")}


def _device(device):
    return "cpu" if device == "cpu" else "cuda"


def call_sort(x, dim, descending=False, device="cpu", stable=None):
    """(status, values handle, indices handle); `stable` None calls aten.sort,
    else aten.sort.stable with that flag (False, True, or "null" for NULL)."""
    values, indices = H(), H()
    d = _device(device)
    if stable is None:
        status = _SORT[d](x.ptr, dim, int(descending), ctypes.byref(values), ctypes.byref(indices))
    else:
        flag = None if stable == "null" else ctypes.byref(I32(int(stable)))
        status = _SORT_STABLE[d](x.ptr, flag, dim, int(descending), ctypes.byref(values), ctypes.byref(indices))
    return (status, *owned([values, indices]))


def call_topk(x, k, dim, largest=True, sorted_=True, device="cpu"):
    values, indices = H(), H()
    status = _TOPK[_device(device)](x.ptr, k, dim, int(largest), int(sorted_), ctypes.byref(values),
                                    ctypes.byref(indices))
    return (status, *owned([values, indices]))


def sort(x, dim, descending=False, device="cpu", stable=None):
    status, values, indices = call_sort(x, dim, descending, device, stable)
    assert status == 0, last_error()
    return values, indices


def topk(x, k, dim, largest=True, device="cpu"):
    status, values, indices = call_topk(x, k, dim, largest, True, device)
    assert status == 0, last_error()
    return values, indices


def ranks(line):
    """Integer ranks of a 1-D array in torch's order (NaN highest)."""
    line = np.asarray(line)
    if line.dtype.kind == "f":
        nan = np.isnan(line)
        line = np.where(line == 0, 0.0, line)   # -0.0 ranks with 0.0
        distinct = np.unique(line[~nan])
        return np.where(nan, len(distinct), np.searchsorted(distinct, np.where(nan, 0, line)))
    return np.searchsorted(np.unique(line), line)


def expected_order(values, dim, descending):
    """Indices along `dim` of a stable sort of `values` in torch's order."""
    values = np.asarray(values)
    if values.ndim == 0:
        return np.zeros((), np.int64)
    moved = np.moveaxis(values, dim, -1)
    flat = moved.reshape(-1, moved.shape[-1]) if moved.size else moved.reshape(0, moved.shape[-1])
    order = np.empty(flat.shape, np.int64)
    for i, line in enumerate(flat):
        r = ranks(line)
        order[i] = np.argsort(-r if descending else r, kind="stable")
    return np.moveaxis(order.reshape(moved.shape), -1, dim)


def expected_sort(values, dim, descending):
    """(values, indices) of torch's stable sort of `values` along `dim`."""
    values = np.asarray(values)
    order = expected_order(values, dim, descending)
    if values.ndim == 0:
        return values, order
    return np.take_along_axis(values, order, dim), order


def expected_topk(values, k, dim, largest):
    """(values, indices) of topk as aotirt returns it: the first k of the stable sort."""
    values = np.asarray(values)
    if values.ndim == 0:
        return values, np.zeros((), np.int64)
    got, order = expected_sort(values, dim, largest)
    take = [slice(None)] * values.ndim
    take[dim] = slice(0, k)
    return got[tuple(take)], order[tuple(take)]


def assert_same_values(got, want):
    """Equal elements, NaN where NaN, and the sign of every zero kept."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)
    if got.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def sample(shape, dtype, rng):
    """Values of `dtype` with many ties; for floating dtypes also NaN, inf,
    -inf, -0.0 and 0.0. Returned as the numpy array to upload (float64
    values for bfloat16, which support.shims rounds)."""
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in ("float32", "float64", "float16", "bfloat16"):
        values = rng.integers(-4, 5, shape).astype(np.float64) * 0.5
        specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0])
        pick = rng.random(shape) < 0.25
        values[pick] = rng.choice(specials, size=int(pick.sum()))
        return values
    info = np.iinfo(dtype)
    low, high = max(info.min, -6), min(info.max, 6)
    values = rng.integers(low, high + 1, shape).astype(dtype)
    if values.size:
        flat = values.reshape(-1)
        flat[:: 7] = info.max
        flat[3:: 11] = info.min
    return values


# Shapes that reach every way of the CUDA sort (cuda_src/shims/sort/
# sort_paths.h, sort_tiles.cu): lines sorted by one block, of each block
# size (up to 128, 512, 1024, 2048 and 4096 elements, and the boundaries
# past them); top-k of longer lines by tile selection (k <= 512: one round,
# several rounds) and by the whole-tensor radix sort (k > 512, k == n);
# ties everywhere, mostly NaN, 8-bit, bool and 16-bit rows, strided lines.
# (shape, dim, dtype, fill, topk's ks)
DISPATCH_CASES = [
    ((40, 1), 1, "float32", "normal", (1,)),
    ((300, 3), 1, "float32", "ties", (1, 3)),
    ((500, 64), -1, "float32", "normal", (1, 8, 64)),
    ((64, 128), 1, "int32", "ties", (5,)),
    ((64, 129), 1, "float32", "normal", (1, 129)),
    ((9, 512), 1, "float16", "ties", (17,)),
    ((16, 1000), 1, "float32", "nan", (10, 1000)),
    ((1000, 7), 0, "float32", "normal", (3,)),         # strided lines
    ((4, 2048), 1, "float64", "normal", (100,)),
    ((3, 2049), -1, "bfloat16", "ties", (2049,)),
    ((2, 4096), 1, "int64", "normal", (1, 4096)),
    ((5, 4096), 1, "float32", "equal", (4096,)),
    ((3, 4097), 1, "float32", "normal", (1, 512, 513, 4097)),
    ((2, 128_256), 1, "bfloat16", "normal", (50,)),   # one round: 32 tiles of 50
    ((1, 300_000), -1, "float32", "normal", (1, 512)),  # k 512: three rounds
    ((3, 10_000), 1, "float32", "equal", (100,)),
    ((2, 20_000), 1, "float32", "nan", (50,)),
    ((6, 5000), 1, "int8", "ties", (20,)),
    ((4, 9000), 1, "bool", "ties", (30,)),
    ((10, 700), 1, "bool", "ties", (7,)),
    ((8, 3000), 1, "bfloat16", "nan", (64,)),
    ((3, 6000, 2), 1, "float64", "normal", (100,)),   # a strided long line
    ((2, 7000), 1, "uint8", "ties", (300,)),
]


def dispatch_id(case):
    shape, dim, dtype, fill, _ = case
    return f"{'x'.join(map(str, shape))}-dim{dim}-{dtype}-{fill}"


def dispatch_values(shape, dtype, fill, rng):
    """Values for a DISPATCH_CASES row, as sample() returns them: "ties"
    (sample()'s), "equal" (every element the same), "normal" (for integers
    the type's whole range; for floating types few ties, some NaN, 0.25
    and -0.0) or "nan" (floating: nine in ten NaN)."""
    floating = dtype in ("float32", "float64", "float16", "bfloat16")
    if fill == "equal":
        return np.full(shape, 1.5 if floating else 1).astype(np.float64 if floating else dtype)
    if fill == "ties":
        return sample(shape, dtype, rng)
    if not floating:
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    values = rng.standard_normal(shape) * 100
    flat = values.reshape(-1)
    if fill == "nan":
        flat[rng.random(flat.size) < 0.9] = np.nan
    else:
        flat[::97] = np.nan
        flat[1::13] = 0.25
        flat[2::29] = -0.0
    return values
