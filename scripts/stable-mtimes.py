"""Gives the build's sources back the times they first had on this machine,
where their content has not changed since.

The device tool copies the working tree onto the GPU machine before every
command, and the copies are new files: setup.py's incremental build (and
Cython's) compare modification times, so every command would rebuild all of
libaotirt from scratch (minutes). This keeps, per source, its content's hash
and the time it was first seen with that content (in build/, which the tool
keeps between commands); a source seen again with the same content gets that
time back, so only what changed is rebuilt. A changed source keeps its new
time and is recorded anew, so a build never misses a change.

    python3 scripts/stable-mtimes.py      # before the build; prints a count
"""

import hashlib
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# .deps: headers a runner without network gets carried over with the tree
# (scripts/gpu-check.sh), copied anew each time like the sources.
SOURCES = ("cuda_src", "include", "pyx", "bench", ".deps", "setup.py", "pyproject.toml")
MANIFEST = os.path.join(ROOT, "build", "source-times.json")


def sources():
    for entry in SOURCES:
        path = os.path.join(ROOT, entry)
        if os.path.isfile(path):
            yield path
        for folder, _, names in os.walk(path):
            for name in names:
                if name.endswith((".cpp", ".cu", ".h", ".hpp", ".cuh", ".pyx", ".pxd", ".py", ".pyi")):
                    yield os.path.join(folder, name)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    try:
        with open(MANIFEST) as f:
            known = json.load(f)
    except (OSError, ValueError):
        known = {}
    restored = recorded = 0
    for path in sources():
        key = os.path.relpath(path, ROOT)
        sha = digest(path)
        seen = known.get(key)
        if seen and seen[0] == sha:
            os.utime(path, (seen[1], seen[1]))
            restored += 1
        else:
            known[key] = [sha, os.stat(path).st_mtime]
            recorded += 1
    os.makedirs(os.path.dirname(MANIFEST), exist_ok=True)
    with open(MANIFEST + ".tmp", "w") as f:
        json.dump(known, f)
    os.replace(MANIFEST + ".tmp", MANIFEST)
    print(f"stable-mtimes: {restored} sources unchanged (their first times back), {recorded} new or changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
