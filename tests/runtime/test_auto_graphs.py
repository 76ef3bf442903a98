"""Automatic CUDA graphs: handles opened with graphs=True.

A replay runs the same kernels on the same data as an eager run (the example
models' kernels have no atomics), so results are compared exactly. The CPU
side (options, the CPU no-op) is in test_loop.py.
"""

import os
import warnings

import numpy as np
import pytest

import aotirt
from aotirt import _layout
from support.waits import count_waits, interposer_library

UNCAPTURABLE = os.path.join(os.path.dirname(aotirt.__file__), "models", "testing", "uncapturable_cuda.so")
EAGER_RUNS = 2  # calls of a signature before the next captures it (AOTIRT_AUTO_GRAPH_EAGER_RUNS)


def add_mul_inputs(n, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(n).astype(np.float32) for _ in range(3)]


def add_mul(**kwargs):
    return aotirt.CudaHandle(aotirt.models.path("add_mul", "cuda"), **kwargs)


def test_graph_options_are_checked_before_a_gpu_is_needed():
    with pytest.raises(ValueError, match='outputs is "copy" or "static"'):
        aotirt.CudaHandle(aotirt.models.path("add_mul", "cuda"), graphs=True, outputs="none")
    with pytest.raises(ValueError, match="max_graphs is 1 or more"):
        aotirt.CudaHandle(aotirt.models.path("add_mul", "cuda"), graphs=True, max_graphs=0)


@pytest.mark.gpu
def test_replays_equal_eager_runs_over_many_calls_and_signatures():
    sizes = (8, 1000, 1 << 16)   # add_mul takes any length: one signature each
    with add_mul() as eager, add_mul(graphs=True) as auto, \
            aotirt.models.open("decoder", 0) as eager_decoder, aotirt.models.open("decoder", 0, graphs=True) as dec:
        rounds = 12
        for r in range(rounds):
            for n in sizes:
                inputs = add_mul_inputs(n, seed=100 * r + n)
                np.testing.assert_array_equal(auto.run(inputs)[0].numpy(), eager.run(inputs)[0].numpy())
            hidden = np.random.default_rng(r).standard_normal((_layout.T, _layout.D)).astype(np.float32)
            token = np.array([r % _layout.V], np.int64)
            for got, want in zip(dec.run([hidden, token]), eager_decoder.run([hidden, token])):
                np.testing.assert_array_equal(got.numpy(), want.numpy())
        stats = auto.graph_stats
        assert stats["enabled"] and stats["disabled_reason"] is None
        assert stats["captures"] == len(sizes) and stats["graphs"] == len(sizes), stats
        assert stats["eager_runs"] == EAGER_RUNS * len(sizes), stats
        assert stats["hits"] == (rounds - EAGER_RUNS - 1) * len(sizes), stats
        # Static inputs (3) and the output of each graph, at least.
        assert stats["memory_bytes"] >= sum(4 * 4 * n for n in sizes), stats
        # `got` keeps the decoder's last output of a round while the next
        # round's call runs: that call captures the second instance, and from
        # then on the two take turns (no copy, no further capture).
        dec_stats = dec.graph_stats
        assert dec_stats["captures"] == 2 and dec_stats["instances"] == 2 and dec_stats["graphs"] == 1, dec_stats
        assert dec_stats["hits"] == rounds - EAGER_RUNS - 1 and dec_stats["output_copies"] == 0, dec_stats
        assert stats["instances"] == len(sizes) and stats["output_copies"] == 0, stats   # nothing held


@pytest.mark.gpu
def test_least_recently_used_graphs_are_evicted():
    a, b = add_mul_inputs(256, 1), add_mul_inputs(512, 2)
    # The reference is an eager run: the kernel fuses a * b + c into one
    # rounding (an FMA), which numpy's two roundings do not match bit for bit.
    with add_mul(graphs=True, max_graphs=1) as auto, add_mul() as eager:
        for _ in range(EAGER_RUNS + 1):
            auto.run(a)
        assert auto.graph_stats["graphs"] == 1 and auto.graph_stats["captures"] == 1
        one_graph = auto.graph_stats["memory_bytes"]
        for _ in range(EAGER_RUNS + 1):
            auto.run(b)                       # captures b: a is evicted
        np.testing.assert_array_equal(auto.run(a)[0].numpy(), eager.run(a)[0].numpy())   # a again: captured again
        stats = auto.graph_stats
        assert stats["graphs"] == 1 and stats["captures"] == 3 and stats["evictions"] == 2, stats
        assert stats["memory_bytes"] == one_graph, stats
    assert auto.closed


