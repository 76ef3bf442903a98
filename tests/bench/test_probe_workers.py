"""bench/probe_workers.py's arithmetic on recorded zoo rows (the runs
themselves need the GPU and the compiled zoo)."""

import os
import sys

import pytest

from support.helpers import REPO, usage_error

sys.path.insert(0, os.path.join(REPO, "bench"))
probe = pytest.importorskip("probe_workers")


def zoo(model, runner, gpu):
    return {"case": "zoo", "model": model, "runner": runner, "gpu_us_per_call": gpu}


def test_ratios_of_one_run():
    rows = [{"case": "affinity", "note": "CPUs 0-7 of 0-15, those local to the GPU"},
            zoo("resnet18", "aotirt", 350.0), zoo("resnet18", "aotirt graph replay", 280.0),
            zoo("resnet18", "torch runner", 400.0), zoo("resnet18", probe.TORCH, 340.0),
            zoo("bert_f32", "aotirt", 150.0), zoo("bert_f32", "aotirt graph replay", None),
            zoo("bert_f32", probe.TORCH, None)]
    per_model, note = probe.ratios(rows)
    assert note == "CPUs 0-7 of 0-15, those local to the GPU"
    assert per_model == {"resnet18": {"aotirt/torch": round(350 / 340, 4), "eager/graph": 1.25},
                         "bert_f32": {"aotirt/torch": None, "eager/graph": None}}
    assert probe.ratios([])[1] == "no affinity row"


def test_medians_per_pinning_leave_out_missing_figures():
    runs = [("local", {"a": {"aotirt/torch": 1.0, "eager/graph": 1.2}, "b": {"aotirt/torch": 1.04,
                                                                           "eager/graph": None}}),
            ("remote", {"a": {"aotirt/torch": 1.1, "eager/graph": 1.3}}),
            ("local", {"a": {"aotirt/torch": 0.98, "eager/graph": 1.22}})]
    assert probe.medians(runs) == {"local": {"aotirt/torch": 1.0, "eager/graph": 1.21},
                                   "remote": {"aotirt/torch": 1.1, "eager/graph": 1.3}}


def test_each_variant_sets_the_pinning_and_one_each_moves_a_side_to_the_other_kind_of_stream():
    assert {v: env["AOTIRT_BENCH_PIN"] for v, env in probe.VARIANTS.items()} == {
        "local": "local", "0": "0", "remote": "remote", "local/side": "local", "local/legacy": "local",
        "local/adopted": "local"}
    assert [v for v, env in probe.VARIANTS.items() if env.get("AOTIRT_BENCH_TORCH_STREAM") == "side"] == ["local/side"]
    assert [v for v, env in probe.VARIANTS.items()
            if env.get("AOTIRT_BENCH_AOTIRT_STREAM") == "legacy"] == ["local/legacy"]
    assert [v for v, env in probe.VARIANTS.items()
            if env.get("AOTIRT_BENCH_AOTIRT_STREAM") == "adopted"] == ["local/adopted"]
    # Each stream a variant names is one zoo.py takes.
    zoo = pytest.importorskip("zoo")
    assert {env["AOTIRT_BENCH_AOTIRT_STREAM"] for env in probe.VARIANTS.values()
            if "AOTIRT_BENCH_AOTIRT_STREAM" in env} <= set(zoo.AOTIRT_STREAMS)


def test_an_unknown_variant_is_refused_before_anything_runs(monkeypatch, capsys):
    monkeypatch.setattr(probe, "run_zoo", lambda *a: pytest.fail("ran a zoo run"))
    err = usage_error(probe.main, ["probe_workers.py", "--variants", "local,nearby"], monkeypatch, capsys)
    assert "unknown variant(s) nearby" in err
