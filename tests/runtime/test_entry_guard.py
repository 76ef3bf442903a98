"""The entry guard of the C API, checked in the source: every function of
include/aotirt/aotirt.h (and graphs.h, which it includes) opens with AOTIRT_ENTRY() (cuda_src/runtime/entry.h),
which runs the borrowed-memory poll, but for the last-error getters and the
constant tables; and no code polls by hand."""

import os
import re

from support.helpers import REPO

SOURCES = [os.path.join(REPO, "cuda_src", d) for d in ("runtime", "shims")]
# The poll could run an owner's release that calls aotirt and replaces the
# error being read; the tables touch no object.
EXEMPT = re.compile(r"^aotirt_(last_error_\w+|dtype_\w+|shim_\w+)$")


def declared():
    names = []
    for header in ("aotirt.h", "graphs.h"):   # the C API: aotirt.h and the graphs part it includes
        text = open(os.path.join(REPO, "include", "aotirt", header)).read()
        names += re.findall(r"^AOTIRT_API [^;]*?\b(aotirt_\w+)\(", text, re.MULTILINE)
    return names


def sources():
    for top in SOURCES:
        for folder, _dirs, files in os.walk(top):
            for name in files:
                if name.endswith((".cpp", ".cu", ".h")):
                    path = os.path.join(folder, name)
                    yield os.path.relpath(path, REPO), open(path).read()


def bodies():
    """name -> (path, the first statement of its definition's body)."""
    found = {}
    definition = re.compile(r'^(?:AOTIRT_API|extern "C") [^;{]*?\b(aotirt_\w+)\(([^;{]|\n)*?\)\s*\{\s*([^;]*;)', re.MULTILINE)
    for path, text in sources():
        for m in definition.finditer(text):
            assert m.group(1) not in found, f"{m.group(1)} is defined twice"
            found[m.group(1)] = (path, m.group(3).strip())
    return found


def test_every_entry_point_opens_with_the_guard():
    defined = bodies()
    names = declared()
    assert len(names) > 60, names
    for name in names:
        assert name in defined, f"{name} is declared in aotirt.h but its definition was not found"
        path, first = defined[name]
        if EXEMPT.match(name):
            assert "AOTIRT_ENTRY" not in first, (name, path)
        else:
            assert first in ("AOTIRT_ENTRY();", "AOTIRT_ENTRY_POLL_ON_EXIT();"), (name, path, first)


def test_the_poll_runs_only_through_the_guard():
    calls = [(path, n + 1) for path, text in sources() for n, line in enumerate(text.splitlines())
             if re.search(r"\brelease_finished_borrowed\(\)", line.split("//")[0])]
    places = {path for path, _ in calls}
    # Its definition (inline in tensor.h) and the guard.
    assert places == {os.path.join("cuda_src", "runtime", p) for p in ("tensor.h", "entry.h")}, calls