@pytest.mark.gpu
def test_replaced_weights_invalidate_the_graphs():
    hidden = np.random.default_rng(3).standard_normal((_layout.T, _layout.D)).astype(np.float32)
    token = np.array([5], np.int64)
    with aotirt.models.open("decoder", 0, graphs=True) as auto, aotirt.models.open("decoder", 0) as eager:
        for _ in range(EAGER_RUNS + 2):
            auto.run([hidden, token])
        assert auto.graph_stats["captures"] == 1
        # Other weights (the same ones scaled): the graph read the old addresses.
        weights = np.fromfile(aotirt.models.weights("decoder"), np.float32) * np.float32(0.5)
        auto.update_constants_from_blob(weights.tobytes())
        eager.update_constants_from_blob(weights.tobytes())
        for _ in range(3):
            for got, want in zip(auto.run([hidden, token]), eager.run([hidden, token])):
                np.testing.assert_array_equal(got.numpy(), want.numpy())
        stats = auto.graph_stats
        # Both instances are captured again: the first at the first call on the
        # new weights, the second at the next (`got` holds the first's output).
        assert stats["invalidations"] == 1 and stats["captures"] == 3 and stats["graphs"] == 1, stats
        assert stats["instances"] == 2, stats


@pytest.mark.gpu
def test_an_uncapturable_library_warns_once_and_runs_eagerly():
    x = np.arange(32, dtype=np.float32)
    with aotirt.CudaHandle(UNCAPTURABLE, graphs=True) as h, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(8):
            np.testing.assert_array_equal(h.run([x])[0].numpy(), x)   # the failing call too
        collected, _ = h.loop([x], 3, collect=[0])
        np.testing.assert_array_equal(collected[0].numpy(), np.stack([x] * 3))
    runtime = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(runtime) == 1, [str(w.message) for w in caught]
    assert "cannot be captured as a CUDA graph" in str(runtime[0].message)
    stats = h.graph_stats
    assert not stats["enabled"] and "cannot be captured as a CUDA graph" in stats["disabled_reason"]
    assert stats["captures"] == 0 and stats["graphs"] == 0 and stats["eager_runs"] == 8 + 3, stats


@pytest.mark.gpu
def test_copy_outputs_stay_valid_and_static_outputs_are_rewritten():
    x1, x2 = add_mul_inputs(1024, 7), add_mul_inputs(1024, 8)
    with add_mul() as eager:  # the reference: the kernel's own rounding (an FMA), not numpy's
        want1, want2 = eager.run(x1)[0].numpy(), eager.run(x2)[0].numpy()
    for mode in ("copy", "static"):
        with add_mul(graphs=True, outputs=mode) as auto:
            for _ in range(EAGER_RUNS):
                auto.run(x1)
            (first,) = auto.run(x1)           # the capture's own launch
            (second,) = auto.run(x2)          # copy: `first` is held, so a second instance; static: a replay
            np.testing.assert_array_equal(second.numpy(), want2)
            np.testing.assert_array_equal(first.numpy(), want1 if mode == "copy" else want2)
            stats = auto.graph_stats
            assert stats["hits"] == 1 and stats["output_copies"] == 0, stats
            assert stats["captures"] == stats["instances"] == (2 if mode == "copy" else 1), stats


def data_address(tensor):
    return tensor.__cuda_array_interface__["data"][0]


@pytest.mark.gpu
def test_a_rebinding_loop_alternates_two_instances_without_a_copy():
    xs = [add_mul_inputs(4096, 20 + i) for i in range(EAGER_RUNS + 8)]
    with add_mul() as eager, add_mul(graphs=True) as auto:
        # The reference is an eager run (the kernel's FMA), not numpy's a * b + c.
        want = [eager.run(x)[0].numpy() for x in xs]
        addresses = []
        for i, x in enumerate(xs):
            (out,) = auto.run(x)              # the previous `out` is still held while this call runs
            np.testing.assert_array_equal(out.numpy(), want[i])
            if i >= EAGER_RUNS:
                addresses.append(data_address(out))
        stats = auto.graph_stats
        assert stats["graphs"] == 1 and stats["instances"] == 2 and stats["captures"] == 2, stats
        assert stats["output_copies"] == 0 and stats["hits"] == len(xs) - EAGER_RUNS - 1, stats
        # Zero copy: every output is one of the two instances' static outputs, in turn.
        assert len(set(addresses)) == 2 and addresses[0::2] == [addresses[0]] * len(addresses[0::2]), addresses
        # Both instances' static inputs (3) and outputs, at least.
        assert stats["memory_bytes"] >= 2 * 4 * 4 * 4096, stats


