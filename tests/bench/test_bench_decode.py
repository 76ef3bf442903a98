"""bench/decode.py's driver and bench/report.py's decode section, on the
CPU: fake workers and recorded rows, no GPU and no torch."""

import json
import os
import subprocess
import sys

import numpy as np

from support.helpers import REPO

sys.path.insert(0, os.path.join(REPO, "bench"))
import decode  # noqa: E402
import report  # noqa: E402


class FakeWorker:
    """Answers the loop's requests from canned figures, one list entry per round."""

    def __init__(self, notes, seconds, extra=None):
        self.notes, self.seconds, self.extra, self.asked = notes, seconds, extra or {}, []

    def ask(self, cmd, **fields):
        self.asked.append(cmd)
        if cmd == "loop_setup":
            return {"notes": self.notes}
        if cmd == "loop_rep":
            r = self.asked.count("loop_rep") - 1
            return {"figures": {label: {"seconds": s[r], "tokens_ok": True, **{k: v[r] for k, v in
                                                                                 self.extra.get(label, {}).items()}}
                                for label, s in self.seconds.items()}}
        return {}


def decoder_folder(tmp_path, steps=4):
    (tmp_path / "meta.json").write_text(json.dumps({"loop": {"steps": steps, "start_token": 1,
                                                             "start_position": 0}}))
    np.save(tmp_path / "loop_tokens.npy", np.arange(steps, dtype=np.int64))
    return str(tmp_path)


def test_loop_rows_take_each_runners_median_over_rounds_in_turns(tmp_path):
    graphs, eager = decode.AOTIRT_LOOPS
    torch_eager, torch_runner = decode.TORCH_LOOPS
    aotirt = FakeWorker({graphs: "", eager: ""}, {graphs: [0.004, 0.001, 0.002], eager: [0.01, 0.01, 0.01]},
                        {graphs: {"gpu_us_per_step": [400.0, 300.0, 350.0], "host_bound": [False, True, False]}})
    torch = FakeWorker({torch_eager: "", torch_runner: "tokens differ from the build's torch eager reference"},
                       {torch_eager: [0.04, 0.04, 0.04], torch_runner: [0.02, 0.02, 0.02]})
    rows = {r["runner"]: r for r in decode.loop_rows(decoder_folder(tmp_path), {"aotirt": aotirt, "torch": torch}, 3)}
    assert aotirt.asked == torch.asked == ["loop_setup", "loop_rep", "loop_rep", "loop_rep", "loop_teardown"]
    # 4 tokens in the median 0.002 s: 2000 tokens per s, 500 us per token.
    assert rows[graphs]["tokens_per_s"] == 2000.0 and rows[graphs]["us_per_token"] == 500.0
    assert rows[graphs]["gpu_us_per_step"] == 350.0 and "host-bound in some round" in rows[graphs]["note"]
    assert rows[torch_eager]["tokens_per_s"] == 100.0 and rows[torch_eager]["steps"] == 4
    assert rows[torch_runner]["note"] == "tokens differ from the build's torch eager reference"


def test_a_loop_worker_that_fails_to_set_up_leaves_its_rows_untimed(tmp_path):
    class Broken(FakeWorker):
        def ask(self, cmd, **fields):
            if cmd == "loop_setup":
                raise decode.WorkerError("the torch worker died during loop_setup (exit status 1)")
            return super().ask(cmd, **fields)

    graphs, eager = decode.AOTIRT_LOOPS
    aotirt = FakeWorker({graphs: "", eager: ""}, {graphs: [0.001], eager: [0.002]})
    rows = decode.loop_rows(decoder_folder(tmp_path), {"aotirt": aotirt, "torch": Broken({}, {})}, 1)
    untimed = [r for r in rows if r["runner"] in decode.TORCH_LOOPS]
    assert len(untimed) == 2 and all(r["tokens_per_s"] is None and "died during loop_setup" in r["note"]
                                     for r in untimed)
    assert all(r["tokens_per_s"] for r in rows if r["runner"] in decode.AOTIRT_LOOPS)


def call_row(model, runner, us, gpu, decoder=True, note=""):
    return {"case": "decode_call", "model": model, "runner": runner, "us_per_call": us, "host_us_per_call": us,
            "gpu_us_per_call": gpu, "decoder": decoder, "note": note}


