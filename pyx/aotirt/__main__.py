"""aotirt's command line.

  python -m aotirt demo [--device cpu|cuda] [--steps N] [--graph] [--compare-sync]
  python -m aotirt info
  python -m aotirt run MODEL.so|MODEL.pt2 --input x.npy [...] [--device D] [--weights W] [--out DIR]
  python -m aotirt inspect MODEL.so|MODEL.pt2 [--json]
"""

import argparse
import contextlib
import os
import sys


class UsageError(Exception):
    """A bad argument or file: reported in one line, exit status 2."""


class DeviceError(Exception):
    """The device asked for is not there: reported in one line, exit status 1."""


def _device_for_demo(requested):
    import aotirt
    from aotirt._stream import _no_device_reason

    if requested == "cpu":
        return "cpu"
    if aotirt.device_count() > 0:
        return "cuda:0"
    reason = _no_device_reason()
    if requested == "cuda":
        raise DeviceError(f"--device cuda: no usable CUDA GPU here: {reason}")
    print(f"aotirt: no usable CUDA GPU here ({reason}): running on the CPU", file=sys.stderr)
    return "cpu"


_LABELS = {
    "sync_each": "a copy after every step",
    "shared": "one copy at the end",
    "graph": "each step one CUDA graph replay, one copy at the end",
}


def demo(args):
    """Greedy decoding with the example encoder and decoder."""
    from aotirt.pipeline import GreedyDecoder, demo_frames, time_side_by_side

    device = _device_for_demo(args.device)
    if args.graph and device == "cpu":
        raise UsageError("--graph replays CUDA graphs: it needs a CUDA GPU")
    main_mode = "graph" if args.graph else "shared"
    frames = demo_frames(seed=0)
    if args.compare_sync:
        # Side by side; graph only where there is a GPU to replay it on.
        modes = ["sync_each", "shared"] + (["graph"] if device != "cpu" else [])
    else:
        modes = [main_mode]
    with contextlib.ExitStack() as open_decoders:
        decoders = [open_decoders.enter_context(GreedyDecoder(device, mode)) for mode in modes]
        tokens = decoders[modes.index(main_mode)].decode(frames, args.steps)
        print(f"device: {device}")
        print(f"tokens: {' '.join(str(t) for t in tokens)}")
        seconds = time_side_by_side(decoders, frames, args.steps)
    for mode in modes:
        print(f"{mode:>9}: {seconds[mode] * 1e6:9.1f} us per token ({_LABELS[mode]})")
    if args.compare_sync and device == "cpu":
        # Without a GPU there is no stall to remove: a ratio would be noise.
        print("    ratio: not measured: --compare-sync shows what a host wait for the GPU after every step "
              "costs against one wait at the end; on the CPU there is no GPU to wait for and both modes do "
              "the same work. Run it with a CUDA GPU.")
    elif args.compare_sync:
        print(f"    ratio: {seconds['sync_each'] / seconds['shared']:.2f}x faster without a wait per step")
        if "graph" in seconds:
            print(f"    graph: {seconds['shared'] / seconds['graph']:.2f}x faster than shared "
                  f"(one launch per step instead of one per kernel)")
    return 0


def info(args):
    import aotirt

    print(f"aotirt {aotirt.__version__}: {os.path.dirname(aotirt.__file__)}")
    print(f"python {sys.version.split()[0]}")
    print(f"core library: {os.path.join(os.path.dirname(aotirt.__file__), 'libaotirt.so')}")
    count = aotirt.device_count()
    if count > 0:
        print(f"CUDA devices: {count}")
    else:
        from aotirt._stream import _no_device_reason

        print(f"CUDA devices: 0 ({_no_device_reason()})")
    print(f"example models: {', '.join(aotirt.models.available()) or 'none'} "
          f"({os.path.dirname(aotirt.models.path('add_mul', 'cpu'))})")
    from aotirt._library import has_fused_attention, load_optional_library

    print("float32 attention on CUDA: " + ("CUTLASS's fused kernel (AOTIRT_ATTENTION_FUSED=0 for cuBLAS)"
                                          if has_fused_attention() else "cuBLAS (this build has no CUTLASS headers)"))
    # The optional libraries the fallback shims open on first use.
    for label, name in (("cuBLAS", "cublas"), ("cuDNN", "cudnn")):
        try:
            print(f"{label}: {load_optional_library(name)}")
        except aotirt.AotiError as e:
            print(f"{label}: not loadable ({e})")
    return 0


