"""Issue 16's figures: real models per call with automatic CUDA graphs, and
a greedy decode loop on the device; JSON rows on stdout.

    python bench/decode.py [--quick] [--out FILE] [--cache DIR]

Per call (case "decode_call"; the decoder step llama_decode_f32, llama_bf16,
gemma_f32, mlp, resnet18, as tests/aoti/build.py compiled them):
"aotirt run" (a handle loaded with graphs=False), "aotirt auto-graph" (one
loaded with graphs=True, timed after its warm-up has captured the graph) and
torch's AOTI runner on the same library, by bench/zoo.py's machinery
(bench_model: the same three figures, the same turns, the same workers'
protocol). The model's GPU time is the least GPU time either aotirt handle
needs per call (CUDA events behind a spin kernel: the kernels back to back).

The loop (case "decode_loop", llama_decode_f32): 256 greedy tokens from
token 1 at position 0, timed from the first call to the tokens on the host:
aotirt's handle.loop (graphs on, and off), each step's outputs fed back as
its inputs on the device and the tokens read once; torch eager's greedy loop
as users write it (the same module, a `.item()` per token); and torch's AOTI
runner on the same library, a run and an `.item()` per token. Plus the GPU
time per step of a whole aotirt loop (events behind a spin). Each loop's
tokens are checked against the build's torch eager reference (a row's note
says when they differ). aotirt and torch take turns, one repetition each per
round; medians of 7 rounds (3 with --quick or AOTIRT_BENCH_QUICK=1).

Targets (bench/report.py): auto-graph per call within 1.15x of the model's
GPU time, and at least 2.5x faster than torch's runner on the decoders; the
loop at least 3x torch eager's tokens per second and 2x torch's runner's,
and within 1.2x of the step's GPU time per token.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
import zoo as zoo_bench  # noqa: E402  (bench/zoo.py; it puts tests/aoti on sys.path after itself)
import zoo_check  # noqa: E402  (tests/aoti/zoo_check.py)
from gpu_timer import AotirtClock  # noqa: E402
from timing import REPS  # noqa: E402
from workers import WorkerError, common_arguments, driving, in_turns, is_quick, serve, tear_down  # noqa: E402

# mlp: issue 4's MLP (tests/aoti/zoo.py MODELS), which torch's runner is known to load.
CALL_MODELS = ["llama_decode_f32", "llama_bf16", "gemma_f32", "mlp", "resnet18"]
DECODERS = {"llama_decode_f32", "llama_bf16", "gemma_f32"}
DECODER = "llama_decode_f32"
AOTIRT_CALLS = ("aotirt run", "aotirt auto-graph")
AOTIRT_LOOPS = ("aotirt loop (graphs)", "aotirt loop (eager)")
TORCH_LOOPS = ("torch eager loop (.item() per token)", "torch runner loop (.item() per token)")
FEEDBACK = [(0, 0), (1, 1)]          # next_token -> token, next_position -> position
GRAPH_WARMUP_RUNS = 4                # 2 eager runs, the capture, a replay
TORCH_DEVICE = "cuda"


def _loop_meta(folder):
    import numpy as np

    with open(os.path.join(folder, "meta.json")) as f:
        loop = json.load(f)["loop"]
    return loop, np.load(os.path.join(folder, "loop_tokens.npy")).reshape(-1).tolist()


def _tokens_note(tokens, expected):
    return "" if tokens == expected else "tokens differ from the build's torch eager reference"


# ---------------------------------------------------------------- aotirt worker

class AotirtWorker:
    def __init__(self):
        import numpy as np

        import aotirt

        self.np, self.aotirt = np, aotirt
        self.clock = AotirtClock()
        self.figures = zoo_bench.Figures(self.clock.timer, self.clock.wait)
        self.handles, self.calls = [], {}

    # per call: bench_model's "setup", "rep", "teardown"
    def setup(self, request):
        self.teardown(request)
        aotirt, folder = self.aotirt, request["folder"]
        meta = zoo_check.read_meta(folder)
        path = os.path.join(folder, "model.pt2")
        eager, auto = aotirt.load(path), aotirt.load(path, graphs=True)
        self.handles = [eager, auto]
        inputs = zoo_check.aotirt_inputs(folder, meta)
        self.calls = {"aotirt run": lambda: eager.run(inputs), "aotirt auto-graph": lambda: auto.run(inputs)}
        for call in self.calls.values():
            for _ in range(GRAPH_WARMUP_RUNS):
                call()
        self.clock.wait()
        stats = auto.graph_stats
        notes = {"aotirt run": self.clock.note,
                 "aotirt auto-graph": self.clock.note if stats["graphs"] else
                 f"no graph: {stats.get('disabled_reason') or stats}"}
        self.figures.size_spin(self.calls.values())
        return {"est_us": zoo_bench.estimate_us(self.calls["aotirt run"], self.clock.wait), "notes": notes}

    def rep(self, request):
        return {"figures": {label: self.figures.measure(call, request) for label, call in self.calls.items()}}

    def teardown(self, request):
        for handle in self.handles:
            handle.close()
        self.handles, self.calls = [], {}
        self.clock.wait()
        return {}

    # the loop
    def loop_setup(self, request):
        self.teardown(request)
        self.loop, self.expected = _loop_meta(request["folder"])
        path = os.path.join(request["folder"], "model.pt2")
        self.handles = [self.aotirt.load(path, graphs=True), self.aotirt.load(path)]
        notes = {}
        for label, handle in zip(AOTIRT_LOOPS, self.handles):
            tokens, _ = self._decode(handle)         # warm-up: with graphs, the capture
            notes[label] = _tokens_note(tokens, self.expected)
        return {"notes": notes}

    def _inputs(self):
        np, loop = self.np, self.loop
        return [self.aotirt.asarray(np.array([[loop["start_token"]]], np.int64), device=0),
                self.aotirt.asarray(np.array([loop["start_position"]], np.int64), device=0)]

    def _decode(self, handle):
        """(tokens, seconds): one loop from fresh inputs, timed to its tokens on the host."""
        inputs = self._inputs()
        start = time.perf_counter()
        collected, _ = handle.loop(inputs, self.loop["steps"], feedback=FEEDBACK, collect=[0])
        tokens = collected[0].numpy()                # the only wait
        return tokens.reshape(-1).tolist(), time.perf_counter() - start

    def loop_rep(self, request):
        figures = {}
        for label, handle in zip(AOTIRT_LOOPS, self.handles):
            tokens, seconds = self._decode(handle)
            figures[label] = {"seconds": seconds, "tokens_ok": tokens == self.expected}
        # The GPU's time for a whole loop with graphs (events behind a spin);
        # the first batch learns the host's pace, so the spin covers the second.
        steps, timer = self.loop["steps"], self.clock.timer
        timer.reset()
        for _ in range(2):
            inputs = self._inputs()
            gpu_us, bound = timer.us_per_call(
                lambda inputs=inputs: self.handles[0].loop(inputs, steps, feedback=FEEDBACK, collect=[0]), 1,
                self.clock.wait)
        figures[AOTIRT_LOOPS[0]].update(gpu_us_per_step=gpu_us / steps, host_bound=bound)
        return {"figures": figures}

    loop_teardown = teardown


# ----------------------------------------------------------------- torch worker

class TorchWorker(zoo_bench.TorchWorker):
    """bench/zoo.py's torch worker (torch's runner per call), and the loops."""

    def loop_setup(self, request):
        import torch

        import torch_runner
        from static_decoder import llama_static_decoder

        self.teardown(request)
        self.loop, self.expected = _loop_meta(request["folder"])
        # The build's module (build.py: the seed, eval, float32, the device):
        # the same weights, as the reference tokens check.
        torch.manual_seed(0)
        self.module = llama_static_decoder().eval().to(torch.float32).to(TORCH_DEVICE)
        self.scratch.append(tempfile.mkdtemp(prefix="aotirt-bench-decode-"))
        self.runner, _so = torch_runner.open_runner(os.path.join(request["folder"], "model.pt2"), self.scratch[-1])
        self.loops = {TORCH_LOOPS[0]: self.module, TORCH_LOOPS[1]: lambda token, position: self.runner.run(
            [token, position])}
        notes = {}
        for label, step in self.loops.items():
            tokens, _ = self._decode(step)
            notes[label] = _tokens_note(tokens, self.expected)
        return {"notes": notes}

    def _decode(self, step):
        """(tokens, seconds) of a greedy loop as users write it: the step, then .item()."""
        torch, loop = self.torch, self.loop
        token = torch.tensor([[loop["start_token"]]], dtype=torch.int64, device=TORCH_DEVICE)
        position = torch.tensor([loop["start_position"]], dtype=torch.int64, device=TORCH_DEVICE)
        self.wait()
        tokens = []
        start = time.perf_counter()
        with torch.no_grad():
            for _ in range(loop["steps"]):
                token, position = step(token, position)
                tokens.append(token.item())
        return tokens, time.perf_counter() - start

    def loop_rep(self, request):
        figures = {}
        for label, step in self.loops.items():
            tokens, seconds = self._decode(step)
            figures[label] = {"seconds": seconds, "tokens_ok": tokens == self.expected}
        return {"figures": figures}

    def loop_teardown(self, request):
        self.loops, self.module, self.runner = {}, None, None
        return self.teardown(request)


def worker_main(kind):
    worker = AotirtWorker() if kind == "aotirt" else TorchWorker()
    serve({"setup": worker.setup, "rep": worker.rep, "teardown": worker.teardown, "ping": lambda request: {},
           "loop_setup": worker.loop_setup, "loop_rep": worker.loop_rep, "loop_teardown": worker.loop_teardown})


# ----------------------------------------------------------------------- driver

def loop_rows(folder, workers, reps):
    """The loop's rows: both workers set up, then `reps` rounds in turns."""
    labels = {"aotirt": AOTIRT_LOOPS, "torch": TORCH_LOOPS}
    notes, samples, active = {}, {}, []
    for side, worker in workers.items():
        try:
            notes.update(worker.ask("loop_setup", folder=folder)["notes"])
            active.append(side)
        except WorkerError as error:
            notes.update({label: f"failed: {error}" for label in labels[side]})
    in_turns(workers, active, reps, lambda w: w.ask("loop_rep"), labels, notes, samples)
    tear_down(workers, workers, "loop_teardown")
    rows, steps = [], len(_loop_meta(folder)[1])
    for label in (*AOTIRT_LOOPS, *TORCH_LOOPS):
        row = {"case": "decode_loop", "model": DECODER, "runner": label, "steps": None, "tokens_per_s": None,
               "us_per_token": None, "note": notes.get(label, "")}
        runs = samples.get(label, [])
        if len(runs) == reps:
            seconds = statistics.median(s["seconds"] for s in runs)
            row.update(steps=steps, tokens_per_s=round(steps / seconds, 1),
                       us_per_token=round(seconds / steps * 1e6, 3))
            if not all(s["tokens_ok"] for s in runs):
                row["note"] = "; ".join(n for n in (row["note"], "tokens differed in some round") if n)
            if "gpu_us_per_step" in runs[0]:
                row["gpu_us_per_step"] = round(statistics.median(s["gpu_us_per_step"] for s in runs), 3)
                if any(s["host_bound"] for s in runs):
                    row["note"] = "; ".join(n for n in (row["note"], "loop GPU time host-bound in some round") if n)
        rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common_arguments(parser)
    parser.add_argument("--cache", help="the models' cache (default: the tests' .cache/aoti)")
    args = parser.parse_args()
    if args.worker:
        worker_main(args.worker)
        return 0
    from zoo_index import cache_key, default_cache, torch_python

    quick = is_quick(args)
    reps = zoo_bench.QUICK_REPS if quick else REPS
    cache = args.cache or default_cache()
    root = os.path.join(cache, cache_key("cuda"))
    pythons = {"aotirt": sys.executable, "torch": torch_python()}
    with driving(os.path.abspath(__file__), pythons, args.out) as (emit, workers, missing):
        if "aotirt" in missing:
            emit({"case": "decode_call", "model": "all", "runner": "aotirt", "us_per_call": None,
                  "note": missing["aotirt"]})
            return 0
        for name in CALL_MODELS:
            folder = os.path.join(root, name)
            if not os.path.exists(os.path.join(folder, "meta.json")):
                for label in (*AOTIRT_CALLS, *zoo_bench.TORCH_RUNNERS):
                    emit({"case": "decode_call", "model": name, "runner": label, "us_per_call": None,
                          "decoder": name in DECODERS, "note": f"not compiled (no {folder}/meta.json)"})
                continue
            for row in zoo_bench.bench_model(name, folder, workers, reps, quick, case="decode_call",
                                             aotirt_runners=AOTIRT_CALLS):
                row["decoder"] = name in DECODERS        # the runner target is set on decoders only
                if "torch" in missing and row["runner"] in zoo_bench.TORCH_RUNNERS:
                    row["note"] = missing["torch"]
                emit(row)
        folder = os.path.join(root, DECODER)
        if os.path.exists(os.path.join(folder, "meta.json")):
            for row in loop_rows(folder, workers, reps):
                if "torch" in missing and row["runner"] in TORCH_LOOPS:
                    row["note"] = missing["torch"]
                emit(row)
        else:
            emit({"case": "decode_loop", "model": DECODER, "runner": "all", "tokens_per_s": None,
                  "note": f"not compiled (no {folder}/meta.json)"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
