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


def test_single_keeps_only_the_stream_asked_for(monkeypatch):
    streams = {"shared": None, "nonblocking": 11, "blocking": 12, "high": 13}
    assert probe.chosen(streams) == streams
    monkeypatch.setattr(probe, "ONLY", ["blocking"])
    assert probe.chosen(streams) == {"blocking": 12}
    monkeypatch.setattr(probe, "ONLY", ["legacy"])
    with pytest.raises(SystemExit, match="--stream legacy: this side times shared, nonblocking, blocking, high"):
        probe.chosen(streams)


def test_stream_without_single_is_refused(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["probe_attention_streams.py", "--stream", "high"])
    with pytest.raises(SystemExit) as stopped:
        probe.main()
    assert stopped.value.code == 2
    assert "--stream goes with --single" in capsys.readouterr().err
