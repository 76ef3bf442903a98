"""bench/probe_graph_launch_queue.py's bookkeeping (its runs need torch and a GPU)."""

import os
import sys

from support.helpers import REPO

sys.path.insert(0, os.path.join(REPO, "bench"))
import probe_graph_launch_queue as probe  # noqa: E402


def test_the_calls_before_the_first_slow_one_are_counted():
    assert probe.calls_before_a_slow_one([15.0, 16.2, 14.9, 15.5, 174.1, 16.0], 43.5) == 4


def test_a_batch_with_no_slow_call_counts_every_call():
    assert probe.calls_before_a_slow_one([9.0, 10.4, 11.1], 44.0) == 3


def test_a_slow_first_call_counts_none():
    assert probe.calls_before_a_slow_one([90.0, 9.0], 44.0) == 0

