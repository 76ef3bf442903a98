"""The file of cuDNN's measured engine choices (cuda_src/shims/libs/cudnn_tuning.cpp,
AOTIRT_CUDNN_TUNE=1 or wide), on the host: its lines, the margin rule that
keeps the heuristics' engine unless a measured one beats it past the noise,
a choice recorded by one process and read by the next, a torn or foreign
line skipped, an unwritable folder costing only the record, where the file
goes, the modes, plan names read as engine configurations, and the wide
mode's configurations one knob away. The measuring is on the GPU
(test_conv_tuning_gpu.py)."""

import os
import subprocess

import pytest

from support.helpers import REPO


@pytest.fixture(scope="module")
def check(tmp_path_factory):
    exe = str(tmp_path_factory.mktemp("tuning") / "cudnn_tuning_check")
    subprocess.run(["g++", "-std=c++17", "-O2", "-Wall", "-I", os.path.join(REPO, "cuda_src"),
                    os.path.join(REPO, "tests", "shims", "cudnn_tuning_check.cpp"),
                    os.path.join(REPO, "cuda_src", "shims", "libs", "cudnn_tuning.cpp"), "-o", exe], check=True)

    def run(*args, env=None):
        proc = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60,
                              env={**os.environ, **(env or {})})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout.strip(), proc.stderr
    return run


def test_lines(check):
    out, _ = check("lines")
    assert out.endswith(" 0 failures") or out == "0 failures", out


def test_the_heuristics_engine_is_kept_unless_another_wins_by_more_than_the_margin(check):
    out, _ = check("choose")
    assert out == "0 failures", out


def test_a_choice_recorded_by_one_process_is_read_by_the_next(check, tmp_path):
    path = str(tmp_path / "deep" / "er" / "tuned.tsv")
    assert check("write", path, "conv-a", "eng3_k1=2")[0] == "eng3_k1=2"
    assert check("write", path, "conv-b", "eng7")[0] == "eng7"
    assert check("read", path, "conv-a")[0] == "eng3_k1=2"
    assert check("read", path, "conv-b")[0] == "eng7"
    assert check("read", path, "conv-c")[0] == ""
    assert len(open(path).read().splitlines()) == 2


def test_a_torn_line_is_skipped_and_a_later_record_wins(check, tmp_path):
    path = str(tmp_path / "tuned.tsv")
    check("write", path, "conv-a", "eng1")
    with open(path, "a") as f:
        f.write("636f6e762d61\teng2\n")     # conv-a again, later: the later line wins
        f.write("not a line\n6\tx\n636f")  # foreign, odd hex, torn
    out, err = check("read", path, "conv-a")
    assert out == "eng2"
    assert "3 unreadable line(s)" in err


def test_a_last_line_cut_short_is_never_read_and_the_next_record_starts_its_own(check, tmp_path):
    path = str(tmp_path / "tuned.tsv")
    check("write", path, "conv-a", "eng1")
    with open(path, "a") as f:
        f.write("636f6e762d62\teng2_k3=1")   # conv-b's "eng2_k3=12", cut short: it parses as a line
    out, err = check("read", path, "conv-b")
    assert out == ""
    assert "1 unreadable line(s)" in err
    assert check("write", path, "conv-c", "eng4")[0] == "eng4"
    assert check("read", path, "conv-b")[0] == ""   # still not read, now that a newline follows it
    assert check("read", path, "conv-c")[0] == "eng4"
    assert check("read", path, "conv-a")[0] == "eng1"


def test_an_unwritable_folder_costs_only_the_record(check, tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    path = str(blocked / "tuned.tsv")   # a folder that is a file
    out, err = check("write", path, "conv-a", "eng1")
    assert out == "eng1"                 # held for this process
    assert "could not write" in err
    assert check("read", path, "conv-a")[0] == ""


def test_the_file_is_per_device_kind_and_cudnn_version_under_the_cache(check, tmp_path):
    out, _ = check("path", "90", "91900", env={"AOTIRT_CACHE": str(tmp_path)})
    assert out == os.path.join(str(tmp_path), "cudnn-tuned-v2-sm90-cudnn91900.tsv")
    out, _ = check("path", "80", "90100", env={"AOTIRT_CACHE": "", "HOME": str(tmp_path)})
    assert out == os.path.join(str(tmp_path), ".cache", "aotirt", "cudnn-tuned-v2-sm80-cudnn90100.tsv")


def test_the_wide_modes_choices_are_kept_apart(check, tmp_path):
    out, _ = check("path", "90", "91900", "wide", env={"AOTIRT_CACHE": str(tmp_path)})
    assert out == os.path.join(str(tmp_path), "cudnn-tuned-wide-v2-sm90-cudnn91900.tsv")


@pytest.mark.parametrize("text, mode", [(None, "off"), ("1", "listed"), ("wide", "wide"), ("0", "off"),
                                        ("", "off"), ("yes", "off"), ("WIDE", "off"), ("2", "off")])
def test_the_modes_of_aotirt_cudnn_tune(check, text, mode):
    assert check("mode", *([text] if text is not None else []))[0] == mode


def test_plan_names_read_as_engine_configurations(check):
    assert check("tags")[0] == "0 failures"


def test_the_wide_modes_neighbours_one_knob_away_nearest_first_within_the_cap(check):
    assert check("neighbours")[0] == "0 failures"
