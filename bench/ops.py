"""GPU time per call of aotirt's convolution, attention and sorting shims
against torch's ops on the same shapes; one JSON row per shape on stdout.

    python bench/ops.py [--quick] [--out FILE] [--only conv,attention,sort]

Shapes: the distinct convolutions of torchvision's resnet18 and
mobilenet_v2 at batch 2, 224x224 (read off the torch modules by forward
hooks in the torch worker), channels-last as Inductor's layout optimization
hands them; a Whisper-style Conv1d front end; attention at sequence lengths
128, 512, 1024 and 4096, head sizes 64 and 128, causal or not, in float32,
float16 and bfloat16, and grouped-query (8 query heads over 2 key/value
heads); topk and sort as sampling, MoE routing and argsort use them
(vocabulary-sized rows, many short rows, one long row: each way of the
CUDA sort, cuda_src/shims/sort/sort_paths.h).

aotirt's side runs in a worker without torch that calls the shims through
ctypes as a model library does (the attention shim the one that torch's
dispatcher picks for the shape, as the generated code would call), on
aotirt's shared stream, timed with cuda.bindings events; torch's side runs
in a torch worker and is timed with torch.cuda.Event. Both time N calls
queued behind a spin kernel (bench/gpu_timer.py), so the events measure
the GPU's work, not the host's launch pace. Each figure is the median of 7
repetitions (3 with --quick or AOTIRT_BENCH_QUICK=1) after a warm-up, the
two workers taking turns, one repetition each per round.

Targets: every row within 1.1x of torch; fp16/bf16 attention at or below
torch (1.0x). A failed shim gives a row with its error as the note.

AOTIRT_BENCH_TORCH_STREAM=side: torch's worker on a non-blocking stream of
its own (a diagnostic, bench/gpu_timer.py's TorchClock); rows say so.
"""

import argparse
import os
import statistics
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(REPO, "tests", "aoti"))
from gpu_timer import AotirtClock, TorchClock  # noqa: E402
from timing import REPS  # noqa: E402
from workers import WorkerError, common_arguments, driving, is_quick, serve  # noqa: E402

QUICK_REPS = 3
TARGET_US_PER_REP = 5000          # GPU time a repetition aims for (calls = this / the slower side's time)
MAX_CALLS = 200
SEQ_LENS = (128, 512, 1024, 4096)
HEAD_DIMS = (64, 128)
DTYPES = ("float32", "float16", "bfloat16")
BACKENDS = {0: "math", 1: "flash", 2: "efficient", 3: "cudnn", 4: "overrideable"}

WHISPER_FRONT_END = [  # Whisper's two Conv1d, on 80 mel bins x 3000 frames (d_model 384, as tiny)
    {"op": "conv1d", "model": "whisper front end", "input": [1, 80, 3000], "weight": [384, 80, 3], "stride": [1],
     "padding": [1], "dilation": [1], "groups": 1, "bias": True},
    {"op": "conv1d", "model": "whisper front end", "input": [1, 384, 3000], "weight": [384, 384, 3], "stride": [2],
     "padding": [1], "dilation": [1], "groups": 1, "bias": True},
]


SORT_CASES = [  # op, shape, dim, k (topk), descending/largest, dtype
    {"op": "topk", "model": "sampling", "input": [8, 128256], "dim": -1, "k": 50, "descending": True},
    {"op": "topk", "model": "sampling", "input": [8, 128256], "dim": -1, "k": 50, "descending": True,
     "dtype": "bfloat16"},
    {"op": "topk", "model": "sampling", "input": [64, 32000], "dim": -1, "k": 8, "descending": True},
    {"op": "topk", "model": "MoE routing", "input": [4096, 64], "dim": -1, "k": 8, "descending": True},
    {"op": "topk", "model": "retrieval", "input": [1, 1 << 20], "dim": -1, "k": 100, "descending": True},
    {"op": "sort", "model": "top-p sampling", "input": [8, 128256], "dim": -1, "descending": True},
    {"op": "sort", "model": "argsort", "input": [4096, 64], "dim": -1, "descending": False},
    {"op": "sort", "model": "argsort", "input": [1, 1 << 20], "dim": -1, "descending": False},
    {"op": "sort", "model": "argsort", "input": [1 << 16, 16], "dim": 0, "descending": False, "dtype": "int64"},
]


