"""GPU time per call of the fallback ops of issue 18 (the GEMM family's
rest, the int4 and float8 matmuls, scatter and index_put, the random
factories, cumsum) and strided copies against torch's ops on the same
shapes; one JSON row per
shape on stdout, in bench/ops.py's form (the report puts them in its ops
table).

    python bench/fallback_ops.py [--quick] [--out FILE] [--op NAME]

(--op times one op's rows alone, e.g. --op _weight_int4pack_mm.)

The shapes are the ones the models that call these ops give them: a
decoder's MLP, Linear and GEMV, attention scores as baddbmm, int8 and float8
linears, int4 weight-only linears at decode (one row) and at prefill,
KV-cache and embedding updates, sampling's random draws and top-p's
cumulative sum; and copy_ out of strided views (a transpose, channels-last
to contiguous, attention's head split, im2col's gather). bench/ops.py's machinery times them: aotirt's shim through
ctypes in a worker without torch, torch's op in a torch worker, N calls
queued behind a spin kernel on each side, the two workers taking turns, one
repetition each per round; medians of 7 repetitions (3 with --quick).

Target (issue 18): each op within 1.2x of torch's. item_bool and
assign_tensors_out are not here: the first is a host read by nature (its
time is the wait), the second a copy.
"""

import ctypes
import os
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
import ops  # noqa: E402
from workers import common_arguments, driving, is_quick  # noqa: E402

TARGET = 1.2
CUDA = 1   # aotirt's device type code for CUDA (include/aotirt/aotirt.h)

