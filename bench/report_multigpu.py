"""The report's section on several GPUs (bench/multigpu.py's rows), for
bench/report.py."""

from report_common import fmt as _fmt

INTRO = ("Two GPUs in one process (bench/multigpu.py): a tensor moved from cuda:0 to cuda:1 by `Tensor.to` "
         "(a peer copy after an event, into cuda:1's pool) against `cudaMemcpyPeerAsync` on the same stream; the "
         "example pipeline split across two GPUs against one; and one thread per GPU on a model whose GPU time "
         "dominates, against N times one GPU.")


def multigpu_section(rows):
    rows = [r for r in rows if r["case"] == "multigpu"]
    if not rows:
        return []
    out = ["## Several GPUs", ""]
    untimed = [r["note"] for r in rows if "what" not in r]
    if untimed:
        return out + [f"Not measured: {untimed[0]}.", ""]
    out += [INTRO, "", "| bytes | Tensor.to GB/s | cudaMemcpyPeerAsync GB/s | Tensor.to / cudaMemcpyPeerAsync | "
                       "peer access |", "| --- | --- | --- | --- | --- |"]
    for r in (r for r in rows if r["what"] == "copy"):
        ratio = r["aotirt_gbps"] / r["peer_async_gbps"] if r.get("peer_async_gbps") else None
        out.append(f"| {r['bytes']} | {_fmt(r['aotirt_gbps'])} | {_fmt(r['peer_async_gbps'])} | "
                   f"{_fmt(ratio)}x | {'on' if r['peer'] else 'off (staged by the driver)'} |")
    pipeline = {r["layout"]: r for r in rows if r["what"] == "pipeline"}
    if pipeline:
        out += ["", "| pipeline (graph mode) | us per token | note |", "| --- | --- | --- |"]
        for layout, r in pipeline.items():
            out.append(f"| {layout} | {_fmt(r['us_per_token'])} | {r.get('note', '')} |")
        if "one GPU" in pipeline and "two GPUs" in pipeline:
            ratio = pipeline["two GPUs"]["us_per_token"] / pipeline["one GPU"]["us_per_token"]
            out += ["", f"- split across two GPUs / one GPU, us per token: {ratio:.2f}x."]
    scaling = [r for r in rows if r["what"] == "scaling"]
    one = next((r for r in scaling if r["gpus"] == 1), None)
    many = next((r for r in scaling if r["gpus"] > 1), None)
    if one and many:
        met = many["scaling"] >= many["target"]
        out += ["", f"- one thread per GPU, add_mul on {many['elements']} elements: {_fmt(one['runs_per_s'], 1)} "
                    f"runs/s on one GPU, {_fmt(many['runs_per_s'], 1)} on {many['gpus']}: {many['scaling']:.2f} of "
                    f"{many['gpus']}x one GPU (target: at least {many['target']:.2f}): "
                    f"{'met' if met else '**missed**'}."]
    out.append("")
    return out
