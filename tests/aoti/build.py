"""Compiles the models of zoo.py with AOTInductor and saves what tests need.

    python tests/aoti/build.py --device cuda --cache DIR [--only NAMES] [--jobs N]

For each model, in its own torch process: export, compile with
aot_inductor.link_libtorch=False (and, on CUDA, embedded kernels, max
autotune and Triton GEMM/conv backends), then save under
DIR/<key>/<name>/: model.pt2, the library extracted from it (model.so and
its neighbours), inputs as .npy, torch eager outputs as .npy (bfloat16 as
raw uint16 bits), and meta.json. <key> hashes the zoo, this file, the torch
version and the device, so a changed model or torch rebuilds and an
unchanged one is taken as it is (compiling takes about a minute per model).
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))


def cache_key(device):
    import importlib.metadata

    digest = hashlib.sha256()
    for name in ("zoo.py", "build.py"):
        with open(os.path.join(HERE, name), "rb") as f:
            digest.update(f.read())
    digest.update(importlib.metadata.version("torch").encode())
    digest.update(device.encode())
    return digest.hexdigest()[:16]


def inductor_configs(name, device):
    from zoo import BLOB_WEIGHTS, DEFAULT_GEMM

    configs = {"aot_inductor.link_libtorch": False}
    if name in BLOB_WEIGHTS:
        configs["aot_inductor.package_constants_on_disk_format"] = "binary_blob"
    if device == "cuda":
        configs["aot_inductor.embed_kernel_binary"] = True
        if name not in DEFAULT_GEMM:
            configs.update({"max_autotune": True, "max_autotune_gemm_backends": "TRITON",
                            "max_autotune_conv_backends": "TRITON"})
    return configs


def to_numpy(t):
    import torch

    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().view("uint16")
    return t.contiguous().numpy()


def _drop_sources(package):
    """Rewrites the package without its generated C++ sources: the cache only
    needs what runs, and it travels between machines."""
    trimmed = package + ".tmp"
    with zipfile.ZipFile(package) as source, zipfile.ZipFile(trimmed, "w", zipfile.ZIP_DEFLATED) as sink:
        for info in source.infolist():
            if not info.filename.endswith(".cpp"):
                sink.writestr(info, source.read(info))
    os.replace(trimmed, package)


def build_one(name, device, folder):
    import numpy as np
    import torch

    sys.path.insert(0, HERE)
    from zoo import DYNAMIC_BATCH, MODELS

    make_module, make_inputs, dtype = MODELS[name]
    torch.manual_seed(0)
    module = make_module().eval().to(getattr(torch, dtype) if dtype in ("bfloat16", "float16") else torch.float32)
    module = module.to(device)
    inputs = make_inputs(device)
    with torch.no_grad():
        expected = module(*inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    os.makedirs(folder, exist_ok=True)
    for i, x in enumerate(inputs):
        np.save(os.path.join(folder, f"input{i}.npy"), to_numpy(x))
    for i, y in enumerate(expected):
        np.save(os.path.join(folder, f"expected{i}.npy"), to_numpy(y))
    # For chaining two runs of one model: the model applied twice.
    if len(inputs) == 1 and len(expected) == 1 and expected[0].shape == inputs[0].shape:
        with torch.no_grad():
            np.save(os.path.join(folder, "expected_twice.npy"), to_numpy(module(expected[0])))
    meta = {"name": name, "device": device, "torch": torch.__version__, "dtype": dtype,
            "inputs": [str(x.dtype).replace("torch.", "") for x in inputs],
            "outputs": [str(y.dtype).replace("torch.", "") for y in expected],
            "output_strides": [list(y.stride()) for y in expected],
            "configs": inductor_configs(name, device)}
    start = time.time()
    dynamic_shapes = None
    if name in DYNAMIC_BATCH:
        low, high = DYNAMIC_BATCH[name]
        batch = torch.export.Dim("batch", min=low, max=high)
        dynamic_shapes = tuple({0: batch} if i == 0 else None for i in range(len(inputs)))
        meta["dynamic_batch"] = [low, high]
    exported = torch.export.export(module, inputs, dynamic_shapes=dynamic_shapes)
    package = os.path.join(folder, "model.pt2")
    torch._inductor.aoti_compile_and_package(exported, package_path=package,
                                             inductor_configs=inductor_configs(name, device))
    meta["compile_seconds"] = round(time.time() - start, 1)
    with zipfile.ZipFile(package) as z:
        meta["entries"] = z.namelist()
    _drop_sources(package)
    with open(os.path.join(folder, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", choices=["cpu", "cuda"], required=True)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--only", default="", help="comma-separated model names")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--archive", help="also pack the cache folder into this .tar.gz")
    args = parser.parse_args()
    sys.path.insert(0, HERE)
    root = os.path.join(args.cache, cache_key(args.device))
    if args.one:
        build_one(args.one, args.device, os.path.join(root, args.one))
        return 0
    from zoo import MODELS

    names = [n for n in (args.only.split(",") if args.only else MODELS) if n]
    todo = [n for n in names if not os.path.exists(os.path.join(root, n, "meta.json"))]

    def compile_in_subprocess(name):
        start = time.time()
        proc = subprocess.run([sys.executable, __file__, "--device", args.device, "--cache", args.cache, "--one", name],
                              capture_output=True, text=True)
        status = "ok" if proc.returncode == 0 else "FAILED"
        print(f"{name}: {status} in {time.time() - start:.0f} s", flush=True)
        if proc.returncode != 0:
            with open(os.path.join(args.cache, f"{name}.{args.device}.log"), "w") as f:
                f.write(proc.stdout + proc.stderr)
            print(proc.stderr[-3000:], flush=True)
        return proc.returncode

    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        failures = sum(1 for rc in pool.map(compile_in_subprocess, todo) if rc)
    print(f"cache: {root} ({len(names) - len(todo)} cached, {len(todo) - failures} built, {failures} failed)")
    if args.archive:
        import tarfile

        # Only what tests read: the packages (with their libraries) and the .npy/.json files.
        with tarfile.open(args.archive, "w:gz") as tar:
            tar.add(root, arcname=os.path.relpath(root, args.cache))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
