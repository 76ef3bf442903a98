"""The report's decode section and targets (bench/decode.py's rows, issue 16), for
bench/report.py."""

from report_common import fmt, section

DECODE_INTRO = ("bench/decode.py, issue 16. Per call: `aotirt run` (a handle loaded with graphs=False), "
                "`aotirt auto-graph` (loaded with graphs=True: a CUDA graph captured per input signature, "
                "replayed after), torch's runner on the same library (the faster of its two modes); calls back "
                "to back. `GPU us`: the model's GPU time, the least that either aotirt handle needs per call "
                "(CUDA events around a batch queued behind a spin kernel). Targets: auto-graph within 1.15x of "
                "the GPU time; on the decoders, torch's runner at least 2.5x the auto-graph time.")

LOOP_INTRO = ("The greedy loop of the decoder step (a static KV cache as mutable buffers): tokens per second "
              "of a whole decode, from the first call to the tokens on the host. aotirt: `handle.loop`, each "
              "step's outputs fed back on the device, the tokens read once; torch: the loop as users write it, "
              "a `.item()` per token, eagerly (the same module) and through torch's runner (the same library). "
              "`GPU us per step`: events around a whole aotirt loop behind a spin. Targets: aotirt's loop with "
              "graphs at least 3x torch eager and 2x torch's runner, and its time per token within 1.2x of "
              "the step's GPU time (the decoder's per-call GPU time above).")


def _ratio(numerator, denominator):
    return numerator / denominator if numerator and denominator else None


def decode_targets(rows):
    """[(what, ratio or None, bound, "max" or "min")] of bench/decode.py's rows:
    what each target compares, the ratio, and its bound (at most / at least)."""
    calls = [r for r in rows if r["case"] == "decode_call" and r["model"] != "all"]
    targets, gpu = [], {}
    for model in dict.fromkeys(r["model"] for r in calls):
        mine = {r["runner"]: r for r in calls if r["model"] == model}
        auto = (mine.get("aotirt auto-graph") or {}).get("us_per_call")
        gpus = [r.get("gpu_us_per_call") for r in mine.values() if r["runner"].startswith("aotirt")]
        gpu[model] = min((g for g in gpus if g), default=None)
        targets.append((f"{model}: auto-graph per call / GPU time", _ratio(auto, gpu[model]), 1.15, "max"))
        if any(r.get("decoder") for r in mine.values()):
            runner = min((r["us_per_call"] for r in mine.values()
                          if r["runner"].startswith("torch") and r.get("us_per_call")), default=None)
            targets.append((f"{model}: torch's runner / auto-graph per call", _ratio(runner, auto), 2.5, "min"))
    loops = {r["runner"]: r for r in rows if r["case"] == "decode_loop" and r["runner"] != "all"}
    if loops:
        ours = loops.get("aotirt loop (graphs)") or {}
        model = ours.get("model")
        for prefix, bound in (("torch eager loop", 3.0), ("torch runner loop", 2.0)):
            theirs = next((r for label, r in loops.items() if label.startswith(prefix)), {})
            targets.append((f"loop: aotirt (graphs) / {prefix}, tokens per s",
                            _ratio(ours.get("tokens_per_s"), theirs.get("tokens_per_s")), bound, "min"))
        targets.append(("loop: aotirt (graphs) us per token / the step's GPU time",
                        _ratio(ours.get("us_per_token"), gpu.get(model)), 1.2, "max"))
    return targets


def decode_met(targets):
    return sum(r is not None and (r <= b if way == "max" else r >= b) for _, r, b, way in targets)


def decode_section(rows):
    """bench/decode.py: real models per call with automatic graphs, and the decode loop."""
    calls = [r for r in rows if r["case"] == "decode_call"]
    loops = [r for r in rows if r["case"] == "decode_loop"]
    if not calls and not loops:
        return []
    out = section("decode", DECODE_INTRO, ["model", "runner", "us per call", "host us per call", "GPU us per call",
                                            "note"])
    for row in calls:
        if row["model"] != "all":
            out.append(f"| {row['model']} | {row['runner']} | {fmt(row.get('us_per_call'))} | "
                       f"{fmt(row.get('host_us_per_call'))} | {fmt(row.get('gpu_us_per_call'))} | "
                       f"{row.get('note', '')} |")
    out += ["", LOOP_INTRO, "", "| runner | steps | tokens per s | us per token | GPU us per step | note |",
            "| --- | --- | --- | --- | --- | --- |"]
    for row in (r for r in loops if r["runner"] != "all"):
        out.append(f"| {row['runner']} | {row.get('steps') or '–'} | {fmt(row.get('tokens_per_s'), 0)} | "
                   f"{fmt(row.get('us_per_token'))} | {fmt(row.get('gpu_us_per_step'))} | {row.get('note', '')} |")
    out.append("")
    targets = decode_targets(rows)
    for what, ratio, bound, way in targets:
        if ratio is None:
            out.append(f"- {what}: not compared (a figure is missing).")
            continue
        ok = ratio <= bound if way == "max" else ratio >= bound
        out.append(f"- {what}: {ratio:.2f}x (target: {'at most' if way == 'max' else 'at least'} {bound:.2f}x): "
                   f"{'met' if ok else '**missed**'}.")
    out += ["", f"{decode_met(targets)}/{len(targets)} decode targets met."]
    out += [f"Not timed: {r['note']}" for r in calls + loops if r.get("model") == "all" or r["runner"] == "all"]
    out.append("")
    return out
