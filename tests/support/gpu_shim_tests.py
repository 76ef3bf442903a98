"""What the GPU tests of the shims (tests/shims/test_*_gpu.py) share: the
device they run on, and the line that lets a fresh interpreter import them
and the support package, for the checks that need a process of their own
(host waits counted by the interposer, the debug log, settings read once)."""

import os

from support.helpers import TESTS

DEV = "cuda:0"
SHIMS_TESTS = os.path.join(TESTS, "shims")
# One line, so that it keeps the indentation of the block it is put in.
IMPORT_PATHS = f"import sys; sys.path[:0] = [{SHIMS_TESTS!r}, {TESTS!r}]"
