"""The report's section on the opt-in cuDNN tuning (bench/tuning.py's rows),
for bench/report.py."""

from report_common import fmt as _fmt

INTRO = ("The zoo's models that convolve, run by aotirt with AOTIRT_CUDNN_TUNE (each convolution's candidates "
         "measured during the warm-up, with an empty choices' file; the timed calls run the choices) and by "
         "torch's runner on the same library (cuDNN's heuristics' engines, torch's default), in turns, timed as "
         "the zoo times them (bench/tuning.py). `untuned`: aotirt's GPU time with the tuning off, from the "
         "same invocation's mode `off` (tuning.py --untuned) where it ran, else from the zoo section, another "
         "run of this report. Mode `<mode> recorded` (--recorded): a later process on the choices its mode "
         "recorded, measuring nothing. Errors: the tuned outputs against torch eager, within the zoo's bounds.")

UNTUNED = "off"  # bench/tuning.py's label for its untuned run

TARGET = 0.90  # issue 14: the tuned conv models' GPU time at least 10% under torch's default choice


def _torch_gpu(rows, model, mode):
    values = [r["gpu_us_per_call"] for r in rows if r["case"] == "tuning" and r["model"] == model
              and r.get("mode") == mode and r["runner"].startswith("torch") and r.get("gpu_us_per_call")]
    return min(values, default=None)


def _gpu(rows, case, model, runner, mode=None):
    for r in rows:
        if r["case"] == case and r["model"] == model and r.get("runner") == runner and r.get("mode") == mode:
            return r.get("gpu_us_per_call")
    return None


def _untuned_gpu(rows, model):
    return _gpu(rows, "tuning", model, "aotirt", UNTUNED) or _gpu(rows, "zoo", model, "aotirt")


def tuning_totals(rows):
    """{mode: (models compared, tuned GPU us summed, torch's runner's summed)}
    over the models where both have a figure."""
    out = {}
    for mode in dict.fromkeys(r["mode"] for r in rows if r["case"] == "tuning"):
        pairs = []
        for model in dict.fromkeys(r["model"] for r in rows if r["case"] == "tuning" and r["mode"] == mode):
            tuned, torch = _gpu(rows, "tuning", model, "aotirt", mode), _torch_gpu(rows, model, mode)
            if tuned and torch:
                pairs.append((tuned, torch))
        out[mode] = (len(pairs), sum(t for t, _ in pairs), sum(r for _, r in pairs))
    return out


def tuning_summary(rows):
    """The gpu-check summary's part: the tuned share of torch's runner's GPU time, per mode."""
    parts = [f"{mode} {tuned / torch:.3f}x torch over {n} models"
             for mode, (n, tuned, torch) in tuning_totals(rows).items() if n]
    return "tuning: " + ", ".join(parts) if parts else ""


def tuning_section(rows):
    tuned = [r for r in rows if r["case"] in ("tuning", "tuning_model")]
    if not tuned:
        return []
    out = ["## cuDNN tuning", "", INTRO, "",
           "| model | mode | GPU us torch runner | GPU us aotirt tuned | tuned / torch | GPU us aotirt untuned | "
           "tuned graph replay GPU us | outputs |", "|" + " --- |" * 8]
    checks = {(r["model"], r.get("mode")): r for r in rows if r["case"] == "tuning_model"}
    for mode in dict.fromkeys(r["mode"] for r in rows if r["case"] == "tuning"):
        for model in dict.fromkeys(r["model"] for r in rows if r["case"] == "tuning" and r["mode"] == mode):
            mine, torch = _gpu(rows, "tuning", model, "aotirt", mode), _torch_gpu(rows, model, mode)
            check = checks.get((model, mode), {})
            outputs = ("within bounds" if check.get("within") else
                       f"**error {_fmt(check.get('max_rel_error'), 6)} over {check.get('bound')}**"
                       if check.get("ran") else check.get("note", "not checked"))
            out.append(f"| {model} | {mode} | {_fmt(torch)} | {_fmt(mine)} | "
                       f"{_fmt(mine / torch if mine and torch else None, 3)} | "
                       f"{_fmt(_untuned_gpu(rows, model))} | "
                       f"{_fmt(_gpu(rows, 'tuning', model, 'aotirt graph replay', mode))} | {outputs} |")
    out.append("")
    for mode, (n, mine, torch) in tuning_totals(rows).items():
        if not n:
            out.append(f"Mode {mode}: no model with both figures.")
            continue
        ratio = mine / torch
        if mode == UNTUNED:
            out.append(f"Mode {mode} (untuned, the baseline), summed over {n} models: aotirt {mine:.1f} us, "
                       f"torch's runner {torch:.1f} us: {ratio:.3f}x.")
            continue
        out.append(f"Mode {mode}, summed over {n} models: aotirt tuned {mine:.1f} us, torch's runner {torch:.1f} us: "
                   f"{ratio:.3f}x, {100 * (1 - ratio):.1f}% under (target: at least {100 * (1 - TARGET):.0f}% "
                   f"under, {TARGET:.2f}x): {'met' if ratio <= TARGET else '**missed**'}.")
    out += [f"Left out: {r['model']}{' (' + r['mode'] + ')' if r.get('mode') else ''}: {r['note']}"
            for r in rows if r["case"] == "tuning_model" and not r.get("ran", True) and r.get("note")]
    out.append("")
    return out
