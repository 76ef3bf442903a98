"""bench/multigpu.py and its report section (bench/report_multigpu.py) on
recorded rows, and the script on a machine with fewer than two GPUs."""

import json
import os
import subprocess
import sys

from support.helpers import REPO

sys.path.insert(0, os.path.join(REPO, "bench"))
from report_multigpu import multigpu_section  # noqa: E402

ROWS = [
    {"case": "multigpu", "what": "copy", "bytes": 1 << 26, "aotirt_gbps": 300.0, "peer_async_gbps": 400.0,
     "peer": True},
    {"case": "multigpu", "what": "copy", "bytes": 1 << 20, "aotirt_gbps": 50.0, "peer_async_gbps": 100.0,
     "peer": False},
    {"case": "multigpu", "what": "pipeline", "layout": "one GPU", "us_per_token": 10.0},
    {"case": "multigpu", "what": "pipeline", "layout": "two GPUs", "us_per_token": 12.5},
    {"case": "multigpu", "what": "scaling", "gpus": 1, "elements": 64, "runs_per_s": 100.0},
    {"case": "multigpu", "what": "scaling", "gpus": 2, "elements": 64, "runs_per_s": 170.0, "scaling": 0.85,
     "target": 0.9},
    {"case": "other"},
]


def test_the_section_says_what_the_rows_say():
    text = "\n".join(multigpu_section(ROWS))
    assert "| 67108864 | 300.00 | 400.00 | 0.75x | on |" in text
    assert "| 1048576 | 50.00 | 100.00 | 0.50x | off (staged by the driver) |" in text
    assert "split across two GPUs / one GPU, us per token: 1.25x." in text
    assert "0.85 of 2x one GPU (target: at least 0.90): **missed**." in text
    met = [dict(r, scaling=0.95) if r.get("gpus") == 2 else r for r in ROWS]
    assert "0.95 of 2x one GPU (target: at least 0.90): met." in "\n".join(multigpu_section(met))


def test_no_rows_no_section_and_a_note_says_why_nothing_was_timed():
    assert multigpu_section([{"case": "other"}]) == []
    lines = multigpu_section([{"case": "multigpu", "note": "needs two GPUs, this machine has 1"}])
    assert lines == ["## Several GPUs", "", "Not measured: needs two GPUs, this machine has 1.", ""]


def test_the_benchmark_times_nothing_without_two_gpus(tmp_path):
    out = tmp_path / "rows.jsonl"
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, os.path.join(REPO, "bench", "multigpu.py"), "--quick", "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows == [{"case": "multigpu", "note": "needs two GPUs, this machine has 0"}]
