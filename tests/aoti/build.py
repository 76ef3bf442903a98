"""Compiles the models of zoo.py with AOTInductor and saves what tests need.

    python tests/aoti/build.py --device cuda --cache DIR [--only NAMES] [--jobs N] [--timeout S]

For each model, in its own torch process: export, compile with
aot_inductor.link_libtorch=False, then save under DIR/<key>/<name>/:
model.pt2, inputs as .npy, torch eager outputs as .npy (bfloat16 as raw
uint16 bits), and meta.json, written last (a folder without it is not
built). The configs: the models of issue 4 on CUDA add embedded kernels,
max autotune and Triton GEMM/conv backends; the zoo of issue 14 (zoo.ZOO,
CUDA only unless named with --only) gets inductor's DEFAULT configs plus
link_libtorch=False, as a user would compile it. <key> hashes the zoo, this
file, torch_runner.py, the versions of torch, torchvision and transformers
and the device, so a changed model, config or library rebuilds and an
unchanged one is taken as it is (compiling takes about a minute per model).

A decoder step of zoo.DECODE_LOOPS (a static KV cache: its outputs are its
next inputs) also gets loop_tokens.npy, torch eager's greedy decode of
meta["loop"]["steps"] tokens from its example inputs, computed before the
export (which then sees the cache zeroed).

On CUDA the zoo's folders also get, for the tests' diagnostics:
expected_exact<i>.npy and meta["tf32_drift"] (float32 models: eager with
TF32 off, and how far torch's default TF32 convolutions move eager from it),
and runner<i>.npy with meta["runner_strides"] (torch's own AOTI runner on
the same library, in a process of its own; meta["torch_runner"] says "ok"
or why not).

Each model builds in a subprocess with a time limit (--timeout, default 900
s, its whole process group killed past it, and killed too if build.py gets
SIGTERM or SIGINT); a failure or a time-out is logged with its traceback to
DIR/<name>.<device>.log and reported at the end without stopping the
others. --budget S bounds the whole run: what is built by then stays cached
and a second run builds the rest. Exits 1 if any model failed or was left.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from zoo_index import cache_key  # noqa: E402

RUNNER_TIMEOUT_S = 300


def inductor_configs(name, device):
    from zoo import BLOB_WEIGHTS, DEFAULT_GEMM, ZOO

    configs = {"aot_inductor.link_libtorch": False}
    if name in ZOO:
        return configs          # inductor's defaults: what a user's compile gives
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


def relative_error(actual, expected):
    a, e = actual.detach().double().cpu(), expected.detach().double().cpu()
    return float((a - e).norm() / max(float(e.norm()), 1e-30))


def _drop_sources(package):
    """Rewrites the package without its generated C++ sources: the cache only
    needs what runs, and it travels between machines."""
    trimmed = package + ".tmp"
    with zipfile.ZipFile(package) as source, zipfile.ZipFile(trimmed, "w", zipfile.ZIP_DEFLATED) as sink:
        for info in source.infolist():
            if not info.filename.endswith(".cpp"):
                sink.writestr(info, source.read(info))
    os.replace(trimmed, package)


def _as_tuple(value):
    return value if isinstance(value, tuple) else (value,)


def _exact_fp32(module, inputs):
    """The module's outputs with TF32 off for convolutions and matmuls."""
    import warnings

    import torch

    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
        try:
            with torch.no_grad():
                return _as_tuple(module(*inputs))
        finally:
            torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


