"""bench/tuning.py and its report section (bench/report_tuning.py) on the
CPU: which compiled zoo models it tunes, how it labels the zoo's rows, and
what the report concludes from recorded rows (the runs need the GPU)."""

import os
import shutil
import subprocess
import sys

import pytest

from support.helpers import REPO, usage_error

sys.path.insert(0, os.path.join(REPO, "bench"))
sys.path.insert(0, os.path.join(REPO, "tests", "aoti"))
tuning = pytest.importorskip("tuning")
report_tuning = pytest.importorskip("report_tuning")
import report  # noqa: E402


def compiled_model(root, name, needs):
    """A zoo folder whose model.pt2 holds a library calling `needs`."""
    if shutil.which("cc") is None:
        pytest.skip("needs a C compiler (cc) to build a library with undefined symbols")
    import zipfile

    folder = root / name
    folder.mkdir(parents=True)
    source = folder / "lib.c"
    source.write_text("".join(f"extern int {n}(void);\n" for n in needs)
                      + "int f(void) {\n  return 0" + "".join(f" + {n}()" for n in needs) + ";\n}\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(folder / "lib.so"), str(source)], check=True)
    with zipfile.ZipFile(folder / "model.pt2", "w") as z:
        z.write(folder / "lib.so", "model/data/aotinductor/model/abc.wrapper.so")
    (folder / "meta.json").write_text("{}")


def test_the_models_that_call_the_cuda_convolution_and_notes_on_the_others(tmp_path):
    compiled_model(tmp_path, "cnn", ["aoti_torch_cuda_convolution", "aoti_torch_empty_strided"])
    compiled_model(tmp_path, "mlp", ["aoti_torch_cuda_mm_out"])
    assert tuning.convolving_models(tmp_path, ["cnn", "mlp", "absent"], named=False) == (
        ["cnn"], {"absent": "not compiled"})
    assert tuning.convolving_models(tmp_path, ["mlp", "cnn"], named=True) == (
        ["cnn"], {"mlp": "calls no CUDA convolution"})


def test_the_zoos_rows_become_this_parts_with_the_mode():
    rows = [{"case": "affinity", "note": "x"}, {"case": "zoo_model", "model": "a", "ran": True},
            {"case": "zoo", "model": "a", "runner": "aotirt", "gpu_us_per_call": 5.0}]
    assert tuning.tuned_rows(rows, "wide") == [
        {"case": "tuning_model", "model": "a", "ran": True, "mode": "wide"},
        {"case": "tuning", "model": "a", "runner": "aotirt", "gpu_us_per_call": 5.0, "mode": "wide"}]


def test_an_unknown_mode_is_refused(monkeypatch, capsys):
    assert "unknown mode(s) fast" in usage_error(tuning.main, ["tuning.py", "--modes", "wide,fast"], monkeypatch, capsys)


def gpu_row(case, model, runner, gpu, mode="wide"):
    row = {"case": case, "model": model, "runner": runner, "gpu_us_per_call": gpu}
    return dict(row, mode=mode) if mode else row


def test_the_target_is_the_summed_gpu_time_against_torchs_faster_runner():
    rows = [gpu_row("tuning", "a", "aotirt", 80.0), gpu_row("tuning", "a", "torch runner", 110.0),
            gpu_row("tuning", "a", "torch runner (run_single_threaded)", 100.0),
            gpu_row("tuning", "b", "aotirt", 50.0), gpu_row("tuning", "b", "torch runner (run_single_threaded)", 50.0),
            gpu_row("tuning", "c", "aotirt", None), gpu_row("tuning", "c", "torch runner", 40.0),
            {"case": "tuning_model", "model": "a", "mode": "wide", "ran": True, "within": True},
            {"case": "tuning_model", "model": "b", "mode": "wide", "ran": True, "within": False,
             "max_rel_error": 0.5, "bound": 0.001},
            {"case": "tuning_model", "model": "d", "ran": False, "note": "not compiled"},
            gpu_row("zoo", "a", "aotirt", 95.0, mode=None)]
    assert report_tuning.tuning_totals(rows) == {"wide": (2, 130.0, 150.0)}
    text = "\n".join(report_tuning.tuning_section(rows))
    assert "| a | wide | 100.00 | 80.00 | 0.800 | 95.00 | – | within bounds |" in text
    assert "**error 0.500000 over 0.001**" in text
    assert "0.867x, 13.3% under (target: at least 10% under, 0.90x): met." in text
    assert "Left out: d: not compiled" in text
    assert report_tuning.tuning_summary(rows) == "tuning: wide 0.867x torch over 2 models"
    rows[0]["gpu_us_per_call"] = 95.0
    assert "**missed**" in "\n".join(report_tuning.tuning_section(rows))
    assert report.summary(rows, None).endswith(" | tuning: wide 0.967x torch over 2 models")


def test_no_tuning_rows_no_section():
    assert report_tuning.tuning_section([{"case": "zoo", "model": "a", "runner": "aotirt"}]) == []
    assert report_tuning.tuning_summary([]) == ""


def test_the_untuned_and_recorded_runs_are_planned_around_each_mode():
    assert tuning.planned_runs(["1", "wide"], untuned=False, recorded=False) == [("1", "1", "1"),
                                                                                 ("wide", "wide", "wide")]
    # The recorded run reads the folder its mode's run filled; the untuned run has its own.
    assert tuning.planned_runs(["1", "wide"], untuned=True, recorded=True) == [
        ("off", None, "off"), ("1", "1", "1"), ("1 recorded", "1", "1"),
        ("wide", "wide", "wide"), ("wide recorded", "wide", "wide")]


def test_the_untuned_run_is_a_baseline_not_a_verdict():
    rows = [gpu_row("tuning", "a", "aotirt", 100.0, mode="off"),
            gpu_row("tuning", "a", "torch runner (run_single_threaded)", 100.0, mode="off"),
            gpu_row("tuning", "a", "aotirt", 85.0, mode="1 recorded"),
            gpu_row("tuning", "a", "torch runner (run_single_threaded)", 100.0, mode="1 recorded"),
            gpu_row("zoo", "a", "aotirt", 95.0, mode=None)]
    text = "\n".join(report_tuning.tuning_section(rows))
    # The untuned column comes from the same invocation's mode off, not the zoo section.
    assert "| a | 1 recorded | 100.00 | 85.00 | 0.850 | 100.00 | – | not checked |" in text
    assert "Mode off (untuned, the baseline), summed over 1 models: aotirt 100.0 us, torch's runner 100.0 us: 1.000x." \
        in text
    assert "Mode 1 recorded, summed over 1 models" in text and "0.850x, 15.0% under" in text and ": met." in text
    assert text.count("met.") == 1


def test_the_tuning_switch_is_left_unset_for_the_untuned_run(monkeypatch, tmp_path):
    # run_zoo's environment: the caller's AOTIRT_CUDNN_TUNE dropped for the untuned run, set for a tuned one.
    seen = []

    def fake_run(command, env, **_):
        seen.append((env.get("AOTIRT_CUDNN_TUNE"), env["AOTIRT_CACHE"]))
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setenv("AOTIRT_CUDNN_TUNE", "wide")
    monkeypatch.setattr(tuning.subprocess, "run", fake_run)
    assert tuning.run_zoo(["cnn"], None, True, None, str(tmp_path / "off")) == []
    assert tuning.run_zoo(["cnn"], "1", True, None, str(tmp_path / "1")) == []
    assert seen == [(None, str(tmp_path / "off")), ("1", str(tmp_path / "1"))]
