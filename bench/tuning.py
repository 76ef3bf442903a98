"""The opt-in cuDNN tuning's gain on the zoo's models that convolve; JSON
rows on stdout.

    python bench/tuning.py [--quick] [--out FILE] [--modes wide] [--only NAMES] [--cache DIR]

For each mode (AOTIRT_CUDNN_TUNE=1, wide, or both; wide by default),
bench/zoo.py on the compiled zoo models whose library calls
aoti_torch_cuda_convolution, with an empty AOTIRT_CACHE: each convolution's
first call measures its candidates (cuDNN's engines; in the wide mode also
the configurations one knob away; cuBLAS's GEMM for a 1x1 one, see
cuda_src/shims/libs/cudnn_tuning.h) during the zoo's warm-up, and the
timed calls run the choices, with aotirt and torch's runner in turns as the
zoo times them. Its rows come out with case "tuning" (and "tuning_model":
each model's errors against torch eager, tuned) and the mode.

Target (issue 14, bench/report.py): the tuned conv models' GPU time, summed,
at least 10% under torch's runner's (cuDNN's heuristics' engines: torch's
default, torch.backends.cudnn.benchmark off).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(REPO, "tests", "aoti"))
from workers import Rows, is_quick  # noqa: E402

MODES = ("1", "wide")          # AOTIRT_CUDNN_TUNE's tuned modes (cudnn_tuning.h)
CONVOLUTION = "aoti_torch_cuda_convolution"


def convolving_models(root, names, named):
    """Of `names`, those compiled under `root` whose library calls the CUDA
    convolution shim, and notes on the others ({name: why left out}): those
    not compiled, and, when the caller `named` them, those that do not
    convolve."""
    import zoo_check

    chosen, left_out = [], {}
    for name in names:
        package = os.path.join(root, name, "model.pt2")
        if not os.path.exists(os.path.join(root, name, "meta.json")):
            left_out[name] = "not compiled"
        elif CONVOLUTION in zoo_check.needed_functions(package):
            chosen.append(name)
        elif named:
            left_out[name] = "calls no CUDA convolution"
    return chosen, left_out


def tuned_rows(rows, mode):
    """bench/zoo.py's rows of a tuned run, as this part's: case "zoo" becomes
    "tuning", "zoo_model" "tuning_model", each with the mode."""
    renamed = {"zoo": "tuning", "zoo_model": "tuning_model"}
    return [dict(r, case=renamed[r["case"]], mode=mode) for r in rows if r.get("case") in renamed]


def run_zoo(models, mode, quick, cache):
    """The rows of one bench/zoo.py run of `models` under AOTIRT_CUDNN_TUNE=mode, choices kept nowhere after."""
    with tempfile.TemporaryDirectory(prefix="aotirt-bench-tuning-") as scratch:
        path = os.path.join(scratch, "rows.jsonl")
        env = dict(os.environ, AOTIRT_CUDNN_TUNE=mode, AOTIRT_CACHE=os.path.join(scratch, "cache"))
        command = [sys.executable, os.path.join(BENCH, "zoo.py"), "--only", ",".join(models), "--out", path]
        command += ["--quick"] if quick else []
        command += ["--cache", cache] if cache else []
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=False, timeout=3600)
        return [json.loads(line) for line in open(path) if line.strip()] if os.path.exists(path) else []


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds (also AOTIRT_BENCH_QUICK=1)")
    parser.add_argument("--out")
    parser.add_argument("--modes", default="wide", help="comma-separated, of " + ", ".join(MODES))
    parser.add_argument("--only", default="", help="comma-separated zoo models (default: all that convolve)")
    parser.add_argument("--cache", help="the models' cache (default: the tests' .cache/aoti)")
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"unknown mode(s) {', '.join(unknown)}: the tuned modes are {', '.join(MODES)}")
    from zoo_index import cache_key, default_cache, zoo_names

    root = os.path.join(args.cache or default_cache(), cache_key("cuda"))
    named = [n for n in args.only.split(",") if n]
    models, left_out = convolving_models(root, named or zoo_names(), bool(named))
    emit = Rows(args.out)
    for name, why in left_out.items():
        emit({"case": "tuning_model", "model": name, "ran": False, "note": why})
    for mode in modes if models else []:
        rows = tuned_rows(run_zoo(models, mode, is_quick(args), args.cache), mode)
        if not rows:
            emit({"case": "tuning_model", "model": "all", "mode": mode, "ran": False,
                  "note": "bench/zoo.py gave no rows (its stderr says why)"})
        for row in rows:
            emit(row)
    emit.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