def decode_reference(module, folder):
    """A static-KV-cache decoder step's greedy decode in torch eager, from
    its example inputs (loop_tokens.npy, int64 [steps]), and what the tests
    need to redo it; the cache is left zeroed, as the export must see it."""
    import numpy as np

    from static_decoder import LOOP_STEPS, START_TOKEN, greedy_tokens, transformers_agreement

    tokens = greedy_tokens(module, LOOP_STEPS)
    np.save(os.path.join(folder, "loop_tokens.npy"), to_numpy(tokens))
    agreement, gap = transformers_agreement(module, tokens)
    print(f"[{os.path.basename(folder)}] {LOOP_STEPS} greedy tokens, {len(set(tokens.tolist()))} distinct; "
          f"transformers' own forward agrees on {agreement}; smallest top-2 logit gap {gap:.2e}", flush=True)
    return {"steps": LOOP_STEPS, "start_token": START_TOKEN, "start_position": 0, "feedback": [[0, 0], [1, 1]],
            "kv_cache": "static_decoder.StaticKVDecoder: buffers written by copy_ (not transformers' StaticCache)",
            "transformers_agreement": agreement, "min_top2_gap": gap}


def build_one(name, device, folder):
    """Export and compile `name`; writes folder/pending.json (meta.json is
    written by the parent once the package is final)."""
    import numpy as np
    import torch

    sys.path.insert(0, HERE)
    from zoo import DECODE_LOOPS, DYNAMIC_BATCH, MODELS, NON_STRICT, PACKED_FOR_DEVICE, ZOO

    make_module, make_inputs, dtype = MODELS[name]
    print(f"[{name}] building the module ({dtype}) for {device}", flush=True)
    torch.manual_seed(0)
    module = make_module().eval().to(getattr(torch, dtype) if dtype in ("bfloat16", "float16") else torch.float32)
    module = module.to(device)
    if name in PACKED_FOR_DEVICE:
        module.pack_for(device)
    inputs = make_inputs(device)
    with torch.no_grad():
        expected = _as_tuple(module(*inputs))
    os.makedirs(folder, exist_ok=True)
    for i, x in enumerate(inputs):
        np.save(os.path.join(folder, f"input{i}.npy"), to_numpy(x))
    for i, y in enumerate(expected):
        np.save(os.path.join(folder, f"expected{i}.npy"), to_numpy(y))
    # For chaining two runs of one model: the model applied twice.
    if len(inputs) == 1 and len(expected) == 1 and expected[0].shape == inputs[0].shape:
        with torch.no_grad():
            np.save(os.path.join(folder, "expected_twice.npy"), to_numpy(module(expected[0])))
    strict = name not in NON_STRICT
    meta = {"name": name, "device": device, "torch": torch.__version__, "dtype": dtype,
            "inputs": [str(x.dtype).replace("torch.", "") for x in inputs],
            "outputs": [str(y.dtype).replace("torch.", "") for y in expected],
            "output_strides": [list(y.stride()) for y in expected],
            "configs": inductor_configs(name, device), "zoo": name in ZOO}
    if name in ZOO:
        meta["strict"] = strict
        if device == "cuda" and dtype == "float32":
            try:
                exact = _exact_fp32(module, inputs)
            except Exception:  # noqa: BLE001 - a diagnostic only: the tests then use the plain bound
                print(f"[{name}] no TF32-off reference:\n{traceback.format_exc()}", flush=True)
            else:
                for i, y in enumerate(exact):
                    np.save(os.path.join(folder, f"expected_exact{i}.npy"), to_numpy(y))
                meta["tf32_drift"] = [relative_error(y, e) for y, e in zip(expected, exact)]
    if name in DECODE_LOOPS:
        meta["loop"] = decode_reference(module, folder)
    start = time.time()
    dynamic_shapes = None
    if name in DYNAMIC_BATCH:
        low, high = DYNAMIC_BATCH[name]
        batch = torch.export.Dim("batch", min=low, max=high)
        dynamic_shapes = tuple({0: batch} if i == 0 else None for i in range(len(inputs)))
        meta["dynamic_batch"] = [low, high]
    print(f"[{name}] exporting (strict={strict})", flush=True)
    exported = torch.export.export(module, inputs, dynamic_shapes=dynamic_shapes,
                                   **({} if strict else {"strict": False}))
    print(f"[{name}] compiling with {meta['configs']}", flush=True)
    package = os.path.join(folder, "model.pt2")
    torch._inductor.aoti_compile_and_package(exported, package_path=package, inductor_configs=meta["configs"])
    meta["compile_seconds"] = round(time.time() - start, 1)
    with zipfile.ZipFile(package) as z:
        meta["entries"] = z.namelist()
    with open(os.path.join(folder, "pending.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"[{name}] compiled in {meta['compile_seconds']} s", flush=True)


def runner_reference(folder):
    """torch's own AOTI runner on the package: runner<i>.npy."""
    import numpy as np

    sys.path.insert(0, HERE)
    import torch_runner

    with open(os.path.join(folder, "pending.json")) as f:
        meta = json.load(f)
    inputs = [torch_runner.from_numpy(np.load(os.path.join(folder, f"input{i}.npy")), dtype)
              for i, dtype in enumerate(meta["inputs"])]
    with tempfile.TemporaryDirectory() as scratch:
        runner, _so = torch_runner.open_runner(os.path.join(folder, "model.pt2"), folder=scratch)
        outputs = runner.run(inputs)
    for i, y in enumerate(outputs):
        np.save(os.path.join(folder, f"runner{i}.npy"), to_numpy(y))
    with open(os.path.join(folder, "runner.json"), "w") as f:
        json.dump({"strides": [list(y.stride()) for y in outputs]}, f)
    print(f"torch runner: {len(outputs)} outputs", flush=True)


_running = set()      # the process groups run_limited started and has not reaped
_stopping = []        # not empty once SIGTERM or SIGINT came: nothing new starts


def _kill_running(signum, _frame):
    """On SIGTERM/SIGINT: the models' process groups die with this process
    (they run in sessions of their own, which a signal to ours misses)."""
    _stopping.append(signum)
    for pid in list(_running):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    raise SystemExit(128 + signum)


def run_limited(command, timeout, env=None):
    """(returncode or None on time-out, output) of `command` in a process
    group of its own, all of which is killed past `timeout` seconds."""
    if _stopping:
        return None, "*** not started: build.py was stopped\n"
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    _running.add(proc.pid)
    try:
        output, _ = proc.communicate(timeout=max(1.0, timeout))
        return proc.returncode, output
    except subprocess.TimeoutExpired as expired:
        os.killpg(proc.pid, signal.SIGKILL)   # the group we made: the model's process and its compile workers
        try:
            output, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:     # something outside the group holds the pipe: stop reading
            proc.wait()
            output = expired.output or ""
            output = output.decode(errors="replace") if isinstance(output, bytes) else output
        return None, output + f"\n*** killed after {timeout:.0f} s (--timeout or --budget)\n"
    finally:
        _running.discard(proc.pid)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", choices=["cpu", "cuda"], required=True)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--only", default="", help="comma-separated model names (zoo models build on the CPU too)")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=900, help="seconds per model")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds for the whole run: models not started by then are left for the next run, "
                             "running ones are stopped at it (what is built stays cached)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--runner", help=argparse.SUPPRESS)
    parser.add_argument("--archive", help="also pack the cache folder into this .tar.gz")
    args = parser.parse_args()
    sys.path.insert(0, HERE)
    root = os.path.join(args.cache, cache_key(args.device))
    if args.one or args.runner:
        try:
            if args.one:
                build_one(args.one, args.device, os.path.join(root, args.one))
            else:
                runner_reference(os.path.join(root, args.runner))
        except BaseException:
            print(f"*** {args.one or args.runner} failed:\n{traceback.format_exc()}", flush=True)
            return 1
        return 0
    from zoo import MODELS, ZOO

    if args.only:
        names = [n for n in args.only.split(",") if n]
        unknown = [n for n in names if n not in MODELS]
        if unknown:
            parser.error(f"no such model: {', '.join(unknown)} (zoo.py has {', '.join(MODELS)})")
    else:
        names = [n for n in MODELS if args.device == "cuda" or n not in ZOO]
    todo = [n for n in names if not os.path.exists(os.path.join(root, n, "meta.json"))]
    todo.sort(key=lambda n: n not in ZOO)     # the large models first
    env = dict(os.environ)
    # Inductor compiles kernels in a pool of its own per process: share the cores.
    env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", str(max(1, (os.cpu_count() or 2) // max(1, args.jobs))))
    os.makedirs(args.cache, exist_ok=True)

    def build(name):
        """None when `name` built, else its name (its log says why)."""
        try:
            return build_in_subprocesses(name)
        except Exception:  # noqa: BLE001 - one model's failure is reported, the others go on
            with open(os.path.join(args.cache, f"{name}.{args.device}.log"), "a") as f:
                f.write(f"\n*** build.py failed after compiling {name}:\n{traceback.format_exc()}")
            print(f"{name}: FAILED after compiling:\n{traceback.format_exc()}", flush=True)
            return name

    def remaining():
        return float("inf") if args.budget is None else args.budget - (time.time() - began)

    def build_in_subprocesses(name):
        start = time.time()
        if remaining() < 30 or _stopping:
            print(f"{name}: not started (--budget spent or build.py stopped)", flush=True)
            left.append(name)
            return None
        folder = os.path.join(root, name)
        log = os.path.join(args.cache, f"{name}.{args.device}.log")
        common = ["--device", args.device, "--cache", args.cache]
        rc, output = run_limited([sys.executable, __file__, *common, "--one", name], min(args.timeout, remaining()),
                                 env)
        if rc != 0:
            why = "timed out" if rc is None else f"exit status {rc}"
            with open(log, "w") as f:
                f.write(output)
            tail = "\n".join(output.strip().splitlines()[-25:])
            print(f"{name}: FAILED ({why}) in {time.time() - start:.0f} s; log: {log}\n{tail}\n", flush=True)
            return name
        with open(os.path.join(folder, "pending.json")) as f:
            meta = json.load(f)
        if args.device == "cuda" and name in ZOO:
            rc, output = run_limited([sys.executable, __file__, *common, "--runner", name],
                                     min(RUNNER_TIMEOUT_S, max(remaining(), 1.0)), env)
            if rc == 0:
                meta["torch_runner"] = "ok"
                with open(os.path.join(folder, "runner.json")) as f:
                    meta["runner_strides"] = json.load(f)["strides"]
                os.remove(os.path.join(folder, "runner.json"))
            else:
                with open(os.path.join(args.cache, f"{name}.{args.device}.runner.log"), "w") as f:
                    f.write(output)
                lines = output.strip().splitlines() or [""]
                last = next((ln for ln in reversed(lines) if ln.strip() and not ln.startswith(" ")), lines[-1])
                why = "timed out" if rc is None else f"exit status {rc}"
                meta["torch_runner"] = f"failed ({why}): {last[:300]}"
        _drop_sources(os.path.join(folder, "model.pt2"))
        with open(os.path.join(folder, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        os.remove(os.path.join(folder, "pending.json"))
        if os.path.exists(log):
            os.remove(log)
        print(f"{name}: ok in {time.time() - start:.0f} s (compile {meta['compile_seconds']} s"
              + (f", torch runner {meta['torch_runner']}" if "torch_runner" in meta else "") + ")", flush=True)
        return None

    began, left = time.time(), []
    signal.signal(signal.SIGTERM, _kill_running)
    signal.signal(signal.SIGINT, _kill_running)
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        failed = [n for n in pool.map(build, todo) if n]
    built = len(todo) - len(failed) - len(left)
    print(f"cache: {root} ({len(names) - len(todo)} cached, {built} built, {len(failed)} failed, {len(left)} left"
          f" in {time.time() - began:.0f} s)")
    if failed:
        print(f"failed: {', '.join(failed)} (logs: {args.cache}/<name>.{args.device}.log)")
    if left:
        print(f"left for the next run: {', '.join(left)}")
    if args.archive:
        import tarfile

        # Only what tests read: the packages (with their libraries) and the .npy/.json files.
        with tarfile.open(args.archive, "w:gz") as tar:
            tar.add(root, arcname=os.path.relpath(root, args.cache))
    return 1 if failed or left else 0


if __name__ == "__main__":
    sys.exit(main())
