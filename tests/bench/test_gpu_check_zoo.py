"""scripts/gpu-check.sh's zoo steps, run on a copy of the script in a small
tree of its own with a stand-in for Python that records what it is asked to
run (no GPU, no torch): the zoo is compiled only by a command that reads it,
AOTIRT_ZOO_AHEAD=1 compiles it detached from a command that does not, and a
command that reads it waits for that compile to end before its tests."""

import os
import shutil
import stat
import subprocess
import time

from support.helpers import REPO

# Records each call with the time it ended; the zoo's compile takes a while.
STAND_IN = """#!/bin/bash
case "$*" in
  *tests/aoti/build.py*) sleep 2 ;;
  *-m\\ pytest*) echo "1 passed in 0.01s" ;;
esac
echo "$(date +%s.%N) $*" >> "$CALLS"
"""


def tree(root):
    (root / "scripts").mkdir()
    shutil.copy(os.path.join(REPO, "scripts", "gpu-check.sh"), root / "scripts")
    python = root / "python"
    python.write_text(STAND_IN)
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    return python


def gpu_check(root, *args, **env):
    full = dict(os.environ, PYTHON=str(root / "python"), CALLS=str(root / "calls"), OUT=str(root / "out"), **env)
    full.pop("AOTIRT_PREBUILT", None)
    return subprocess.run(["bash", str(root / "scripts" / "gpu-check.sh"), *args], cwd=root, env=full,
                          capture_output=True, text=True, timeout=120)


def calls(root):
    if not (root / "calls").exists():
        return []
    return [line.split(" ", 1) for line in (root / "calls").read_text().splitlines()]


def ran(root, what):
    return [float(when) for when, command in calls(root) if what in command]


def test_only_a_command_that_reads_the_zoo_compiles_it(tmp_path):
    tree(tmp_path)
    proc = gpu_check(tmp_path, "--tests-only", "tests/shims")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not ran(tmp_path, "tests/aoti/build.py")
    proc = gpu_check(tmp_path, "--tests-only", "tests/aoti/test_aoti_models.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(ran(tmp_path, "tests/aoti/build.py")) == 1


def test_a_zoo_compiled_ahead_is_waited_for_and_the_zoo_alone_does_not_build(tmp_path):
    tree(tmp_path)
    proc = gpu_check(tmp_path, "--tests-only", "tests/shims", AOTIRT_ZOO_AHEAD="1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "compiling ahead, detached" in proc.stdout
    proc = gpu_check(tmp_path, "--tests-only", "tests/aoti")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "waiting for the zoo compile started ahead" in proc.stdout
    ahead_end, second_end = ran(tmp_path, "tests/aoti/build.py")
    tests = ran(tmp_path, "-m pytest")
    assert len(tests) == 2 and ahead_end < tests[1]
    # --zoo-only ran no build and restored no source times (the commands
    # beside it do both).
    assert len(ran(tmp_path, "setup.py")) == 2 and len(ran(tmp_path, "stable-mtimes.py")) == 2
    assert second_end > ahead_end


def test_an_ahead_compile_already_running_is_not_started_twice(tmp_path):
    tree(tmp_path)
    for _ in range(2):
        proc = gpu_check(tmp_path, "--tests-only", "tests/shims", AOTIRT_ZOO_AHEAD="1")
        assert proc.returncode == 0, proc.stdout + proc.stderr
    deadline = time.time() + 30
    while time.time() < deadline and len(ran(tmp_path, "tests/aoti/build.py")) < 1:
        time.sleep(0.2)
    time.sleep(3)
    assert len(ran(tmp_path, "tests/aoti/build.py")) == 1
