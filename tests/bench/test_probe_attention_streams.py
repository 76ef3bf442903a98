"""bench/probe_attention_streams.py's rounds (its timing needs the GPU):
each variant is timed once a round, the order reversed every other round,
and the figure is the median of its rounds."""

import os
import sys

import pytest

from support.helpers import REPO

sys.path.insert(0, os.path.join(REPO, "bench"))
probe = pytest.importorskip("probe_attention_streams")


class ScriptedTimer:
    """A GpuTimer stand-in that answers the figures it is given, in turn,
    and notes in `log` who was timed when."""

    def __init__(self, name, figures, log):
        self.name, self.figures, self.log = name, list(figures), log

    def us_per_call(self, call, calls, wait):
        assert calls == probe.CALLS
        self.log.append(self.name)
        return self.figures.pop(0), False


def test_rounds_take_turns_and_give_medians():
    log = []
    variants = {key: (ScriptedTimer(key, figures, log), None, None)
                for key, figures in (("a", [5.0, 1.0, 3.0]), ("b", [2.0, 9.0, 4.0]), ("c", [7.0, 7.0, 6.0]))}
    figures = probe.run_rounds(variants, 3)
    assert log == ["a", "b", "c", "c", "b", "a", "a", "b", "c"]
    assert figures == {"a": 3.0, "b": 4.0, "c": 7.0}
