"""Command line: ``python -m aotirt demo|info``."""

import argparse
import os
import sys
import time


def _best_device(requested):
    import aotirt

    if requested == "cpu":
        return "cpu"
    if aotirt.device_count() > 0:
        return "cuda:0"
    if requested == "cuda":
        print("aotirt: no CUDA GPU is usable here; running on the CPU instead", file=sys.stderr)
    return "cpu"


def demo(args):
    """Runs add_mul repeatedly on the best device and checks it against numpy."""
    import numpy as np

    import aotirt

    device = _best_device(args.device)
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(args.size).astype(np.float32) for _ in range(3))
    handle_type = aotirt.AotiHandle if device == "cpu" else aotirt.CudaHandle
    with handle_type(aotirt.models.path("add_mul", device), device) as handle:
        tensors = [aotirt.asarray(x, device=device) for x in (a, b, c)]
        handle.run(tensors)  # warm-up: first launch loads the kernel
        start = time.perf_counter()
        for _ in range(args.runs):
            (out,) = handle.run(tensors)
        queued = time.perf_counter() - start
        result = out.numpy()  # the one host wait
        total = time.perf_counter() - start
    exact = a.astype(np.float64) * b + c
    error = float(np.max(np.abs(result - exact)))
    print(f"add_mul on {device}: {args.runs} runs of {args.size} elements")
    print(f"  queued in {queued * 1e6 / args.runs:.2f} us per run, finished in {total * 1e3:.2f} ms")
    print(f"  max abs error against float64 numpy: {error:.3g}")
    return 0 if error < 1e-5 else 1


def info(args):
    import aotirt

    print(f"aotirt {aotirt.__version__} at {os.path.dirname(aotirt.__file__)}")
    print(f"python {sys.version.split()[0]}")
    count = aotirt.device_count()
    print(f"CUDA devices: {count}")
    print(f"example models: {', '.join(aotirt.models.available()) or 'none'}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m aotirt", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("demo", help="run add_mul on the best device and check it")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--runs", type=int, default=1000)
    p.add_argument("--size", type=int, default=1 << 16)
    p.set_defaults(func=demo)
    p = commands.add_parser("info", help="versions, devices, libraries")
    p.set_defaults(func=info)
    args = parser.parse_args(argv)
    if getattr(args, "runs", 1) < 1 or getattr(args, "size", 1) < 1:
        parser.error("--runs and --size must be at least 1")
    try:
        return args.func(args)
    except Exception as e:  # a one-line message, never a traceback
        print(f"aotirt: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
