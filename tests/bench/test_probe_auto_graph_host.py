"""bench/probe_auto_graph_host.py's bookkeeping (its runs need the GPU and
the compiled zoo)."""

import os
import sys

import pytest

from support.helpers import REPO, usage_error

sys.path.insert(0, os.path.join(REPO, "bench"))
probe = pytest.importorskip("probe_auto_graph_host")


def test_summary_is_the_median_least_and_most_of_the_batches():
    assert probe.summary([9.0, 83.456, 10.0, 8.5]) == {"median": 9.5, "min": 8.5, "max": 83.46}


def counting_call():
    """A call that returns how many calls came so far, and the list it counts in."""
    calls = []

    def call():
        calls.append(len(calls))
        return [len(calls)]

    return call, calls


def test_each_batch_is_timed_apart_and_drained_with_its_last_outputs():
    (call, calls), drained = counting_call(), []
    per_batch = probe.time_batches(call, drained.append)
    assert len(per_batch) == probe.BATCHES and all(us >= 0 for us in per_batch)
    assert len(calls) == probe.BATCHES * probe.CALLS_PER_BATCH
    # The drain gets each batch's last call's outputs, once per batch.
    assert drained == [[probe.CALLS_PER_BATCH * (i + 1)] for i in range(probe.BATCHES)]


def test_single_calls_come_in_pairs_after_a_drain():
    drained = []
    times = probe.time_single_calls(lambda: ["out"], drained.append)
    assert len(times) == 2 * probe.SINGLE_CALL_PAIRS
    assert len(drained) == probe.SINGLE_CALL_PAIRS


def test_one_batch_times_each_call_and_drains_its_last_outputs():
    (call, calls), drained = counting_call(), []
    times = probe.time_each_call_of_a_batch(call, drained.append)
    assert len(times) == len(calls) == probe.CALLS_PER_BATCH and all(us >= 0 for us in times)
    assert drained == [[probe.CALLS_PER_BATCH]]


def test_the_default_models_are_zoo_models():
    from zoo_index import zoo_names

    assert probe.unknown_models(probe.DEFAULT_MODELS.split(","), zoo_names()) == []


def test_a_name_outside_the_zoo_is_refused_before_anything_loads(monkeypatch, capsys):
    monkeypatch.setattr(probe, "probe", lambda *a: pytest.fail("probed a model"))
    err = usage_error(probe.main, ["probe_auto_graph_host.py", "--only", "llama_bf16,llama_tiny"], monkeypatch, capsys)
    assert "not zoo models: llama_tiny" in err