def _load_input(path):
    import numpy as np

    if not os.path.isfile(path):
        raise UsageError(f"input file not found: {path}")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError) as e:
        raise UsageError(f"cannot read {path} as a .npy array: {e}") from None


def _file_names(names, count):
    """Output names as file names: the library's own where they are plain
    names, else output<i>. A name comes from the library (or the package),
    and must not make --out write elsewhere ('../x', '/abs', 'a/b') or twice."""
    import re

    chosen, used = [], set()
    for i in range(count):
        name = names[i] if names and i < len(names) else ""
        if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}", name or "") or name in used:
            name = f"output{i}"
        used.add(name)
        chosen.append(name)
    return chosen


def run(args):
    import numpy as np

    from aotirt import loader

    if not os.path.exists(args.model):
        raise UsageError(f"model library not found: {args.model}")
    if args.weights and not os.path.isfile(args.weights):
        raise UsageError(f"weights file not found: {args.weights}")
    inputs = [_load_input(p) for p in args.input]
    # What aotirt.load opens: a library as it is, a .pt2 package's library
    # with its weights blob (replaced by --weights when given).
    library, blob, package_device = loader.locate(args.model)
    device = args.device or loader.default_device(library, package_device)
    blob = args.weights or blob
    if blob is not None:
        with open(blob, "rb") as f:
            blob = f.read()
    handle = loader.open_handle(library, device, None, blob)
    with handle:
        outputs = handle.run(inputs)
        names = _file_names(handle.output_names, len(outputs))
        if args.out:
            os.makedirs(args.out, exist_ok=True)
        for name, tensor in zip(names, outputs):
            array = tensor.numpy()
            line = f"{name}: shape {tuple(array.shape)} dtype {array.dtype}"
            if args.out:
                target = os.path.join(args.out, f"{name}.npy")
                np.save(target, array)
                line += f" -> {target}"
            print(line)
    return 0


def inspect(args):
    """What a model needs and holds, without opening its library."""
    import json

    from aotirt.inspect_model import format_text
    from aotirt.inspect_model import inspect as inspect_model

    report = inspect_model(args.model)
    print(json.dumps(report, indent=1) if args.json else format_text(report))
    return 0


def parser():
    p = argparse.ArgumentParser(prog="python -m aotirt", description="Run AOTInductor model libraries.")
    commands = p.add_subparsers(dest="command", required=True)

    d = commands.add_parser("demo", help="greedy decoding with the example encoder and decoder")
    d.add_argument("--device", choices=["cpu", "cuda"], default=None,
                   help="default: cuda when a GPU is usable, else cpu")
    d.add_argument("--steps", type=int, default=32, help="tokens to decode (default 32)")
    d.add_argument("--graph", action="store_true",
                   help="replay each decoder step as a CUDA graph (a GPU only)")
    d.add_argument("--compare-sync", action="store_true",
                   help="run with a copy after every step, with one copy at the end and (on a GPU) with "
                        "graph replays, and print the times side by side")
    d.set_defaults(func=demo)

    i = commands.add_parser("info", help="versions, devices, where the libraries are")
    i.set_defaults(func=info)

    r = commands.add_parser("run", help="run any model library or .pt2 package on .npy inputs")
    r.add_argument("model", help="the model library (.so) or package (.pt2)")
    r.add_argument("--input", action="append", default=[], metavar="X.npy", help="one per model input, in order")
    r.add_argument("--device", default=None,
                   help="cpu, cuda or cuda:N (default: a package's own device; for a library, cuda when it "
                        "calls CUDA, else cpu)")
    r.add_argument("--weights", help="a weights blob for AOTInductorModelUpdateConstantsFromBlob (instead of "
                                     "a package's own)")
    r.add_argument("--out", metavar="DIR", help="save each output as DIR/<name>.npy")
    r.set_defaults(func=run)

    n = commands.add_parser("inspect", help="what a model library or .pt2 needs and holds (no model code runs)")
    n.add_argument("model", help="the model library (.so) or package (.pt2)")
    n.add_argument("--json", action="store_true", help="print the report as JSON")
    n.set_defaults(func=inspect)
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    if getattr(args, "steps", 1) < 1:
        print("aotirt: --steps must be at least 1", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except UsageError as e:
        print(f"aotirt: {e}", file=sys.stderr)
        return 2
    except DeviceError as e:
        print(f"aotirt: {e}", file=sys.stderr)
        return 1
    except (RuntimeError, ValueError, TypeError, OSError) as e:  # one line, never a traceback
        print(f"aotirt: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