CASES = [
    {"op": "baddbmm", "model": "attention scores", "shape": "16x512x64 @ 16x64x512", "dtype": "float32",
     "batch": 16, "m": 512, "k": 64, "n": 512},
    {"op": "baddbmm", "model": "attention scores", "shape": "16x512x64 @ 16x64x512", "dtype": "bfloat16",
     "batch": 16, "m": 512, "k": 64, "n": 512},
    {"op": "_addmm_activation", "model": "MLP (gelu)", "shape": "256x1024 @ 1024x4096", "dtype": "bfloat16",
     "m": 256, "k": 1024, "n": 4096},
    {"op": "_addmm_activation", "model": "MLP (gelu)", "shape": "256x1024 @ 1024x4096", "dtype": "float32",
     "m": 256, "k": 1024, "n": 4096},
    {"op": "addmm", "model": "Linear (bias)", "shape": "256x1024 @ 1024x4096", "dtype": "bfloat16",
     "m": 256, "k": 1024, "n": 4096},
    {"op": "addmm", "model": "Linear (bias)", "shape": "256x1024 @ 1024x4096", "dtype": "float32",
     "m": 256, "k": 1024, "n": 4096},
    {"op": "addmv", "model": "decoder GEMV", "shape": "4096x4096 @ 4096", "dtype": "float32", "m": 4096, "k": 4096},
    {"op": "_int_mm", "model": "int8 linear", "shape": "256x4096 @ 4096x4096", "dtype": "int8",
     "m": 256, "k": 4096, "n": 4096},
    {"op": "_scaled_mm", "model": "float8 linear", "shape": "1024x4096 @ 4096x4096 -> bfloat16",
     "dtype": "float8_e4m3fn", "m": 1024, "k": 4096, "n": 4096},
    {"op": "_weight_int4pack_mm", "model": "int4 decode", "shape": "1x4096 @ 4096x4096 g128", "dtype": "bfloat16",
     "m": 1, "k": 4096, "n": 4096, "group": 128, "inner": 8},
    {"op": "_weight_int4pack_mm", "model": "int4 decode (8 sequences)", "shape": "8x4096 @ 4096x4096 g128",
     "dtype": "bfloat16", "m": 8, "k": 4096, "n": 4096, "group": 128, "inner": 8},
    {"op": "_weight_int4pack_mm", "model": "int4 decode (MLP up)", "shape": "1x4096 @ 4096x14336 g128",
     "dtype": "bfloat16", "m": 1, "k": 4096, "n": 14336, "group": 128, "inner": 8},
    {"op": "_weight_int4pack_mm", "model": "int4 linear (16 rows, the zoo's)", "shape": "16x512 @ 512x1024 g128",
     "dtype": "bfloat16", "m": 16, "k": 512, "n": 1024, "group": 128, "inner": 8},
    {"op": "_weight_int4pack_mm", "model": "int4 prefill", "shape": "64x4096 @ 4096x4096 g128",
     "dtype": "bfloat16", "m": 64, "k": 4096, "n": 4096, "group": 128, "inner": 8},
    {"op": "scatter", "model": "mask", "shape": "x 4096x1024 dim1 index 4096x64", "dtype": "float32",
     "rows": 4096, "cols": 1024, "picks": 64},
    {"op": "scatter_reduce", "model": "embedding grads (sum)", "shape": "x 1024x256 dim0 index 8192x256",
     "dtype": "float32", "rows": 1024, "cols": 256, "picks": 8192, "reduce": "sum"},
    {"op": "scatter_reduce", "model": "segment max (amax)", "shape": "x 1024x256 dim0 index 8192x256",
     "dtype": "float32", "rows": 1024, "cols": 256, "picks": 8192, "reduce": "amax"},
    {"op": "index_put", "model": "cache update", "shape": "x 65536x256 [4096] values 4096x256",
     "dtype": "bfloat16", "rows": 65536, "cols": 256, "picks": 4096, "accumulate": False},
    {"op": "index_put", "model": "accumulate", "shape": "x 65536x256 [4096] values 4096x256",
     "dtype": "float32", "rows": 65536, "cols": 256, "picks": 4096, "accumulate": True},
    {"op": "rand", "model": "sampling", "shape": "8x128256", "dtype": "float32", "size": [8, 128256]},
    {"op": "randn", "model": "noise", "shape": "4096x4096", "dtype": "float32", "size": [4096, 4096]},
    {"op": "randint_low_out", "model": "sampling", "shape": "8x128256 in [0, 128256)", "dtype": "int64",
     "size": [8, 128256], "low": 0, "high": 128256},
    {"op": "cumsum", "model": "top-p sampling", "shape": "x 8x128256 dim-1", "dtype": "float32",
     "input": [8, 128256], "dim": -1},
    {"op": "cumsum", "model": "positions", "shape": "x 4096x64 dim0", "dtype": "int64", "input": [4096, 64], "dim": 0},
    # copy_ from a strided view into a contiguous tensor: runtime/copy.cu's
    # strided copy, which also gathers for the copy routine, the
    # convolution's layout copies and im2col. "base": the elements under the view.
    {"op": "copy_", "model": "transpose", "shape": "4096x4096 strides 1,4096", "dtype": "float32",
     "sizes": [4096, 4096], "strides": [1, 4096], "base": 4096 * 4096},
    {"op": "copy_", "model": "channels-last to contiguous", "shape": "32x64x56x56", "dtype": "float32",
     "sizes": [32, 64, 56, 56], "strides": [64 * 56 * 56, 1, 56 * 64, 64], "base": 32 * 64 * 56 * 56},
    {"op": "copy_", "model": "attention heads split", "shape": "8x16x1024x64 from 8x1024x16x64", "dtype": "bfloat16",
     "sizes": [8, 16, 1024, 64], "strides": [1024 * 16 * 64, 64, 16 * 64, 1], "base": 8 * 1024 * 16 * 64},
    {"op": "copy_", "model": "im2col gather (Whisper conv1)", "shape": "1x1x3000x80x1x3 windows of 1x80x1x3002",
     "dtype": "float32", "sizes": [1, 1, 3000, 80, 1, 3], "strides": [80 * 3002, 3002, 1, 3002, 3002, 1],
     "base": 80 * 3002},
]


def row_major(shape):
    return ops.element_strides(shape, False)


# ---------------------------------------------------------------- aotirt worker

