"""Whether the kind of stream moves float16/bfloat16 attention's GPU time:
a diagnostic for the attention rows of bench/ops.py, not a benchmark.

    python3 bench/probe_attention_streams.py [--rounds N] [--out FILE]

bench/ops.py finds aotirt's cuDNN attention 0.01 to 0.29 us a call over
torch's op on the same cuDNN kernel, a gap that does not grow with the
length, and its two sides differ in their streams: torch's worker runs on
the legacy default stream, aotirt's on its shared non-blocking stream. This
times the same op on several streams within one process per side, the
variants taking turns round by round, so that only the stream differs:

  torch:  legacy (the default stream), nonblocking and blocking (made with
          cudaStreamCreateWithFlags), high (non-blocking, greatest priority);
  aotirt: shared (its own stream, with its block cache), and the same three
          made streams adopted (through the stream guard a model library
          uses; an adopted stream allocates from the pool, not the cache).

Each figure: GPU us per call (CUDA events around calls queued behind a spin
kernel, bench/gpu_timer.py), the median over the rounds. One JSON row per
side, shape and stream on stdout (and appended to --out). Each side runs in
a child process of its own (torch's in torch_python(), aotirt's without
torch). `--side aotirt|torch --single [--stream NAME]` runs one side's first
shape on one stream alone (its own unless NAME says), for a profiler (ncu,
nsys) to compare the two sides' kernels or one side's streams.
"""

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(REPO, "tests", "aoti"))
from gpu_timer import GpuTimer, RuntimeEvents, Spinner, _check  # noqa: E402
from workers import Rows  # noqa: E402

CASES = [  # (dtype, L, E, causal): the rows furthest over in session 35
    ("float16", 128, 64, False), ("bfloat16", 128, 128, False), ("float16", 512, 64, False),
    ("bfloat16", 512, 128, True), ("float16", 1024, 128, True),
]
CALLS = 200
ONLY = [None]   # --single: the one stream to time (the side's own unless --stream names another)


def made_streams():
    """{name: address} of streams made with cudaStreamCreateWithFlags/-Priority."""
    from cuda.bindings import runtime

    _lowest, high = _check(runtime.cudaDeviceGetStreamPriorityRange(), "cudaDeviceGetStreamPriorityRange")
    flags = runtime.cudaStreamNonBlocking
    return {"nonblocking": int(_check(runtime.cudaStreamCreateWithFlags(flags), "cudaStreamCreateWithFlags")),
            "blocking": int(_check(runtime.cudaStreamCreateWithFlags(runtime.cudaStreamDefault),
                                   "cudaStreamCreateWithFlags")),
            "high": int(_check(runtime.cudaStreamCreateWithPriority(flags, high), "cudaStreamCreateWithPriority"))}


def chosen(streams):
    """`streams` ({name: stream}), or only the one --single asked for."""
    if ONLY[0] is None:
        return streams
    if ONLY[0] not in streams:
        raise SystemExit(f"--stream {ONLY[0]}: this side times {', '.join(streams)}")
    return {ONLY[0]: streams[ONLY[0]]}


def loaded_cudnn():
    """The cuDNN and NVRTC libraries mapped into this process (which builds
    each side runs: cuDNN's runtime-compiled engines are compiled by NVRTC)."""
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps if "libcudnn" in line or "libnvrtc" in line})


def run_rounds(variants, rounds):
    """{key: median us per call} of `variants`, {key: (timer, call, wait)},
    timed in turns, one repetition each per round, the order reversed every
    other round."""
    samples = {key: [] for key in variants}
    keys = list(variants)
    for r in range(rounds):
        for key in keys if r % 2 == 0 else keys[::-1]:
            timer, call, wait = variants[key]
            samples[key].append(timer.us_per_call(call, CALLS, wait)[0])
    return {key: statistics.median(values) for key, values in samples.items()}


