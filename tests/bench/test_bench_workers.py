"""bench/workers.py (the persistent workers that ops.py and zoo.py drive in
turns) and bench/gpu_timer.py's batch timing, on the CPU: with a small worker
program and fake events, no GPU and no torch."""

import os
import sys
import textwrap

import pytest

from support.helpers import REPO

sys.path.insert(0, os.path.join(REPO, "bench"))
workers = pytest.importorskip("workers")
gpu_timer = pytest.importorskip("gpu_timer")

PROGRAM = textwrap.dedent(f"""
    import os, sys, time
    sys.path.insert(0, {os.path.join(REPO, "bench")!r})
    from workers import serve
    print("a library's own line on stdout")
    state = {{"calls": 0}}
    def double(request):
        state["calls"] += 1
        print("printed by a handler")
        return {{"x": request["x"] * 2, "calls": state["calls"]}}
    def fail(request):
        raise ValueError("no such\\nshape")
    def die(request):
        os._exit(3)
    def hang(request):
        time.sleep(60)
    serve({{"double": double, "fail": fail, "die": die, "hang": hang, "ping": lambda request: {{}}}})
""")


@pytest.fixture
def worker(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(PROGRAM)
    w = workers.Worker("fake", [sys.executable, str(script)], timeout=5)
    yield w
    w.close()


def test_a_worker_answers_each_request_and_keeps_its_state(worker, capfd):
    assert worker.ask("double", x=21) == {"x": 42, "calls": 1}
    assert worker.ask("double", x=1) == {"x": 2, "calls": 2}
    # What reached the worker's stdout outside the protocol was passed on to stderr.
    assert "a library's own line on stdout" in capfd.readouterr().err


def test_an_error_is_the_answer_and_the_worker_goes_on(worker):
    with pytest.raises(workers.WorkerError, match="fake: ValueError: no such shape"):
        worker.ask("fail")
    assert worker.ask("double", x=2)["calls"] == 1


def test_a_dead_or_hung_worker_is_restarted_afresh(worker):
    worker.ask("double", x=1)
    with pytest.raises(workers.WorkerError, match=r"died during die \(exit status 3; restarted\)"):
        worker.ask("die")
    assert worker.ask("double", x=1)["calls"] == 1          # a new process
    worker.timeout = 1
    with pytest.raises(workers.WorkerError, match="did not answer hang within 1 s"):
        worker.ask("hang")
    assert worker.ask("double", x=1)["calls"] == 1


def test_start_workers_reports_the_sides_it_could_not_start(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(PROGRAM)
    broken = tmp_path / "broken.py"
    broken.write_text("raise SystemExit(5)\n")
    started, missing = workers.start_workers(str(script), {"good": sys.executable, "none": None})
    try:
        assert list(started) == ["good"] and "no Python for the none worker" in missing["none"]
    finally:
        for w in started.values():
            w.close()
    started, missing = workers.start_workers(str(broken), {"bad": sys.executable})
    assert started == {} and missing["bad"] == "the bad worker died during ping (exit status 5)"


class FakeEvents:
    def __init__(self, ms):
        self.ms, self.log = ms, []

    def start(self):
        self.log.append("start")

    def stop(self):
        self.log.append("stop")

    def elapsed_ms(self):
        return self.ms


class FakeSpinner:
    def __init__(self, log):
        self.log, self.spins = log, []

    def spin(self, stream, ns):
        self.log.append("spin")
        self.spins.append(ns)


def test_the_timer_spins_before_the_batch_and_sizes_the_spin_from_the_hosts_pace():
    events = FakeEvents(ms=2.0)
    spinner = FakeSpinner(events.log)
    timer = gpu_timer.GpuTimer(1234, events, spinner)
    waits = []
    us, host_bound = timer.us_per_call(lambda: events.log.append("call"), 4, lambda: waits.append(1))
    assert events.log == ["spin", "start", "call", "call", "call", "call", "stop"] and waits == [1]
    assert us == 500.0                       # 2 ms over 4 calls
    assert spinner.spins == [gpu_timer.MIN_SPIN_NS]
    assert host_bound is False               # four appends queue well within the shortest spin

    slow = lambda: time_sleep(0.002)         # noqa: E731 - 2 ms of host time per call
    timer.us_per_call(slow, 3, lambda: None)
    timer.us_per_call(slow, 3, lambda: None)
    # The second spin covers 1.5x the host's pace seen so far: 3 calls of >= 2 ms.
    assert spinner.spins[-1] >= 1.5 * 3 * 2_000_000
    timer.reset()
    timer.us_per_call(lambda: None, 3, lambda: None)
    assert spinner.spins[-1] == gpu_timer.MIN_SPIN_NS


def test_a_batch_the_host_queues_slower_than_the_spin_is_host_bound():
    events = FakeEvents(ms=1.0)
    timer = gpu_timer.GpuTimer(0, events, FakeSpinner(events.log))
    _us, host_bound = timer.us_per_call(lambda: time_sleep(0.001), 1, lambda: None)
    assert host_bound is True                # 1 ms of queueing against a 0.2 ms spin


def time_sleep(seconds):
    import time

    time.sleep(seconds)
