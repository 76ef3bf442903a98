"""aotirt._testing.c_runs: the in-process C dispatch loop the dispatch
benchmark times beside Python's."""

import numpy as np
import pytest

import aotirt
from aotirt._testing import c_runs


def test_c_runs_gives_what_run_gives_and_frees_the_rest():
    with aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu")) as handle:
        x = aotirt.asarray(np.arange(4, dtype=np.float32))
        seconds, last = c_runs(handle, [x, x, x], 50)
        assert seconds > 0
        np.testing.assert_array_equal(last.numpy(), handle.run([x, x, x])[0].numpy())


def test_c_runs_refuses_what_it_cannot_time():
    with aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu")) as handle:
        x = aotirt.asarray(np.ones(4, np.float32))
        with pytest.raises(ValueError, match="at least one call"):
            c_runs(handle, [x, x, x], 0)
        with pytest.raises(TypeError):
            c_runs(handle, [x, x, np.ones(4, np.float32)], 1)  # Tensors only
        with pytest.raises(ValueError, match="takes 3 inputs"):
            c_runs(handle, [x, x], 1)