def attention_cases():
    cases = []
    for dtype in DTYPES:
        for head_dim in HEAD_DIMS:
            for seq in SEQ_LENS:
                for causal in (False, True):
                    cases.append({"op": "sdpa", "batch": 2, "heads": 8, "kv_heads": 8, "seq": seq,
                                  "head_dim": head_dim, "causal": causal, "dtype": dtype})
        for seq in SEQ_LENS:
            cases.append({"op": "sdpa", "batch": 2, "heads": 8, "kv_heads": 2, "seq": seq, "head_dim": 128,
                          "causal": True, "dtype": dtype})
    return cases


def describe(case):
    """The row's shape text."""
    if case["op"] == "sdpa":
        heads = f"{case['heads']}" if case["kv_heads"] == case["heads"] else f"{case['heads']}/{case['kv_heads']}kv"
        return (f"B{case['batch']} H{heads} L{case['seq']} E{case['head_dim']}"
                + (" causal" if case["causal"] else ""))
    dims = lambda v: "x".join(map(str, v))  # noqa: E731
    if case["op"] in ("topk", "sort"):
        order = ("largest" if case["op"] == "topk" else "descending") if case["descending"] else "ascending"
        k = f" k{case['k']}" if case["op"] == "topk" else ""
        return f"x {dims(case['input'])} dim{case['dim']}{k} {order}"
    text = (f"x {dims(case['input'])} w {dims(case['weight'])} s{dims(case['stride'])} p{dims(case['padding'])}"
            f" d{dims(case['dilation'])} g{case['groups']}")
    return text + (" +bias" if case.get("bias") else "")


def target_of(case):
    return 1.0 if case["op"] == "sdpa" and case["dtype"] != "float32" else 1.1


# ---------------------------------------------------------------- aotirt worker

def element_strides(shape, channels_last):
    """Row-major strides of `shape` in elements, or NHWC's for a 4-D channels-last tensor."""
    if channels_last and len(shape) == 4:
        _n, c, h, w = shape
        return [h * w * c, 1, w * c, c]
    strides, step = [], 1
    for size in reversed(shape):
        strides.insert(0, step)
        step *= size
    return strides


