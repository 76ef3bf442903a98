"""bench/zoo.py's choice of the aotirt worker's stream (the runs themselves
need the GPU and the compiled zoo)."""

import os
import sys

import pytest

from support.helpers import REPO

sys.path.insert(0, os.path.join(REPO, "bench"))
zoo = pytest.importorskip("zoo")


def test_unset_means_the_shared_stream():
    assert zoo.aotirt_stream(aotirt=None, choice=None) is None
    assert zoo.aotirt_stream(aotirt=None, choice="") is None


def test_an_unknown_stream_is_refused_before_any_cuda_work():
    # aotirt=None: refused before the module is touched.
    with pytest.raises(SystemExit, match=r"AOTIRT_BENCH_AOTIRT_STREAM='side': expected one of legacy, adopted"):
        zoo.aotirt_stream(aotirt=None, choice="side")