def torch_side(rounds):
    import torch
    import torch.nn.functional as F

    torch.cuda.init()
    spinner = Spinner(0)
    streams = {"legacy": torch.cuda.default_stream()}
    streams.update({name: torch.cuda.ExternalStream(address) for name, address in made_streams().items()})
    streams = chosen(streams)
    variants = {}
    for dtype, seq, dim, causal in CASES:
        for name, stream in streams.items():
            with torch.cuda.stream(stream):
                g = torch.Generator(device="cuda").manual_seed(1)
                q, k, v = (torch.randn(2, 8, seq, dim, generator=g, device="cuda").to(getattr(torch, dtype))
                           for _ in range(3))

                def call(q=q, k=k, v=v, c=causal):
                    F.scaled_dot_product_attention(q, k, v, is_causal=c)
                for _ in range(3):
                    call()
            events = RuntimeEvents(stream.cuda_stream)
            wait = stream.synchronize

            def in_stream(call=call, stream=stream):
                with torch.cuda.stream(stream):
                    call()
            timer = GpuTimer(stream.cuda_stream, events, spinner)
            with torch.inference_mode():
                timer.us_per_call(in_stream, 3, wait)
                variants[((dtype, seq, dim, causal), name)] = (timer, in_stream, wait)
    with torch.inference_mode():
        return run_rounds(variants, rounds)


def aotirt_side(rounds):
    import aotirt
    from ops import AotirtWorker

    sys.path.insert(0, os.path.join(REPO, "tests"))
    from support import shims as sc

    worker = AotirtWorker()
    streams = chosen({"shared": None, **made_streams()})
    guard_new = sc.shim("aoti_torch_create_cuda_stream_guard", sc.P, sc.I32, sc.P)
    guard_delete = sc.shim("aoti_torch_delete_cuda_stream_guard", sc.P)
    spinner = Spinner(0)
    variants, keep = {}, []
    for dtype, seq, dim, causal in CASES:
        case = {"op": "sdpa", "batch": 2, "heads": 8, "kv_heads": 8, "seq": seq, "head_dim": dim,
                "causal": causal, "dtype": dtype}
        for name, address in streams.items():
            stream = aotirt.Stream.shared(0) if address is None else aotirt.Stream.from_external(address, device=0)
            marker = aotirt.asarray(sc.np.zeros(1, sc.np.float32), device=0, stream=stream)
            worker.input_stream = stream
            call, _ = worker.setup_sdpa(case, "cudnn")
            keep.append((worker.keep, marker, stream))
            worker.keep = []
            if address is not None:
                # The shims run on the thread's current stream: the guard a model library makes.
                def on_stream(call=call, address=address):
                    guard = ctypes.c_void_p()
                    worker._checked(guard_new(address, 0, ctypes.byref(guard)))
                    try:
                        call()
                    finally:
                        guard_delete(guard)
                call = on_stream

            def wait(marker=marker):
                aotirt.copy_to_host(marker)
            handle = stream.__cuda_stream__()[1]
            timer = GpuTimer(handle, RuntimeEvents(handle), spinner)
            for _ in range(3):
                call()
            timer.us_per_call(call, 3, wait)
            variants[((dtype, seq, dim, causal), name)] = (timer, call, wait)
    return run_rounds(variants, rounds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out")
    parser.add_argument("--side", choices=("torch", "aotirt"), help=argparse.SUPPRESS)
    parser.add_argument("--single", action="store_true",
                        help="with --side: the first shape on one stream only (for ncu or nsys)")
    parser.add_argument("--stream", choices=("legacy", "shared", "nonblocking", "blocking", "high"),
                        help="with --single: that stream (default: the side's own, torch legacy, aotirt shared)")
    args = parser.parse_args()
    if args.stream and not args.single:
        parser.error("--stream goes with --single")
    if args.single:
        del CASES[1:]
        ONLY[0] = args.stream or ("legacy" if args.side == "torch" else "shared")
    if args.side:
        figures = (torch_side if args.side == "torch" else aotirt_side)(args.rounds)
        for (case, stream), us in figures.items():
            dtype, seq, dim, causal = case
            print(json.dumps({"side": args.side, "dtype": dtype, "seq": seq, "head_dim": dim, "causal": causal,
                              "stream": stream, "us": round(us, 3)}), flush=True)
        print(json.dumps({"side": args.side, "cudnn": loaded_cudnn()}), flush=True)
        return 0
    from zoo_index import torch_python

    emit = Rows(args.out)
    for side, python in (("aotirt", sys.executable), ("torch", torch_python())):
        if python is None:
            emit({"side": side, "note": "no Python with torch (AOTIRT_TORCH_PYTHON, or make torch-venv)"})
            continue
        done = subprocess.run([python, os.path.abspath(__file__), "--side", side, "--rounds", str(args.rounds)],
                              capture_output=True, text=True, env=dict(os.environ))
        if done.returncode != 0:
            emit({"side": side, "note": f"failed ({done.returncode}): {done.stderr[-2000:]}"})
        for line in done.stdout.splitlines():
            if line.startswith("{"):
                emit(json.loads(line))
    emit.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
