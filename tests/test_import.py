"""`import aotirt` is cheap: no numpy, no CUDA driver, no CUDA work."""

import ast

from helpers import run_python


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
