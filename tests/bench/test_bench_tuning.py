"""bench/tuning.py and its report section (bench/report_tuning.py) on the
CPU: which compiled zoo models it tunes, how it labels the zoo's rows, and
what the report concludes from recorded rows (the runs need the GPU)."""

import os
import shutil
import subprocess
import sys

import pytest

from support.helpers import REPO

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
    monkeypatch.setattr(sys, "argv", ["tuning.py", "--modes", "wide,fast"])
    with pytest.raises(SystemExit) as exit_info:
        tuning.main()
    assert exit_info.value.code == 2 and "unknown mode(s) fast" in capsys.readouterr().err


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
