"""Writes BENCHMARKS.md from the JSON lines of one benchmark run.

    python bench/report.py RESULTS.jsonl [--command "make bench"] > BENCHMARKS.md

The table is generated, never edited by hand: run the benchmarks again to
change it. Ratios are computed between figures of the same run.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_common import find, fmt, section  # noqa: E402,F401  (tests read them here too)
from report_decode import decode_met, decode_section, decode_targets  # noqa: E402
from report_multigpu import multigpu_section  # noqa: E402
from report_tuning import tuning_section, tuning_summary  # noqa: E402


def gpu_line():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
        return out.splitlines()[0] if out else "no GPU"
    except (OSError, subprocess.TimeoutExpired):
        return "no GPU"


def affinity_lines(rows):
    """Where the drivers of ops.py, zoo.py and the rest ran their workers
    (bench/affinity.py's rows), each distinct placement once."""
    notes = list(dict.fromkeys(r.get("note", "") for r in rows if r["case"] == "affinity"))
    if not notes:
        return []
    return ["Worker processes (ops, fallback ops, zoo, decode): " + "; ".join(n for n in notes if n) + ".", ""]


def kernel_times_section(rows):
    """The decoder step's kernels, one by one (bench/kernel_times.py), against a graph step."""
    times = [r for r in rows if r["case"] == "kernel_times"]
    if not times:
        return []
    notes = [r["note"] for r in times if "note" in r]
    if notes:
        return [f"Kernel times: not measured ({notes[0]}).", ""]
    out = ["GPU time of each kernel of a decoder step (Nsight Compute, median over steps, caches warm):", "",
           "| # | kernel | GPU us |", "| --- | --- | --- |"]
    total = None
    for row in times:
        if row["position"] == "sum":
            total = row
        else:
            out.append(f"| {row['position']} | `{row['kernel']}` | {row['gpu_us']:.2f} |")
    if total:
        out.append(f"| | sum of {total['kernels']} kernels | {total['gpu_us']:.2f} |")
        out.append("")
        for api in ("c", "python"):
            graph = find(rows, case="pipeline", api=api, mode="graph")
            if graph:
                out.append(f"{api}: a graph step, end to end, over the sum of its kernels' GPU times: "
                           f"{graph['us_per_token'] / total['gpu_us']:.2f}x ({graph['us_per_token']:.2f} against "
                           f"{total['gpu_us']:.2f} us; target: within 1.2x).")
    out.append("")
    return out


OPS_INTRO = ("GPU time per call of aotirt's shim (called through ctypes as a model library calls "
             "it, in a process without torch) and of torch's op on the same shapes and layouts: CUDA events "
             "around a batch of calls queued behind a spin kernel, so the events time the GPU's work and "
             "not the host's launches. aotirt and torch run in two worker processes that take turns, one "
             "repetition each per round. The attention shim is the one a model library calls where torch's "
             "dispatcher picks the `torch` backend. Target: within 1.1x of torch; float16 and bfloat16 "
             "attention at or below torch; the fallback ops of bench/fallback_ops.py (issue 18: the GEMM "
             "family's rest, int4 and float8 matmuls, scatter, index_put, random factories, cumsum) within 1.2x.")

ZOO_INTRO = ("Real models (tests/aoti/zoo.py) compiled by torch with its default inductor configs "
             "and link_libtorch=False, run by aotirt (eagerly and as a replayed CUDA graph, the inputs "
             "copied in) and by torch's AOTIModelContainerRunnerCuda on the same library. `us per call`: "
             "calls back to back; `host us per call`: batches of 20 drained in between; `GPU us per call`: "
             "CUDA events around a batch queued behind a spin kernel, the GPU's own time. The two workers "
             "take turns, one repetition each per round.")


def op_status(row):
    """ok, over (its ratio above its target) or failed (not timed)."""
    if row.get("ratio") is None:
        return "failed"
    return "ok" if row["ratio"] <= row["target"] else "over"


def ops_within_target(rows):
    """(rows within target, rows) of bench/ops.py's shapes (a failed row counts as not within)."""
    ops = [r for r in rows if r["case"] == "op" and "shape" in r]
    return sum(op_status(r) == "ok" for r in ops), len(ops)


def ops_section(rows):
    """bench/ops.py: aotirt's shims against torch's ops, shape by shape."""
    ops = [r for r in rows if r["case"] == "op"]
    if not ops:
        return []
    out = section("ops", OPS_INTRO, ["op", "model", "shape", "dtype", "aotirt shim", "torch", "aotirt us",
                                      "torch us", "ratio", "target", "", "note"])
    untimed = [r for r in ops if "shape" not in r]
    for row in ops:
        if row in untimed:
            continue
        state = op_status(row)
        status = {"ok": "ok", "over": "**over**", "failed": "**failed**"}[state]
        rounds = row.get("round_ratios") or []
        if state == "over" and rounds:
            status += f" ({sum(r > row['target'] for r in rounds)} of {len(rounds)} rounds)"
        out.append(f"| {row['op']} | {row.get('model', '')} | {row['shape']} | {row['dtype']} | "
                   f"{row.get('aotirt_shim', '')} | {row.get('torch_backend', '')} | {fmt(row.get('aotirt_us'))} | "
                   f"{fmt(row.get('torch_us'))} | {fmt(row.get('ratio'))} | {row['target']:.1f}x | {status} | "
                   f"{row.get('note', '')} |")
    within, total = ops_within_target(rows)
    out += ["", f"{within}/{total} shapes within target."]
    over = [r for r in ops if op_status(r) == "over" and r.get("round_ratios")]
    if over:
        some = sum(any(x <= r["target"] for x in r["round_ratios"]) for r in over)
        out.append(f"Of the {len(over)} over target, {some} were within it in at least one round (each round "
                   "times both sides in turns; its ratio is in the row's `round_ratios`).")
    timed = [r for r in ops if r.get("ratio") is not None]
    if timed:
        worst = max(timed, key=lambda r: r["ratio"] / r["target"])
        out.append(f"Furthest from its target: {worst['op']} {worst['shape']} {worst['dtype']}, "
                   f"{worst['ratio']:.2f}x against {worst['target']:.1f}x.")
    out += [f"Not timed: {r['note']}" for r in untimed]
    out.append("")
    return out


def zoo_targets(rows):
    """Per model of bench/zoo.py: (model, aotirt GPU time / the best torch
    runner's, aotirt per call / the best torch runner's); None where a side
    has no figure."""
    models = list(dict.fromkeys(r["model"] for r in rows if r["case"] == "zoo" and r["model"] != "all"))
    result = []
    for model in models:
        mine = find(rows, case="zoo", model=model, runner="aotirt") or {}
        torch_rows = [r for r in rows if r["case"] == "zoo" and r["model"] == model
                      and r["runner"].startswith("torch")]
        ratios = []
        for key in ("gpu_us_per_call", "us_per_call"):
            theirs = [r[key] for r in torch_rows if r.get(key)]
            ratios.append(mine[key] / min(theirs) if mine.get(key) and theirs else None)
        result.append((model, *ratios))
    return result


ZOO_MODELS_INTRO = ("One line per model. `ran`: aotirt ran it (eagerly and as a graph replay), or the "
                    "aoti_torch_* functions its library needs that aotirt does not implement (`missing: ...`); "
                    "`max rel error`: the largest of its outputs' errors against torch eager over both runs "
                    "(relative, ‖out − ref‖ / ‖ref‖; for integer outputs the fraction that differ), bold where "
                    "over its bound (float32 1e-3 or twice torch's own TF32 drift, float16 and bfloat16 2e-2, "
                    "integers exactly); per call: calls back to back; torch runner: the faster of its two modes; "
                    "GPU us: the GPU's own time per call.")


def _best(rows, model, prefix, key):
    values = [r[key] for r in rows if r["case"] == "zoo" and r["model"] == model
              and r["runner"].startswith(prefix) and r.get(key)]
    return min(values, default=None)


def _ran(check):
    if check is None:
        return "no"
    if check.get("missing"):
        return "missing: " + ", ".join(check["missing"])
    return "yes" if check.get("ran") else "no"


def _max_error(check):
    if not check or not check.get("ran"):
        return "–"
    error, limit = check.get("max_rel_error"), check.get("bound") or 0.0
    if error is None:
        return "**not finite**"
    text = "0 (exact)" if error == 0.0 else f"{error:.1e}"
    return text if check.get("within") else f"**{text}** (bound {limit:.0e})"


def zoo_models_table(rows):
    """The zoo's one line per model: ran, error, aotirt's, its graph's and torch's runner's times."""
    models = list(dict.fromkeys(r["model"] for r in rows if r["case"] in ("zoo", "zoo_model") and r["model"] != "all"))
    checks = {r["model"]: r for r in rows if r["case"] == "zoo_model"}
    out = ["| model | ran | max rel error | aotirt us per call | graph us per call | torch runner us per call "
           "| GPU us aotirt | GPU us torch runner | note |", "|" + " --- |" * 9]
    for model in models:
        check = checks.get(model)
        mine = find(rows, case="zoo", model=model, runner="aotirt") or {}
        graph = find(rows, case="zoo", model=model, runner="aotirt graph replay") or {}
        note = (check or {}).get("note") or ("" if (check or {}).get("missing") else mine.get("note", ""))
        if not note and (graph.get("note") or "").startswith("capture failed"):
            note = "no graph: its capture was refused (per-runner rows say why)"
        out.append(f"| {model} | {_ran(check)} | {_max_error(check)} | {fmt(mine.get('us_per_call'))} | "
                   f"{fmt(graph.get('us_per_call'))} | {fmt(_best(rows, model, 'torch', 'us_per_call'))} | "
                   f"{fmt(mine.get('gpu_us_per_call'))} | {fmt(_best(rows, model, 'torch', 'gpu_us_per_call'))} | "
                   f"{note} |")
    missing = [f"{m} ({', '.join(c['missing'])})" for m, c in checks.items() if c.get("missing")]
    ran = [c for c in checks.values() if c.get("ran")]
    out += ["", f"{len(ran)}/{len(models)} models ran, {sum(bool(c.get('within')) for c in ran)} within their "
            f"bounds. Missing functions: {'; '.join(missing) if missing else 'none'}.", ""]
    return out


def zoo_missing(rows):
    """The models with missing functions, as the summary line gives them."""
    return [r["model"] for r in rows if r["case"] == "zoo_model" and r.get("missing")]


def zoo_section(rows):
    """bench/zoo.py: the zoo's models, aotirt against torch's runner on the same libraries."""
    zoo = [r for r in rows if r["case"] == "zoo"]
    if not zoo:
        return []
    out = ["## zoo", "", ZOO_INTRO, "", ZOO_MODELS_INTRO, ""] + zoo_models_table(rows)
    out += ["Per runner:", "", "| model | runner | us per call | host us per call | GPU us per call | note |",
            "|" + " --- |" * 6]
    untimed = [r for r in zoo if r["model"] == "all"]
    for row in zoo:
        if row in untimed:
            continue
        out.append(f"| {row['model']} | {row['runner']} | {fmt(row.get('us_per_call'))} | "
                   f"{fmt(row.get('host_us_per_call'))} | {fmt(row.get('gpu_us_per_call'))} | "
                   f"{row.get('note', '')} |")
    out.append("")
    met = 0
    targets = zoo_targets(rows)
    for model, gpu, call in targets:
        if gpu is None or call is None:
            out.append(f"{model}: not compared (a runner has no figure).")
            continue
        ok = gpu <= 1.0 and call <= 1.0
        met += ok
        rounds = (find(rows, case="zoo", model=model, runner="aotirt") or {}).get("gpu_round_ratios") or []
        over = f" (GPU time over the single-threaded runner's in {sum(r > 1.0 for r in rounds)} of " \
               f"{len(rounds)} rounds)" if gpu > 1.0 and rounds else ""
        out.append(f"{model}: aotirt / torch's runner (the faster of its two modes): GPU time {gpu:.2f} "
                   f"(target: at most 1), per call {call:.2f} (target: at most 1): "
                   f"{'met' if ok else '**missed**'}{over}.")
    out += ["", f"{met}/{len(targets)} models meet both targets."]
    out += [f"Not timed: {r['note']}" for r in untimed]
    out.append("")
    return out


def zoo_tests_ran(junit_path):
    """(passed, total) of the zoo's GPU test (test_zoo_model_matches_torch)
    in a pytest JUnit XML report; None when there is no report."""
    import xml.etree.ElementTree as ElementTree

    if not junit_path or not os.path.exists(junit_path):
        return None
    cases = [c for c in ElementTree.parse(junit_path).iter("testcase")
             if c.get("name", "").startswith("test_zoo_model_matches_torch[")]
    passed = [c for c in cases if not any(child.tag in ("failure", "error", "skipped") for child in c)]
    return len(passed), len(cases)


def summary(rows, junit_path):
    """The gpu-check summary line's zoo and ops parts (and decode's, when it ran)."""
    ran = zoo_tests_ran(junit_path)
    within, total = ops_within_target(rows)
    zoo = f"zoo: {ran[0]}/{ran[1]} ran" if ran else "zoo: tests not run"
    line = f"{zoo} | ops: {within}/{total} within target"
    if any(r["case"] == "zoo_model" for r in rows):
        line += f" | zoo missing functions: {', '.join(zoo_missing(rows)) or 'none'}"
    targets = decode_targets(rows)
    line += f" | decode: {decode_met(targets)}/{len(targets)} targets met" if targets else ""
    tuning = tuning_summary(rows)
    return line + (f" | {tuning}" if tuning else "")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("results")
    parser.add_argument("--command", default="make bench")
    parser.add_argument("--summary", action="store_true",
                        help="print only the gpu-check summary's zoo and ops parts (with --junit)")
    parser.add_argument("--junit", help="pytest's JUnit XML report, for --summary")
    args = parser.parse_args()
    rows = [json.loads(line) for line in open(args.results) if line.strip().startswith("{")] \
        if os.path.exists(args.results) else []
    if args.summary:
        print(summary(rows, args.junit))
        return

    # The benchmarks take 3 repetitions instead of 7 under AOTIRT_BENCH_QUICK=1
    # (bench/workers.py is_quick), and make passes the variable on to this report.
    reps = "3 repetitions (AOTIRT_BENCH_QUICK=1)" if os.environ.get("AOTIRT_BENCH_QUICK") == "1" else "7 repetitions"
    out = ["# Benchmarks", "",
           f"Generated by `bench/report.py` from `{args.command}` on "
           f"{gpu_line()}, {datetime.date.today().isoformat()}. Each figure is the median "
           f"of {reps} after warm-up; ratios compare figures of this same run.", ""]
    out += affinity_lines(rows)

    out += section("dispatch", "Host time per `run` of add_mul (3 inputs of one float32, one output).",
                       ['device', 'api', 'us per call'])
    for row in rows:
        if row["case"] == "dispatch":
            out.append(f"| {row['device']} | {row['api']} | {fmt(row['us_per_call'], 3)} |")
    out.append("")
    out.append("`c`/`python`: 20,000 runs back to back (on CUDA the launch queue fills, so the GPU's "
               "pace shows too); `c_host`/`python_host`: batches of 100 drained in between, the host's "
               "own cost; `c_inproc_host`: the same batches from C inside the Python process "
               "(`aotirt._testing.c_runs`), the like-for-like figure for the Python layer's cost; "
               "`c_floor`: the same kernel launched with no handle. C and Python take turns, "
               "one repetition each per round, so that both see the same host.")
    for device in ["cpu", "cuda:0"]:
        for py_api, c_api in (("python", "c"), ("python_host", "c_host"), ("python_host", "c_inproc_host")):
            py = find(rows, case="dispatch", device=device, api=py_api)
            c = find(rows, case="dispatch", device=device, api=c_api)
            if py and c:
                out.append("")
                out.append(f"{py_api} minus {c_api} on {device}: {py['us_per_call'] - c['us_per_call']:.3f} us "
                           f"per call (target: within 1 us).")
    floor = find(rows, case="dispatch", api="c_floor")
    c_cuda = find(rows, case="dispatch", device="cuda:0", api="c")
    if floor and c_cuda:
        out.append("")
        out.append(f"Handle over a bare launch of the same kernel (C): "
                   f"{c_cuda['us_per_call'] - floor['us_per_call']:.3f} us.")
    out.append("")

    pipeline = [r for r in rows if r["case"] == "pipeline"]
    if pipeline:
        out += section("pipeline", "Encoder once, then greedy decoder steps. Within each api, the modes "
                       "take turns, one decode each per round.",
                       ['api', 'mode', 'steps', 'tokens per s', 'vs sync_each'])
        for row in pipeline:
            base = find(rows, case="pipeline", api=row["api"], mode="sync_each")
            ratio = row["tokens_per_s"] / base["tokens_per_s"] if base else None
            out.append(f"| {row['api']} | {row['mode']} | {row['steps']} | {fmt(row['tokens_per_s'], 0)} "
                       f"| {fmt(ratio)}x |")
        out.append("")
        for api in sorted({r["api"] for r in pipeline}):
            graph, shared = (find(rows, case="pipeline", api=api, mode=m) for m in ("graph", "shared"))
            if graph and shared:
                speedup = graph["tokens_per_s"] / shared["tokens_per_s"]
                out.append(f"{api}: graph / shared, tokens per s: {speedup:.2f}x "
                           f"({graph['us_per_token']:.2f} against {shared['us_per_token']:.2f} us per step).")
            if graph and graph.get("gpu_us_per_step") is not None:
                line = (f"{api}: a graph step takes {graph['us_per_token']:.2f} us per token end to end; on the GPU "
                        f"alone, with the queue full, {graph['gpu_us_per_step']:.2f} us per step (the replay and the "
                        f"token's copy)")
                if shared and shared.get("gpu_us_per_step") is not None:
                    line += (f", against {shared['gpu_us_per_step']:.2f} us for the same kernels launched one by "
                             f"one (the sum of their GPU times, plus the GPU's gaps between launches)")
                gappy = [mode for mode, row in (("graph", graph), ("shared", shared))
                         if row and row.get("gpu_us_per_step") is not None and not row.get("queue_full")]
                if gappy:
                    line += (f" (in {' and '.join(gappy)} mode the host did not keep the queue full: that GPU "
                             f"figure includes the host's gaps)")
                out.append(line + ".")
        out.append("")
        out += kernel_times_section(rows)

    copies = [r for r in rows if r["case"] == "copy"]
    if copies:
        out += section("copy", "Device to host through the copy routine (includes the wait).",
                       ['api', 'memory', 'bytes', 'us', 'GB/s'])
        for row in copies:
            out.append(f"| {row.get('api', 'python')} | {row['memory']} | {int(row['bytes'])} | {fmt(row['us'])} | "
                       f"{fmt(row['GBps'])} |")
        out.append("")

    host_copies = [r for r in rows if r["case"] == "host_copy"]
    if host_copies:
        out += section("host copies", "A strided CPU tensor gathered by aotirt's copy routine (`numpy()`) and "
                       "`np.ascontiguousarray` of the same view, in turns, host clocks (bench/host_copy.py).",
                       ['copy', 'shape', 'dtype', 'strides', 'aotirt ms', 'numpy ms', 'aotirt / numpy'])
        for row in host_copies:
            out.append(f"| {row['model']} | {row['shape']} | {row['dtype']} | {row['strides']} | "
                       f"{fmt(row['aotirt_ms'], 3)} | {fmt(row['numpy_ms'], 3)} | {fmt(row['ratio'], 3)} |")
        out.append("")

    imports = [r for r in rows if r["case"] == "import"]
    if imports:
        out += section("import", "`python -X importtime -c 'import X'`, cumulative, median of 7 fresh processes.",
                       ['module', 'ms'])
        for row in imports:
            out.append(f"| {row['module']} | {row['us'] / 1000:.2f} |")
        ours, numpy = find(rows, case="import", module="aotirt"), find(rows, case="import", module="numpy")
        if ours and numpy:
            out.append("")
            out.append(f"aotirt / numpy: {ours['us'] / numpy['us']:.3f} (target: under 0.1, and under 10 ms).")
        out.append("")

    anchors = [r for r in rows if r["case"] == "anchor"]
    if anchors:
        out += section("anchors", "Host time per call of what users would otherwise use, same GPU, same run.",
                       ['what', 'via', 'us per call', 'note'])
        for row in anchors:
            out.append(f"| {row['what']} | {row['via']} | {fmt(row.get('us_per_call'), 3)} | {row.get('note', '')} |")
        out.append("")

    runners = [r for r in rows if r["case"] == "aoti_runner"]
    if runners:
        out += ["## torch AOTI runner", "",
                "`us per call`: 2,000 calls back to back (the GPU's pace shows once the queue fills); "
                "`host us per call`: batches of 20 drained in between, the runner's own cost on the host.", "",
                "| runner | model | us per call | host us per call | note |", "| --- | --- | --- | --- | --- |"]
        for row in runners:
            out.append(f"| {row['runner']} | {row['model']} | {fmt(row.get('us_per_call'), 2)} "
                       f"| {fmt(row.get('host_us_per_call'), 2)} | {row.get('note', '')} |")
        ours = [r for r in runners if r["runner"].startswith("aotirt") and r.get("us_per_call")]
        timed = [r for r in runners if not r["runner"].startswith("aotirt") and r.get("us_per_call")]
        if ours and timed:
            out.append("")
            for mine in ours:
                for row in timed:
                    # The target is set against torch's runner, not eager torch.
                    target = "" if "eager" in row["runner"] else " (target for torch's runner: at most 0.5)"
                    line = f"{mine['runner']} / {row['runner']}: {mine['us_per_call'] / row['us_per_call']:.2f}{target}"
                    if mine.get("host_us_per_call") and row.get("host_us_per_call"):
                        line += f"; host cost alone: {mine['host_us_per_call'] / row['host_us_per_call']:.2f}"
                    out.append(line + ".")
        floor = find(rows, case="mlp_kernel_times", position="sum")
        mlp_note = next((r["note"] for r in rows if r["case"] == "mlp_kernel_times" and "note" in r), None)
        if mlp_note:
            out += ["", f"The MLP's own GPU time: not measured ({mlp_note})."]
        if floor:
            out.append("")
            out.append(f"The MLP's own GPU time per run: {floor['gpu_us']:.2f} us, the sum of its "
                       f"{floor['kernels']} kernels (Nsight Compute, as for the decoder step); no runner can "
                       f"go below it in a loop of runs.")
            for row in runners:
                if row.get("us_per_call"):
                    out.append(f"- {row['runner']}: {row['us_per_call'] / floor['gpu_us']:.2f}x that.")
        out.append("")
    out += ops_section(rows)
    out += zoo_section(rows)
    out += tuning_section(rows)
    out += decode_section(rows)
    out += multigpu_section(rows)
    print("\n".join(out))


if __name__ == "__main__":
    main()
