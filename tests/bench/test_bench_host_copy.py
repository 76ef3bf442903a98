"""bench/host_copy.py runs on the CPU (no GPU needed): one row per case, each
with both medians and their ratio, and the rows also in --out's file."""

import json
import os
import subprocess
import sys

from support.helpers import REPO


def test_host_copy_rows(tmp_path):
    out = tmp_path / "rows.jsonl"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(REPO, "pyx"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, os.path.join(REPO, "bench", "host_copy.py"), "--quick", "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["model"] for r in rows] == ["attention heads split", "channels-last to contiguous", "every other row",
                                         "transpose"]
    for r in rows:
        assert r["case"] == "host_copy" and r["reps"] == 5 and r["aotirt_ms"] > 0 and r["numpy_ms"] > 0
        assert abs(r["ratio"] - r["aotirt_ms"] / r["numpy_ms"]) < 0.01 * r["ratio"] + 1e-3
    assert rows[0]["shape"] == "8x16x1024x64" and rows[0]["strides"] == "1048576,64,1024,1"
    assert [json.loads(line) for line in out.read_text().splitlines()] == rows
    # The report's section, from the same rows.
    report = subprocess.run([sys.executable, os.path.join(REPO, "bench", "report.py"), str(out)], capture_output=True,
                            text=True, env=env, timeout=120)
    assert report.returncode == 0, report.stderr[-4000:]
    assert "## host copies" in report.stdout
    assert (f"| attention heads split | 8x16x1024x64 | float16 | 1048576,64,1024,1 | {rows[0]['aotirt_ms']:.3f} | "
            f"{rows[0]['numpy_ms']:.3f} | {rows[0]['ratio']:.3f} |") in report.stdout
