"""Threads: concurrent runs are correct, and the GIL is released while the
core runs (a CPU-bound Python thread keeps making progress)."""

import threading

import numpy as np
import pytest

import aotirt

THREADS = 8
RUNS = 2000


def hammer(make_handle, device):
    """THREADS threads x RUNS runs; each checks its own results."""
    errors = []

    def worker(seed):
        try:
            rng = np.random.default_rng(seed)
            a, b, c = (rng.standard_normal(257).astype(np.float32) for _ in range(3))
            expected = (a.astype(np.float64) * b + c).astype(np.float32)
            handle = make_handle()
            ta, tb, tc = (aotirt.asarray(x, device=device) for x in (a, b, c))
            for i in range(RUNS):
                (out,) = handle.run([ta, tb, tc])
                if i % 500 == 0 or i == RUNS - 1:
                    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-6)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a worker hung"
    assert errors == []


def test_cpu_handles_from_many_threads():
    path = aotirt.models.path("add_mul", "cpu")
    shared = aotirt.AotiHandle(path)
    hammer(lambda: shared, "cpu")                        # one handle, all threads
    hammer(lambda: aotirt.AotiHandle(path), "cpu")       # a handle per thread


@pytest.mark.gpu
def test_cuda_handles_on_the_shared_stream_from_many_threads():
    path = aotirt.models.path("add_mul", "cuda")
    shared = aotirt.CudaHandle(path)
    hammer(lambda: shared, 0)
    hammer(lambda: aotirt.CudaHandle(path), 0)


@pytest.mark.gpu
def test_cuda_handles_on_their_own_streams_from_many_threads():
    path = aotirt.models.path("add_mul", "cuda")
    hammer(lambda: aotirt.CudaHandle(path, stream=aotirt.Stream.create(0)), 0)


def test_the_gil_is_released_while_the_core_runs():
    # During one long run in C++, a Python thread counting in a loop runs at
    # its full rate if the GIL is released, and not at all if it is held
    # (Python can switch threads only between bytecodes, not inside the call).
    import time

    n = 1 << 24
    x = aotirt.asarray(np.ones(n, np.float32))
    handle = aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu"))
    handle.run([x, x, x])
    stop = threading.Event()
    ticks = [0]

    def count():
        while not stop.is_set():
            ticks[0] += 1

    counter = threading.Thread(target=count)
    counter.start()
    try:
        time.sleep(0.05)
        before, start = ticks[0], time.perf_counter()
        time.sleep(0.2)
        rate = (ticks[0] - before) / (time.perf_counter() - start)   # ticks per second, alone
        fractions = []
        for _ in range(3):
            before, start = ticks[0], time.perf_counter()
            handle.run([x, x, x])
            elapsed = time.perf_counter() - start
            fractions.append((ticks[0] - before) / (rate * elapsed))
    finally:
        stop.set()
        counter.join()
    # Held, the fraction is ~0; released it is ~1 on two cores.
    assert max(fractions) > 0.3, fractions