class AotirtWorker(ops.AotirtWorker):
    """ops.AotirtWorker with issue 18's shims."""

    def build(self, request):
        case = request["case"]
        builder = getattr(self, "build_" + case["op"].lstrip("_"), None)
        return (builder(case), case["op"]) if builder else super().build(request)

    def integers(self, shape, high, dtype="int64", seed=0):
        rng = self.np.random.default_rng(seed)
        handle, _ = self.sc.dense(rng.integers(0, high, shape).astype(dtype), "cuda:0")
        self.keep.append(handle)
        return handle

    def float8(self, shape, strides, seed=0):
        """A float8_e4m3fn tensor of finite random bytes (0x7f and 0xff are NaN)."""
        sc, np = self.sc, self.np
        rows, cols = shape
        stored = np.random.default_rng(seed).integers(0, 0x7f, rows * cols).astype(np.uint8)
        stored |= (np.arange(stored.size) % 2 * 0x80).astype(np.uint8)       # both signs
        base = sc.P()
        self._checked(sc._upload(stored.ctypes.data, 1, (sc.I64 * 1)(stored.size), sc.FLOAT8["float8_e4m3fn"], 0,
                                 None, ctypes.byref(base)))
        base = sc.Handle(base.value, keep=stored)
        out = sc.H()
        self._checked(sc._reinterpret(base.ptr, 2, (sc.I64 * 2)(*shape), (sc.I64 * 2)(*strides), 0, ctypes.byref(out)))
        handle = sc.Handle(out, keep=base)
        self.keep.append(handle)
        return handle

    def returning(self, fn, *args):
        """A call of a shim whose last argument is its ret0; the result is freed."""
        out = self.sc.H()
        ref = ctypes.byref(out)
        self.keep.append(ref)

        def call():
            self._checked(fn(*args, ref))
            self.delete(out)
            out.value = None
        return call

    def into(self, fn, *args):
        """A call of an out-variant shim (the out tensor is among args)."""
        return lambda: self._checked(fn(*args))

    def build_baddbmm(self, c):
        sc = self.sc
        fn = self._shim("aoti_torch_cuda_baddbmm_out", sc.P, sc.P, sc.P, sc.P, sc.F64, sc.F64)
        out = self.tensor([c["batch"], c["m"], c["n"]], c["dtype"])
        bias = self.tensor([c["batch"], c["m"], c["n"]], c["dtype"], seed=1)
        a = self.tensor([c["batch"], c["m"], c["k"]], c["dtype"], seed=2)
        b = self.tensor([c["batch"], c["k"], c["n"]], c["dtype"], seed=3)
        return self.into(fn, out.ptr, bias.ptr, a.ptr, b.ptr, 1.0, 0.125)

    def build_addmm_activation(self, c):
        sc = self.sc
        fn = self._shim("aoti_torch_cuda__addmm_activation", sc.P, sc.P, sc.P, sc.F64, sc.F64, sc.I32, sc.P)
        bias = self.tensor([c["n"]], c["dtype"], seed=1)
        a = self.tensor([c["m"], c["k"]], c["dtype"], seed=2)
        b = self.tensor([c["k"], c["n"]], c["dtype"], seed=3)
        return self.returning(fn, bias.ptr, a.ptr, b.ptr, 1.0, 1.0, 1)

    def build_addmm(self, c):
        # A Linear as Inductor calls it: mat2 is the [N, K] weight's transpose.
        sc = self.sc
        fn = self._shim("aoti_torch_cuda_addmm_out", sc.P, sc.P, sc.P, sc.P, sc.F64, sc.F64)
        out = self.tensor([c["m"], c["n"]], c["dtype"])
        bias = self.tensor([c["n"]], c["dtype"], seed=1)
        a = self.tensor([c["m"], c["k"]], c["dtype"], seed=2)
        base = self.np.random.default_rng(3).standard_normal(c["k"] * c["n"], dtype=self.np.float32)
        w_t, _ = sc.view(base, [c["k"], c["n"]], [1, c["k"]], 0, "cuda:0", c["dtype"])
        self.keep.append(w_t)
        return self.into(fn, out.ptr, bias.ptr, a.ptr, w_t.ptr, 1.0, 1.0)

    def build_addmv(self, c):
        sc = self.sc
        fn = self._shim("aoti_torch_cuda_addmv", sc.P, sc.P, sc.P, sc.F64, sc.F64, sc.P)
        bias = self.tensor([c["m"]], c["dtype"], seed=1)
        mat = self.tensor([c["m"], c["k"]], c["dtype"], seed=2)
        vec = self.tensor([c["k"]], c["dtype"], seed=3)
        return self.returning(fn, bias.ptr, mat.ptr, vec.ptr, 1.0, 1.0)

    def build_int_mm(self, c):
        sc = self.sc
        fn = self._shim("aoti_torch_cuda__int_mm_out", sc.P, sc.P, sc.P)
        out = self.integers([c["m"], c["n"]], 1, "int32")
        a = self.integers([c["m"], c["k"]], 100, "int8", seed=1)
        b = self.integers([c["k"], c["n"]], 100, "int8", seed=2)
        return self.into(fn, out.ptr, a.ptr, b.ptr)

    def build_scaled_mm(self, c):
        sc = self.sc
        fn = self._shim("aoti_torch_cuda__scaled_mm", sc.H, sc.H, sc.H, sc.H, sc.P, sc.P, sc.P, sc.I32, sc.P)
        a = self.float8([c["m"], c["k"]], [c["k"], 1], seed=1)
        b = self.float8([c["k"], c["n"]], [1, c["k"]], seed=2)              # column-major, as torch requires
        scale_a, scale_b = self.tensor([1], "float32", seed=3), self.tensor([1], "float32", seed=4)
        out_dtype = sc.I32(sc.DTYPES["bfloat16"])
        self.keep.append(out_dtype)
        return self.returning(fn, a.ptr, b.ptr, scale_a.ptr, scale_b.ptr, None, None, ctypes.byref(out_dtype), 0)

    def build_weight_int4pack_mm(self, c):
        sc = self.sc
        fn = self._shim("aoti_torch_cuda__weight_int4pack_mm", sc.H, sc.H, sc.I64, sc.H, sc.P)
        x = self.tensor([c["m"], c["k"]], "bfloat16", seed=1)
        inner = c["inner"]
        packed = self.integers([c["n"] // 8, c["k"] // (inner * 16), 32, inner // 2], 1 << 30, "int32", seed=2)
        scales = self.tensor([c["k"] // c["group"], c["n"], 2], "bfloat16", seed=3)
        return self.returning(fn, x.ptr, packed.ptr, c["group"], scales.ptr)

    def build_scatter(self, c):
        sc = self.sc
        fn = self._shim("aoti_torch_cuda_scatter_src_out", sc.H, sc.H, sc.I64, sc.H, sc.H)
        out = self.tensor([c["rows"], c["cols"]], c["dtype"])
        x = self.tensor([c["rows"], c["cols"]], c["dtype"], seed=1)
        index = self.integers([c["rows"], c["picks"]], c["cols"], seed=2)
        src = self.tensor([c["rows"], c["picks"]], c["dtype"], seed=3)
        return self.into(fn, out.ptr, x.ptr, 1, index.ptr, src.ptr)

    def build_scatter_reduce(self, c):
        sc = self.sc
        fn = self._shim("aoti_torch_cuda_scatter_reduce_two_out", sc.H, sc.H, sc.I64, sc.H, sc.H, ctypes.c_char_p,
                        sc.I32)
        out = self.tensor([c["rows"], c["cols"]], c["dtype"])
        x = self.tensor([c["rows"], c["cols"]], c["dtype"], seed=1)
        index = self.integers([c["picks"], c["cols"]], c["rows"], seed=2)
        src = self.tensor([c["picks"], c["cols"]], c["dtype"], seed=3)
        return self.into(fn, out.ptr, x.ptr, 0, index.ptr, src.ptr, c["reduce"].encode(), 1)

    def build_index_put(self, c):
        sc = self.sc
        fn = self._shim("aoti_torch_cuda_index_put", sc.H, sc.P, sc.I64, sc.H, sc.I32, sc.P)
        x = self.tensor([c["rows"], c["cols"]], c["dtype"])
        rng = self.np.random.default_rng(2)
        rows = rng.permutation(c["rows"])[:c["picks"]] if not c["accumulate"] else \
            rng.integers(0, c["rows"], c["picks"])
        index, _ = sc.dense(rows.astype("int64"), "cuda:0")
        values = self.tensor([c["picks"], c["cols"]], c["dtype"], seed=3)
        # The generated code's form: an array of pointers to (optional) index handles.
        indices = (ctypes.POINTER(sc.H) * 1)(ctypes.pointer(index.value))
        self.keep += [index, indices]
        return self.returning(fn, x.ptr, indices, 1, values.ptr, int(c["accumulate"]))

    def factory_args(self, c):
        sc = self.sc
        size = (sc.I64 * len(c["size"]))(*c["size"])
        dtype, device = sc.I32(sc.DTYPES[c["dtype"]]), sc.I32(CUDA)
        self.keep += [size, dtype, device]
        return size, len(c["size"]), ctypes.byref(dtype), None, ctypes.byref(device), 0, None

    def build_rand(self, c, name="aoti_torch_cuda_rand"):
        sc = self.sc
        fn = self._shim(name, sc.P, sc.I64, sc.P, sc.P, sc.P, sc.I32, sc.P, sc.P)
        return self.returning(fn, *self.factory_args(c))

    def build_randn(self, c):
        return self.build_rand(c, "aoti_torch_cuda_randn")

    def build_randint_low_out(self, c):
        sc = self.sc
        fn = self._shim("aoti_torch_cuda_randint_low_out", sc.H, sc.I64, sc.I64, sc.P, sc.I64)
        out = self.integers(c["size"], 1)
        size = (sc.I64 * len(c["size"]))(*c["size"])
        self.keep.append(size)
        return self.into(fn, out.ptr, c["low"], c["high"], size, len(c["size"]))

    def build_cumsum(self, c):
        sc = self.sc
        fn = self._shim("aoti_torch_cuda_cumsum", sc.H, sc.I64, sc.P, sc.P)
        x = self.tensor(c["input"], c["dtype"], seed=1) if c["dtype"] != "int64" else \
            self.integers(c["input"], 100, seed=1)
        return self.returning(fn, x.ptr, c["dim"], None)

    def build_copy_(self, c):
        sc = self.sc
        fn = self._shim("aoti_torch_copy_", sc.H, sc.H, sc.I32)
        base = self.np.random.default_rng(1).standard_normal(c["base"], dtype=self.np.float32)
        src, _ = sc.view(base, c["sizes"], c["strides"], 0, "cuda:0", c["dtype"])
        out = self.tensor(c["sizes"], c["dtype"])
        self.keep.append(src)
        return self.into(fn, out.ptr, src.ptr, 0)


# ----------------------------------------------------------------- torch worker

class TorchWorker(ops.TorchWorker):
    """ops.TorchWorker with torch's ops of the same calls."""

    def build(self, case):
        builder = getattr(self, "build_" + case["op"].lstrip("_"), None)
        return (builder(case), "native") if builder else super().build(case)

    def integers(self, shape, high, dtype="int64", seed=0):
        torch = self.torch
        g = torch.Generator(device="cuda").manual_seed(seed)
        return torch.randint(0, high, shape, generator=g, device="cuda", dtype=getattr(torch, dtype))

    def build_baddbmm(self, c):
        out = self.tensor([c["batch"], c["m"], c["n"]], c["dtype"])
        bias = self.tensor([c["batch"], c["m"], c["n"]], c["dtype"], seed=1)
        a = self.tensor([c["batch"], c["m"], c["k"]], c["dtype"], seed=2)
        b = self.tensor([c["batch"], c["k"], c["n"]], c["dtype"], seed=3)
        return lambda: self.torch.baddbmm(bias, a, b, beta=1.0, alpha=0.125, out=out)

    def build_addmm_activation(self, c):
        bias = self.tensor([c["n"]], c["dtype"], seed=1)
        a = self.tensor([c["m"], c["k"]], c["dtype"], seed=2)
        b = self.tensor([c["k"], c["n"]], c["dtype"], seed=3)
        return lambda: self.torch._addmm_activation(bias, a, b, use_gelu=True)

    def build_addmm(self, c):
        out = self.tensor([c["m"], c["n"]], c["dtype"])
        bias = self.tensor([c["n"]], c["dtype"], seed=1)
        a = self.tensor([c["m"], c["k"]], c["dtype"], seed=2)
        w = self.tensor([c["n"], c["k"]], c["dtype"], seed=3)
        return lambda: self.torch.addmm(bias, a, w.t(), out=out)

    def build_addmv(self, c):
        bias = self.tensor([c["m"]], c["dtype"], seed=1)
        mat = self.tensor([c["m"], c["k"]], c["dtype"], seed=2)
        vec = self.tensor([c["k"]], c["dtype"], seed=3)
        return lambda: self.torch.addmv(bias, mat, vec)

    def build_int_mm(self, c):
        out = self.integers([c["m"], c["n"]], 1, "int32")
        a = self.integers([c["m"], c["k"]], 100, "int8", seed=1)
        b = self.integers([c["k"], c["n"]], 100, "int8", seed=2)
        return lambda: self.torch._int_mm(a, b, out=out)

    def build_scaled_mm(self, c):
        torch = self.torch
        a = self.tensor([c["m"], c["k"]], "float32", seed=1).to(torch.float8_e4m3fn)
        b = self.tensor([c["n"], c["k"]], "float32", seed=2).to(torch.float8_e4m3fn).t()   # column-major
        scale_a, scale_b = (torch.ones((), device="cuda") for _ in range(2))
        return lambda: torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.bfloat16)

    def build_weight_int4pack_mm(self, c):
        torch = self.torch
        x = self.tensor([c["m"], c["k"]], "bfloat16", seed=1)
        q = self.integers([c["n"], c["k"] // 2], 256, "uint8", seed=2)
        packed = torch._convert_weight_to_int4pack(q, c["inner"])
        scales = self.tensor([c["k"] // c["group"], c["n"], 2], "bfloat16", seed=3)
        return lambda: torch._weight_int4pack_mm(x, packed, c["group"], scales)

    def build_scatter(self, c):
        out = self.tensor([c["rows"], c["cols"]], c["dtype"])
        x = self.tensor([c["rows"], c["cols"]], c["dtype"], seed=1)
        index = self.integers([c["rows"], c["picks"]], c["cols"], seed=2)
        src = self.tensor([c["rows"], c["picks"]], c["dtype"], seed=3)
        return lambda: self.torch.scatter(x, 1, index, src, out=out)

    def build_scatter_reduce(self, c):
        out = self.tensor([c["rows"], c["cols"]], c["dtype"])
        x = self.tensor([c["rows"], c["cols"]], c["dtype"], seed=1)
        index = self.integers([c["picks"], c["cols"]], c["rows"], seed=2)
        src = self.tensor([c["picks"], c["cols"]], c["dtype"], seed=3)
        return lambda: self.torch.scatter_reduce(x, 0, index, src, c["reduce"], include_self=True, out=out)

    def build_index_put(self, c):
        torch = self.torch
        x = self.tensor([c["rows"], c["cols"]], c["dtype"])
        g = torch.Generator(device="cuda").manual_seed(2)
        rows = torch.randperm(c["rows"], generator=g, device="cuda")[:c["picks"]] if not c["accumulate"] else \
            self.integers([c["picks"]], c["rows"], seed=2)
        values = self.tensor([c["picks"], c["cols"]], c["dtype"], seed=3)
        return lambda: torch.index_put(x, (rows,), values, c["accumulate"])

    def build_rand(self, c):
        return lambda: self.torch.rand(c["size"], device="cuda")

    def build_randn(self, c):
        return lambda: self.torch.randn(c["size"], device="cuda")

    def build_randint_low_out(self, c):
        out = self.integers(c["size"], 1)
        return lambda: self.torch.randint(c["low"], c["high"], c["size"], out=out)

    def build_cumsum(self, c):
        x = self.tensor(c["input"], c["dtype"], seed=1) if c["dtype"] != "int64" else \
            self.integers(c["input"], 100, seed=1)
        return lambda: self.torch.cumsum(x, c["dim"])

    def build_copy_(self, c):
        src = self.tensor([c["base"]], c["dtype"], seed=1).as_strided(c["sizes"], c["strides"])
        out = self.tensor(c["sizes"], c["dtype"])
        return lambda: out.copy_(src)


# ----------------------------------------------------------------------- driver

def cases():
    """The rows to time: CASES, each with its shim named and the target set."""
    return [dict(case, shim=case["op"], target=TARGET) for case in CASES]


def main():
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common_arguments(parser)
    parser.add_argument("--op", help="time this op's rows alone (its aten name, as in the table)")
    args = parser.parse_args()
    if args.op and not any(case["op"] == args.op for case in CASES):
        parser.error(f"--op {args.op}: no row times it (ops: {', '.join(sorted({c['op'] for c in CASES}))})")
    if args.worker:
        ops.worker_main(args.worker, AotirtWorker, TorchWorker)
        return 0
    from zoo_index import torch_python

    reps = ops.QUICK_REPS if is_quick(args) else ops.REPS
    pythons = {"aotirt": sys.executable, "torch": torch_python()}
    with driving(os.path.abspath(__file__), pythons, args.out) as (emit, workers, missing):
        if missing:
            emit({"case": "op", "op": "fallback ops", "note": "; ".join(missing.values())})
            return 0
        for case in cases():
            if args.op and case["op"] != args.op:
                continue
            emit(ops.time_case(case, (workers["aotirt"], workers["torch"]), reps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