class AotirtWorker:
    """Calls libaotirt's shims through ctypes, on the shared stream."""

    def __init__(self):
        import numpy as np

        import aotirt

        sys.path.insert(0, os.path.join(REPO, "tests"))
        from support import shims as sc

        self.np, self.aotirt, self.sc = np, aotirt, sc
        self.clock = clock = AotirtClock()
        self.timer, self.wait, self.note = clock.timer, clock.wait, clock.note
        self.delete = sc.shim("aoti_torch_delete_tensor_object", sc.H)
        self.call, self.keep = None, []
        self.input_stream = None   # where inputs are uploaded: the shared stream, or a probe's aotirt.Stream

    def tensor(self, shape, dtype, channels_last=False, seed=0):
        rng = self.np.random.default_rng(seed)
        base = rng.standard_normal(int(self.np.prod(shape)), dtype=self.np.float32)
        handle, _values = self.sc.view(base, shape, element_strides(shape, channels_last), 0, "cuda:0", dtype,
                                       stream=self.input_stream)
        self.keep.append(handle)
        return handle

    def _shim(self, name, *argtypes):
        try:
            return self.sc.shim(name, *argtypes)
        except AttributeError:
            raise RuntimeError(f"libaotirt.so has no {name}") from None

    def _checked(self, status):
        if status != 0:
            raise RuntimeError(self.sc.last_error() or f"status {status}")

    def setup_conv(self, case):
        import ctypes

        sc = self.sc
        conv = self._shim("aoti_torch_cuda_convolution", sc.H, sc.H, sc.P, sc.P, sc.I64, sc.P, sc.I64, sc.P, sc.I64,
                          sc.I32, sc.P, sc.I64, sc.I64, sc.P)
        cl = case.get("layout") == "channels_last"
        x = self.tensor(case["input"], case["dtype"], cl, 1)
        w = self.tensor(case["weight"], case["dtype"], cl, 2)
        bias = ctypes.byref(sc.H(self.tensor([case["weight"][0]], case["dtype"], seed=3).ptr.value)) \
            if case.get("bias") else None
        n = len(case["stride"])
        ints = lambda values: (sc.I64 * n)(*values)  # noqa: E731
        stride, padding, dilation, zeros = ints(case["stride"]), ints(case["padding"]), ints(case["dilation"]), \
            ints([0] * n)
        self.keep += [bias, stride, padding, dilation, zeros]
        out = sc.H()
        out_ref = ctypes.byref(out)

        def call():
            self._checked(conv(x.ptr, w.ptr, bias, stride, n, padding, n, dilation, n, 0, zeros, n, case["groups"],
                               out_ref))
            self.delete(out)
            out.value = None
        return call, "convolution"

    def setup_sdpa(self, case, shim):
        import ctypes

        sc = self.sc
        B, H, Hk, L, E = case["batch"], case["heads"], case["kv_heads"], case["seq"], case["head_dim"]
        q = self.tensor([B, H, L, E], case["dtype"], seed=1)
        k = self.tensor([B, Hk, L, E], case["dtype"], seed=2)
        v = self.tensor([B, Hk, L, E], case["dtype"], seed=3)
        causal = int(case["causal"])
        slots = [sc.H() for _ in range(9)]
        ints = [sc.I64(), sc.I64()]
        if shim == "efficient":
            fn = self._shim("aoti_torch_cuda__scaled_dot_product_efficient_attention",
                            sc.H, sc.H, sc.H, sc.P, sc.I32, sc.F64, sc.I32, sc.P, sc.P, sc.P, sc.P, sc.P)
            rets = [ctypes.byref(s) for s in slots[:4]]
            args = (q.ptr, k.ptr, v.ptr, None, 0, 0.0, causal, None, *rets)
        else:
            # Outputs 2, 3 (cumulative sequence lengths) and, for cuDNN, 8 (the
            # debug mask) are None in torch's meta functions: generated code
            # passes NULL for them.
            nullable = (2, 3, 8) if shim == "cudnn" else (2, 3)
            rets = [ctypes.byref(ints[i - 4]) if i in (4, 5) else None if i in nullable else ctypes.byref(slots[i])
                    for i in range(9)]
            if shim == "cudnn":
                fn = self._shim("aoti_torch_cuda__scaled_dot_product_cudnn_attention",
                                sc.H, sc.H, sc.H, sc.P, sc.I32, sc.F64, sc.I32, sc.I32, sc.P, *[sc.P] * 9)
                args = (q.ptr, k.ptr, v.ptr, None, 0, 0.0, causal, 0, None, *rets)
            else:
                fn = self._shim("aoti_torch_cuda__scaled_dot_product_flash_attention",
                                sc.H, sc.H, sc.H, sc.F64, sc.I32, sc.I32, sc.P, *[sc.P] * 9)
                args = (q.ptr, k.ptr, v.ptr, 0.0, causal, 0, None, *rets)
        self.keep += [slots, ints, rets]

        def call():
            self._checked(fn(*args))
            for slot in slots:
                if slot:
                    self.delete(slot)
                    slot.value = None
        return call, shim

    def setup_sort(self, case):
        import ctypes

        sc = self.sc
        x = self.tensor(case["input"], case["dtype"], seed=1)
        values, indices = sc.H(), sc.H()
        rets = (ctypes.byref(values), ctypes.byref(indices))
        if case["op"] == "topk":
            fn = self._shim("aoti_torch_cuda_topk", sc.H, sc.I64, sc.I64, sc.I32, sc.I32, sc.P, sc.P)
            args = (x.ptr, case["k"], case["dim"], int(case["descending"]), 1, *rets)
        else:
            fn = self._shim("aoti_torch_cuda_sort_stable", sc.H, sc.P, sc.I64, sc.I32, sc.P, sc.P)
            args = (x.ptr, None, case["dim"], int(case["descending"]), *rets)
        self.keep += [rets]

        def call():
            self._checked(fn(*args))
            for slot in (values, indices):
                self.delete(slot)
                slot.value = None
        return call, case["op"]

    def build(self, request):
        """(the timed call, the shim's name) for the request's case; a
        subclass adds ops (bench/fallback_ops.py)."""
        case = request["case"]
        if case["op"] == "sdpa":
            return self.setup_sdpa(case, request["shim"])
        if case["op"] in ("topk", "sort"):
            return self.setup_sort(case)
        return self.setup_conv(case)

    def setup(self, request):
        self.keep, self.call = [], None
        self.timer.reset()
        call, shim = self.build(request)
        for _ in range(3):                          # plans are built here, not in the timed calls
            call()
        self.wait()
        self.call = call
        self.timer.us_per_call(call, 3, self.wait)  # sizes the spin
        us, _ = self.timer.us_per_call(call, 3, self.wait)
        return {"us": us, "shim": shim, "note": self.note}

    def rep(self, request):
        us, host_bound = self.timer.us_per_call(self.call, request["calls"], self.wait)
        return {"us": us, "host_bound": host_bound}

    def teardown(self, request):
        self.call, self.keep = None, []
        self.wait()
        return {}


# ----------------------------------------------------------------- torch worker

