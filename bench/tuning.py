"""The opt-in cuDNN tuning's gain on the zoo's models that convolve; JSON
rows on stdout.

    python bench/tuning.py [--quick] [--out FILE] [--modes wide] [--only NAMES] [--cache DIR]
                           [--untuned] [--recorded]

For each mode (AOTIRT_CUDNN_TUNE=1, wide, or both; wide by default),
bench/zoo.py on the compiled zoo models whose library calls
aoti_torch_cuda_convolution, with an empty AOTIRT_CACHE: each convolution's
first call measures its candidates (cuDNN's engines; in the wide mode also
the configurations one knob away; cuBLAS's GEMM for a 1x1 one, see
cuda_src/shims/libs/cudnn_tuning.h) during the zoo's warm-up, and the
timed calls run the choices, with aotirt and torch's runner in turns as the
zoo times them. Its rows come out with case "tuning" (and "tuning_model":
each model's errors against torch eager, tuned) and the mode.

--untuned adds a first run with the tuning off (mode "off"): the untuned
figures of the same invocation, on the same machine state. --recorded
adds, after each mode's run, one on the choices that run recorded (mode
"1 recorded", "wide recorded"): a process that measures nothing, as every
process after the first runs. Why both (bench/runs/s23-h100-check.md):
on the H100 the tuned graph replays ran faster than the untuned ones on
all ten models while the tuned eager GPU time ran slower on eight, and
only figures of one invocation tell the choices' effect from the
measurement's and from the run-to-run spread of eager GPU time.

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
UNTUNED = "off"                # the label of --untuned's rows
RECORDED = " recorded"         # appended to a mode's label for --recorded's rows
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


def run_zoo(models, tune, quick, cache, choices):
    """The rows of one bench/zoo.py run of `models` under AOTIRT_CUDNN_TUNE=`tune`
    (None: unset), the choices read from and recorded in the folder `choices`."""
    env = {k: v for k, v in os.environ.items() if k != "AOTIRT_CUDNN_TUNE"}
    env.update({"AOTIRT_CACHE": choices}, **({"AOTIRT_CUDNN_TUNE": tune} if tune else {}))
    with tempfile.TemporaryDirectory(prefix="aotirt-bench-tuning-rows-") as scratch:
        path = os.path.join(scratch, "rows.jsonl")
        command = [sys.executable, os.path.join(BENCH, "zoo.py"), "--only", ",".join(models), "--out", path]
        command += ["--quick"] if quick else []
        command += ["--cache", cache] if cache else []
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=False, timeout=3600)
        return [json.loads(line) for line in open(path) if line.strip()] if os.path.exists(path) else []


def planned_runs(modes, untuned, recorded):
    """[(label, AOTIRT_CUDNN_TUNE or None, choices' folder name)] in the order
    they run: a recorded run shares its mode's folder, which the mode's own
    run has filled."""
    runs = [(UNTUNED, None, UNTUNED)] if untuned else []
    for mode in modes:
        runs.append((mode, mode, mode))
        if recorded:
            runs.append((mode + RECORDED, mode, mode))
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds (also AOTIRT_BENCH_QUICK=1)")
    parser.add_argument("--out")
    parser.add_argument("--modes", default="wide", help="comma-separated, of " + ", ".join(MODES))
    parser.add_argument("--only", default="", help="comma-separated zoo models (default: all that convolve)")
    parser.add_argument("--cache", help="the models' cache (default: the tests' .cache/aoti)")
    parser.add_argument("--untuned", action="store_true", help="first, a run with the tuning off (mode \"off\")")
    parser.add_argument("--recorded", action="store_true",
                        help="after each mode's run, one on its recorded choices (mode \"<mode> recorded\")")
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
    with tempfile.TemporaryDirectory(prefix="aotirt-bench-tuning-") as scratch:
        for label, tune, folder in planned_runs(modes, args.untuned, args.recorded) if models else []:
            rows = tuned_rows(run_zoo(models, tune, is_quick(args), args.cache, os.path.join(scratch, folder)), label)
            if not rows:
                emit({"case": "tuning_model", "model": "all", "mode": label, "ran": False,
                      "note": "bench/zoo.py gave no rows (its stderr says why)"})
            for row in rows:
                emit(row)
    emit.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
