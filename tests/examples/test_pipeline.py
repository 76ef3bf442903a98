"""The main job: the greedy pipeline driver (aotirt.pipeline) in each mode."""

import gc
import os

import numpy as np
import pytest

import aotirt
from aotirt import reference
from aotirt.pipeline import GreedyDecoder, demo_frames, time_side_by_side
from support.helpers import cli, device_free_bytes


def resident_kib():
    # The resident set now (/proc/self/statm), not the peak (ru_maxrss): growth
    # below an earlier test's peak must show too.
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


STEPS = 16


@pytest.fixture(scope="module")
def frames():
    return demo_frames(seed=0)


@pytest.fixture(scope="module")
def reference_tokens(frames):
    return np.array(reference.greedy(frames, 0, STEPS), np.int64)


@pytest.fixture(scope="module")
def cpu_tokens(frames):
    with GreedyDecoder("cpu", "shared") as decoder:
        return decoder.decode(frames, STEPS)


def test_cpu_pipeline_matches_the_reference(cpu_tokens, reference_tokens):
    assert cpu_tokens.dtype == np.int64 and cpu_tokens.shape == (STEPS,)
    np.testing.assert_array_equal(cpu_tokens, reference_tokens)


def test_bad_mode_and_steps(frames):
    with pytest.raises(ValueError, match="mode must be one of"):
        GreedyDecoder("cpu", "fast")
    with GreedyDecoder("cpu") as decoder, pytest.raises(ValueError, match="steps must be at least 1"):
        decoder.decode(frames, 0)


def test_time_side_by_side_times_each_mode_and_refuses_two_of_one(frames):
    with GreedyDecoder("cpu", "shared") as shared, GreedyDecoder("cpu", "sync_each") as sync_each:
        seconds = time_side_by_side([shared, sync_each], frames, 2, repeats=3)
        assert set(seconds) == {"shared", "sync_each"}
        assert all(s > 0 for s in seconds.values())
        with pytest.raises(ValueError, match="one decoder per mode"):
            time_side_by_side([shared, shared], frames, 2)


def demo(device, steps, *flags):
    """What `python -m aotirt demo` prints, after checking it succeeded."""
    proc = cli("demo", "--device", device, "--steps", str(steps), *flags)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_demo_on_the_cpu():
    out = demo("cpu", 4, "--compare-sync")
    assert "device: cpu" in out and "tokens: " in out
    assert "sync_each" in out and "ratio:" in out


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["shared", "sync_each", "separate", "graph"])
def test_gpu_pipeline_gives_the_cpu_tokens(frames, cpu_tokens, mode):
    with GreedyDecoder("cuda:0", mode) as decoder:
        if mode == "separate":
            assert decoder.encoder.stream != decoder.decoder.stream
        else:
            assert decoder.encoder.stream == decoder.decoder.stream == aotirt.Stream.shared(0)
        np.testing.assert_array_equal(decoder.decode(frames, STEPS), cpu_tokens)


@pytest.mark.gpu
def test_demo_on_the_gpu():
    out = demo("cuda", 8, "--compare-sync")
    assert "device: cuda:0" in out and "ratio:" in out
    assert "graph:" in out and "faster than shared" in out


@pytest.mark.gpu
def test_demo_with_graph_replays_prints_the_shared_tokens():
    shared = demo("cuda", 8)
    graphed = demo("cuda", 8, "--graph")
    tokens = [line for line in shared.splitlines() if line.startswith("tokens:")]
    assert tokens and tokens == [line for line in graphed.splitlines() if line.startswith("tokens:")]
    assert "graph:" in graphed and "CUDA graph replay" in graphed


@pytest.mark.gpu
@pytest.mark.reads_device_free_memory
def test_soak_100k_steps_memory_and_rss_flat(frames):
    # Steps chained on the device; every 10,000 steps one copy back. Device
    # memory (cuda-bindings, independent of aotirt) and host RSS must not grow.
    with GreedyDecoder("cuda:0", "shared") as decoder:
        (hidden,) = decoder.encoder.run([frames])
        token = aotirt.asarray(np.array([0], np.int64), device=0)

        def steps(n):
            nonlocal token
            for _ in range(n):
                _logits, token = decoder.decoder.run([hidden, token])
            return int(token.numpy()[0])

        steps(2000)  # warm-up: pools and caches reach their steady size
        gc.collect()
        free_before = device_free_bytes()
        rss_before = resident_kib()
        for _ in range(10):
            assert 0 <= steps(10_000) < 1024
        gc.collect()
        free_after = device_free_bytes()
        rss_after = resident_kib()
    assert free_before - free_after <= 8 << 20, (free_before, free_after)
    assert rss_after - rss_before <= 16 << 10, (rss_before, rss_after)   # KiB: 16 MiB