@pytest.mark.gpu
def test_outputs_kept_from_many_calls_are_copied_never_rewritten():
    xs = [add_mul_inputs(4096, 40 + i) for i in range(EAGER_RUNS + 4)]
    with add_mul() as eager, add_mul(graphs=True) as auto:
        want = [eager.run(x)[0].numpy() for x in xs]
        kept = [auto.run(x)[0] for x in xs]   # every call's output held
        for got, w in zip(kept, want):
            np.testing.assert_array_equal(got.numpy(), w)
        stats = auto.graph_stats
        # Calls 3 and 4 are the two instances; call 5 finds both held: one is
        # replaced (its old outputs stay the caller's) and kept free from then
        # on, so calls 5 and 6 copy out of it.
        assert stats["instances"] == 2 and stats["captures"] == 3 and stats["output_copies"] == 2, stats
        assert stats["hits"] == len(xs) - EAGER_RUNS - 1, stats
        del kept, got
        for x, w in zip(xs, want):            # let go: the instances serve again, never captured again
            (out,) = auto.run(x)
            np.testing.assert_array_equal(out.numpy(), w)
        after = auto.graph_stats
        assert after["captures"] == 3 and after["instances"] == 2 and after["eager_runs"] == EAGER_RUNS, after


@pytest.mark.gpu
def test_outputs_read_on_another_stream_are_rewritten_only_after_that_work():
    n = 1 << 20
    xs = [add_mul_inputs(n, 60 + i) for i in range(EAGER_RUNS + 3)]
    side = aotirt.Stream.create(0)
    with add_mul() as eager, add_mul(graphs=True) as auto:
        want = [eager.run(x)[0].numpy() for x in xs]
        for x in xs[:EAGER_RUNS]:
            auto.run(x)
        (a,) = auto.run(xs[EAGER_RUNS])       # the first instance
        (b,) = auto.run(xs[EAGER_RUNS + 1])   # `a` is held: the second instance
        # Long work on `side`, then a copy of `a` behind it: `side` reads `a`
        # well after `a` is let go.
        big = aotirt.empty((64 << 20,), "float32", device=0)
        big_copy = aotirt.empty((64 << 20,), "float32", device=0, stream=side)
        landing = aotirt.empty((n,), "float32", device=0, stream=side)
        for _ in range(8):
            big_copy.copy_(big)               # queued on side (the destination's stream)
        landing.copy_(a)                      # on side, after those
        del a                                 # the first instance is free again...
        (c,) = auto.run(xs[EAGER_RUNS + 2])   # ...and replayed: only after side's copy of it
        np.testing.assert_array_equal(landing.numpy(), want[EAGER_RUNS])
        np.testing.assert_array_equal(c.numpy(), want[EAGER_RUNS + 2])
        np.testing.assert_array_equal(b.numpy(), want[EAGER_RUNS + 1])
        stats = auto.graph_stats
        assert stats["captures"] == 2 and stats["output_copies"] == 0, stats


@pytest.fixture(scope="module")
def counter(tmp_path_factory):
    return interposer_library(str(tmp_path_factory.mktemp("interposer")))


@pytest.mark.gpu
@pytest.mark.parametrize("outputs", ["copy", "static"])
def test_replays_wait_only_in_the_final_copy(counter, outputs):
    counts = count_waits(counter, setup=f"""
        import numpy as np, aotirt
        h = aotirt.models.open("decoder", 0, graphs=True, outputs={outputs!r})
        hidden = aotirt.asarray(np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32), device=0)
        token = aotirt.asarray(np.array([0], np.int64), device=0)
        for _ in range(4):
            h.run([hidden, token])            # two eager runs, the capture, a replay
        for _ in range(2):
            _logits, token = h.run([hidden, token])   # copy mode: the second instance (the first is held)
        h.run([hidden, token])[1].numpy()
    """, body=f"""
        for _ in range(300):
            _logits, token = h.run([hidden, token])
        assert 0 <= int(token.numpy()[0]) < 1024
        stats = h.graph_stats
        assert stats["captures"] == stats["instances"] == {2 if outputs == "copy" else 1}, stats
        assert stats["output_copies"] == 0, stats
    """)
    unexpected = {name: n for name, n in counts.items() if n and name != "cudaStreamSynchronize"}
    assert unexpected == {} and counts["cudaStreamSynchronize"] == 1, counts