def conv_shapes(models):
    """The distinct Conv2d calls of torchvision models at batch 2, 224x224,
    read by forward hooks (in a torch process; on the CPU: shapes only)."""
    import torch
    import torchvision

    seen, cases = {}, []
    for name in models:
        model = getattr(torchvision.models, name)(weights=None).eval()

        def hook(module, args, name=name):
            case = {"op": "conv2d", "model": name, "input": list(args[0].shape), "weight": list(module.weight.shape),
                    "stride": list(module.stride), "padding": list(module.padding),
                    "dilation": list(module.dilation), "groups": module.groups, "bias": module.bias is not None,
                    "layout": "channels_last", "dtype": "float32"}
            key = describe(case)
            if key not in seen:
                seen[key] = case
                cases.append(case)
            elif name not in seen[key]["model"].split(", "):
                seen[key]["model"] += ", " + name
        handles = [m.register_forward_pre_hook(hook) for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
        with torch.no_grad():
            model(torch.zeros(2, 3, 224, 224))
        for h in handles:
            h.remove()
    return cases


class TorchWorker:
    def __init__(self):
        import torch

        self.torch = torch
        self.clock = clock = TorchClock()
        self.timer, self.wait, self.note = clock.timer, clock.wait, clock.note
        self.call = None

    def conv_shapes(self, request):
        return {"cases": conv_shapes(request["models"])}

    def tensor(self, shape, dtype, channels_last=False, seed=0):
        torch = self.torch
        g = torch.Generator(device="cuda").manual_seed(seed)
        t = torch.randn(shape, generator=g, device="cuda", dtype=torch.float32).to(getattr(torch, dtype))
        return t.contiguous(memory_format=torch.channels_last) if channels_last and len(shape) == 4 else t

    def build(self, case):
        """(the timed call, torch's backend) for the case; a subclass adds ops."""
        torch = self.torch
        F = torch.nn.functional
        if case["op"] == "sdpa":
            B, H, Hk, L, E = case["batch"], case["heads"], case["kv_heads"], case["seq"], case["head_dim"]
            q = self.tensor([B, H, L, E], case["dtype"], seed=1)
            k = self.tensor([B, Hk, L, E], case["dtype"], seed=2)
            v = self.tensor([B, Hk, L, E], case["dtype"], seed=3)
            causal, gqa = case["causal"], Hk != H
            try:
                choice = torch._fused_sdp_choice(q, k, v, None, 0.0, causal, enable_gqa=gqa)
            except TypeError:
                choice = torch._fused_sdp_choice(q, k, v, None, 0.0, causal)
            backend = BACKENDS.get(int(choice), str(choice))
            kwargs = {"is_causal": causal, "enable_gqa": True} if gqa else {"is_causal": causal}
            call = lambda: F.scaled_dot_product_attention(q, k, v, **kwargs)  # noqa: E731
        elif case["op"] in ("topk", "sort"):
            x = self.tensor(case["input"], case["dtype"], seed=1)
            dim, descending = case["dim"], case["descending"]
            if case["op"] == "topk":
                call = lambda: torch.topk(x, case["k"], dim, descending)  # noqa: E731
            else:
                call = lambda: torch.sort(x, dim=dim, descending=descending)  # noqa: E731
            backend = "native"
        else:
            cl = case.get("layout") == "channels_last"
            x = self.tensor(case["input"], case["dtype"], cl, 1)
            w = self.tensor(case["weight"], case["dtype"], cl, 2)
            b = self.tensor([case["weight"][0]], case["dtype"], seed=3) if case.get("bias") else None
            conv = F.conv2d if case["op"] == "conv2d" else F.conv1d
            call = lambda: conv(x, w, b, case["stride"], case["padding"], case["dilation"], case["groups"])  # noqa
            backend = "cudnn" if torch.backends.cudnn.is_available() else "native"
        return call, backend

    def setup(self, request):
        torch = self.torch
        self.timer.reset()
        answer = {"note": self.note}
        with torch.inference_mode():
            call, answer["backend"] = self.build(request["case"])
            for _ in range(3):
                call()
            self.wait()
            self.call = call
            self.timer.us_per_call(call, 3, self.wait)
            answer["us"], _ = self.timer.us_per_call(call, 3, self.wait)
        return answer

    def rep(self, request):
        with self.torch.inference_mode():
            us, host_bound = self.timer.us_per_call(self.call, request["calls"], self.wait)
        return {"us": us, "host_bound": host_bound}

    def teardown(self, request):
        self.call = None
        self.torch.cuda.empty_cache()
        return {}


def worker_main(kind, aotirt_worker=None, torch_worker=None):
    """Serves one side's requests; bench/fallback_ops.py passes its subclasses."""
    worker = (aotirt_worker or AotirtWorker)() if kind == "aotirt" else (torch_worker or TorchWorker)()
    handlers = {name: getattr(worker, name) for name in ("setup", "rep", "teardown", "conv_shapes")
                if hasattr(worker, name)}
    serve(dict(handlers, ping=lambda request: {}))


# ----------------------------------------------------------------------- driver

def aotirt_shim(case, torch_backend):
    """The shim a model library calls where torch's dispatcher picks `torch_backend`."""
    if torch_backend in ("flash", "efficient", "cudnn"):
        return torch_backend
    return "efficient" if case["dtype"] == "float32" else "cudnn"


def time_case(case, workers, reps):
    """One row: both sides set up, then `reps` rounds, one repetition each in turn."""
    aotirt_w, torch_w = workers
    row = {"case": "op", "op": case["op"], "model": case.get("model", "attention"),
           "shape": case.get("shape") or describe(case), "dtype": case["dtype"],
           "layout": case.get("layout", "contiguous"), "target": case.get("target") or target_of(case),
           "aotirt_us": None, "torch_us": None, "ratio": None, "note": ""}
    notes = []
    try:
        theirs = torch_w.ask("setup", case=case)
        row["torch_backend"] = theirs["backend"]
    except WorkerError as error:
        theirs = None
        notes.append(f"torch: {error}")
    shim = case.get("shim") or (aotirt_shim(case, row.get("torch_backend")) if case["op"] == "sdpa" else
                                case["op"] if case["op"] in ("topk", "sort") else "convolution")
    if case["op"] == "sdpa" and row.get("torch_backend") not in (None, "flash", "efficient", "cudnn"):
        notes.append(f"torch has no fused kernel for this shape ({row['torch_backend']})")
    row["aotirt_shim"] = shim
    try:
        ours = aotirt_w.ask("setup", case=case, shim=shim)
    except WorkerError as error:
        ours = None
        notes.append(f"aotirt: {error}")
    if ours and theirs:
        slower = max(ours["us"], theirs["us"], 1.0)
        calls = max(3, min(MAX_CALLS, int(TARGET_US_PER_REP / slower)))
        samples, bound = {"aotirt": [], "torch": []}, False
        try:
            for r in range(reps):
                order = [("aotirt", aotirt_w), ("torch", torch_w)]
                for side, worker in order if r % 2 == 0 else order[::-1]:
                    answer = worker.ask("rep", calls=calls)
                    samples[side].append(answer["us"])
                    bound |= answer["host_bound"]
        except WorkerError as error:
            notes.append(str(error))
        else:
            row["aotirt_us"] = round(statistics.median(samples["aotirt"]), 3)
            row["torch_us"] = round(statistics.median(samples["torch"]), 3)
            row["ratio"] = round(row["aotirt_us"] / row["torch_us"], 3)
            # Each round's pair, timed in turns: how often the row is over its target, not only whether.
            row["round_ratios"] = [round(a / t, 3) for a, t in zip(samples["aotirt"], samples["torch"]) if t]
            row["calls"], row["reps"] = calls, reps
            if bound:
                notes.append("host-bound in some repetition (the figure may include launch gaps)")
        notes += [n for n in (ours.get("note"), theirs.get("note")) if n]
    for worker, answer in ((aotirt_w, ours), (torch_w, theirs)):
        if answer is not None:
            try:
                worker.ask("teardown")
            except WorkerError as error:
                notes.append(str(error))
    row["note"] = "; ".join(notes)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common_arguments(parser)
    parser.add_argument("--only", default="conv,attention,sort",
                        help="conv, attention, sort, or several (comma-separated)")
    args = parser.parse_args()
    if args.worker:
        worker_main(args.worker)
        return 0
    from zoo_index import torch_python

    reps = QUICK_REPS if is_quick(args) else REPS
    parts = args.only.split(",")
    pythons = {"aotirt": sys.executable, "torch": torch_python()}
    with driving(os.path.abspath(__file__), pythons, args.out) as (emit, workers, missing):
        if missing:
            emit({"case": "op", "op": "all", "note": "; ".join(missing.values())})
            return 0
        cases = []
        if "conv" in parts:
            try:
                cases += workers["torch"].ask("conv_shapes", models=["resnet18", "mobilenet_v2"])["cases"]
            except WorkerError as error:
                emit({"case": "op", "op": "conv2d", "note": f"no convolution shapes: {error}"})
            cases += WHISPER_FRONT_END
        if "attention" in parts:
            cases += attention_cases()
        if "sort" in parts:
            cases += [dict(case) for case in SORT_CASES]
        for case in cases:
            case.setdefault("dtype", "float32")
            emit(time_case(case, (workers["aotirt"], workers["torch"]), reps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
