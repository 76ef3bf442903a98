"""scripts/stable-mtimes.py (the GPU check's first step): on a tree copied
anew, unchanged sources and carried headers get back the times they first
had, and a changed one keeps its new time, so the incremental build redoes
only what changed and never misses a change. Run on a copy of the script in
a small tree of its own (it works on the tree it stands in)."""

import os
import shutil
import subprocess
import sys

from support.helpers import REPO


def tree(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy(os.path.join(REPO, "scripts", "stable-mtimes.py"), tmp_path / "scripts")
    files = {"cuda_src/runtime/a.cu": "a", "include/aotirt/b.h": "b", ".deps/cutlass/include/c.h": "c",
             "pyx/aotirt/d.pyx": "d"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return [tmp_path / name for name in files]


def run(root):
    proc = subprocess.run([sys.executable, str(root / "scripts" / "stable-mtimes.py")], capture_output=True, text=True,
                          timeout=60, check=True)
    return proc.stdout.strip()


def copy_anew(paths, when):
    """What the device tool does to the tree: the same files with new times."""
    for path in paths:
        os.utime(path, (when, when))


def test_unchanged_files_get_their_first_times_back_and_a_changed_one_keeps_its_own(tmp_path):
    paths = tree(tmp_path)
    copy_anew(paths, 1_000_000)
    assert run(tmp_path).endswith("0 sources unchanged (their first times back), 4 new or changed")

    copy_anew(paths, 2_000_000)
    assert run(tmp_path).endswith("4 sources unchanged (their first times back), 0 new or changed")
    assert [os.stat(p).st_mtime for p in paths] == [1_000_000] * 4

    copy_anew(paths, 3_000_000)
    paths[2].write_text("c, changed")          # a carried header changed
    os.utime(paths[2], (3_000_000, 3_000_000))
    assert run(tmp_path).endswith("3 sources unchanged (their first times back), 1 new or changed")
    assert [os.stat(p).st_mtime for p in paths] == [1_000_000, 1_000_000, 3_000_000, 1_000_000]

    copy_anew(paths, 4_000_000)                 # the changed one's new time is its first time now
    run(tmp_path)
    assert os.stat(paths[2]).st_mtime == 3_000_000
