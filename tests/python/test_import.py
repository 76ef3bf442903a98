"""`import aotirt` is cheap: no numpy, no CUDA driver, no CUDA work."""

import ast
import os
import re

from support.helpers import REPO, run_python


def test_import_loads_neither_numpy_nor_the_driver():
    proc = run_python(
        "import sys, aotirt\n"
        "maps = open('/proc/self/maps').read()\n"
        "print('numpy' in sys.modules, 'libcuda.so' in maps)\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False"]


def test_cpu_run_does_not_touch_the_driver():
    # A CPU model runs without ever loading libcuda (and imports numpy only
    # because the caller gives numpy arrays).
    proc = run_python(
        "import aotirt, numpy as np\n"
        "h = aotirt.AotiHandle(aotirt.models.path('add_mul', 'cpu'))\n"
        "x = np.ones(8, np.float32)\n"
        "assert (h.run([x, x, x])[0].numpy() == 2).all()\n"
        "print('libcuda.so' in open('/proc/self/maps').read())\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_public_api():
    proc = run_python("import aotirt; print(sorted(aotirt.__all__))")
    assert proc.returncode == 0, proc.stderr
    exported = set(ast.literal_eval(proc.stdout.strip()))  # whole names: "empty" is not "empty_pinned"
    for name in ["AotiError", "AotiHandle", "CudaError", "CudaHandle", "Stream", "Tensor",
                 "asarray", "copy_to_host", "device_count", "empty", "empty_pinned", "from_dlpack", "models"]:
        assert name in exported


def test_the_package_modules_import_one_another_without_a_cycle():
    # Every (c)import of one aotirt module by another, read from the sources:
    # the modules must form layers (see each module's "Module order"), and
    # no module of the package imports the tests' hooks.
    package = os.path.join(REPO, "pyx", "aotirt")
    uses = {}
    for file in os.listdir(package):
        name, ext = os.path.splitext(file)
        if ext in (".pyx", ".pxd", ".py"):
            text = open(os.path.join(package, file)).read()
            found = set(re.findall(r"^\s*(?:from aotirt\.(\w+) c?import|import aotirt\.(\w+))", text, re.M))
            uses.setdefault(name, set()).update(a or b for a, b in found)
    assert not any("_testing" in used for name, used in uses.items() if name != "_testing")
    done, visiting = set(), []

    def visit(name):
        assert name not in visiting, f"import cycle: {' -> '.join(visiting + [name])}"
        if name in done:
            return
        visiting.append(name)
        for used in sorted(uses.get(name, ())):
            if used != name:   # a .pyx cimports its own .pxd
                visit(used)
        visiting.pop()
        done.add(name)

    for name in sorted(uses):
        visit(name)