def loop_row(runner, tokens_per_s, gpu=None):
    row = {"case": "decode_loop", "model": "llama_decode_f32", "runner": runner, "steps": 256,
           "tokens_per_s": tokens_per_s, "us_per_token": round(1e6 / tokens_per_s, 3), "note": ""}
    if gpu is not None:
        row["gpu_us_per_step"] = gpu
    return row


ROWS = [call_row("llama_decode_f32", "aotirt run", 300.0, 45.0),
        call_row("llama_decode_f32", "aotirt auto-graph", 50.0, 48.0),
        call_row("llama_decode_f32", "torch runner", 200.0, 190.0),
        call_row("llama_decode_f32", "torch runner (run_single_threaded)", 150.0, 50.0),
        call_row("resnet18", "aotirt run", 400.0, 280.0, decoder=False),
        call_row("resnet18", "aotirt auto-graph", 330.0, 290.0, decoder=False),
        call_row("resnet18", "torch runner", 500.0, 300.0, decoder=False),
        loop_row("aotirt loop (graphs)", 20000.0, gpu=44.0),      # 50 us per token
        loop_row("aotirt loop (eager)", 4000.0),
        loop_row("torch eager loop (.item() per token)", 5000.0),
        loop_row("torch runner loop (.item() per token)", 12500.0)]


def test_decode_targets_follow_from_the_figures():
    targets = {what: (round(ratio, 3), bound, way) for what, ratio, bound, way in report.decode_targets(ROWS)}
    assert targets == {
        # GPU time: the least of the aotirt handles' (45), against auto-graph's 50 us.
        "llama_decode_f32: auto-graph per call / GPU time": (1.111, 1.15, "max"),
        # The faster torch runner (150) over auto-graph (50).
        "llama_decode_f32: torch's runner / auto-graph per call": (3.0, 2.5, "min"),
        "resnet18: auto-graph per call / GPU time": (1.179, 1.15, "max"),      # no runner target: not a decoder
        "loop: aotirt (graphs) / torch eager loop, tokens per s": (4.0, 3.0, "min"),
        "loop: aotirt (graphs) / torch runner loop, tokens per s": (1.6, 2.0, "min"),
        "loop: aotirt (graphs) us per token / the step's GPU time": (1.111, 1.2, "max"),
    }
    assert report.decode_met(report.decode_targets(ROWS)) == 4


def test_report_writes_the_decode_section_and_the_summary_counts_it(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    script = os.path.join(REPO, "bench", "report.py")
    proc = subprocess.run([sys.executable, script, str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    for expected in ["## decode",
                     "| llama_decode_f32 | aotirt auto-graph | 50.00 | 50.00 | 48.00 |  |",
                     "| aotirt loop (graphs) | 256 | 20000 | 50.00 | 44.00 |  |",
                     "| torch runner loop (.item() per token) | 256 | 12500 | 80.00 | – |  |",
                     "- llama_decode_f32: torch's runner / auto-graph per call: 3.00x (target: at least 2.50x): met.",
                     "- resnet18: auto-graph per call / GPU time: 1.18x (target: at most 1.15x): **missed**.",
                     "- loop: aotirt (graphs) / torch runner loop, tokens per s: 1.60x (target: at least 2.00x): "
                     "**missed**.",
                     "4/6 decode targets met."]:
        assert expected in text, expected
    proc = subprocess.run([sys.executable, script, str(path), "--summary"], capture_output=True, text=True,
                          timeout=60)
    assert proc.stdout.strip() == "zoo: tests not run | ops: 0/0 within target | decode: 4/6 targets met"


def test_report_says_a_missing_figure_is_not_compared(tmp_path):
    rows = [call_row("gemma_f32", "aotirt run", None, None, note="not compiled"),
            call_row("gemma_f32", "aotirt auto-graph", None, None, note="not compiled"),
            {"case": "decode_loop", "model": "llama_decode_f32", "runner": "all", "tokens_per_s": None,
             "note": "not compiled (no x/meta.json)"}]
    lines = report.decode_section(rows)
    assert "- gemma_f32: auto-graph per call / GPU time: not compared (a figure is missing)." in lines
    assert "0/2 decode targets met." in lines
    assert "Not timed: not compiled (no x/meta.json)" in lines
