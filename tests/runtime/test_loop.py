"""handle.loop: N steps on the device, outputs fed back and collected.

A loop must give exactly what a Python loop of run gives (the same kernels on
the same data), on the CPU, on CUDA eagerly and on CUDA with graphs.
"""

import numpy as np
import pytest

import aotirt
from aotirt import _layout
from support.waits import count_waits, interposer_library


def decoder_inputs(seed):
    rng = np.random.default_rng(seed)
    hidden = rng.standard_normal((_layout.T, _layout.D)).astype(np.float32)
    return hidden, np.array([rng.integers(0, _layout.V)], np.int64)


def python_loop(handle, inputs, steps, feedback, collect):
    """What loop() means, written with run(): (collected arrays, last outputs as arrays)."""
    inputs = list(inputs)
    collected = [[] for _ in collect]
    for _ in range(steps):
        outputs = handle.run(inputs)
        for k, o in enumerate(collect):
            collected[k].append(outputs[o].numpy())
        for o, i in feedback:
            inputs[i] = outputs[o]
    return [np.stack(c) for c in collected], [o.numpy() for o in outputs]


def assert_loop_equals_python_loop(handle, inputs, steps, feedback, collect):
    expected_collected, expected_last = python_loop(handle, inputs, steps, feedback, collect)
    collected, last = handle.loop(inputs, steps, feedback=feedback, collect=collect)
    assert len(collected) == len(collect) and len(last) == handle.num_outputs
    for got, want in zip(collected, expected_collected):
        assert got.shape == want.shape and got.device == handle.device
        np.testing.assert_array_equal(got.numpy(), want)
    for got, want in zip(last, expected_last):
        np.testing.assert_array_equal(got.numpy(), want)


# ---- on the CPU ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cpu_decoder():
    with aotirt.models.open("decoder", "cpu") as h:
        yield h


@pytest.fixture(scope="module")
def cpu_add_mul():
    with aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu")) as h:
        yield h


@pytest.mark.parametrize("steps", [1, 2, 17])
def test_cpu_decoder_loop_equals_a_python_loop(cpu_decoder, steps):
    assert_loop_equals_python_loop(cpu_decoder, decoder_inputs(0), steps, [(1, 1)], [0, 1])


def test_cpu_loop_without_feedback_or_collect(cpu_add_mul):
    a = np.arange(6, dtype=np.float32)
    collected, (out,) = cpu_add_mul.loop([a, a, a], 3)
    assert collected == []
    np.testing.assert_array_equal(out.numpy(), a * a + a)


def test_cpu_add_mul_feeds_back_and_collects_the_same_output_twice(cpu_add_mul):
    # out = a * b + c, then a <- out: x, x*x+x, ...
    a, b, c = (np.full(4, v, np.float32) for v in (0.5, 0.5, 1.0))
    assert_loop_equals_python_loop(cpu_add_mul, [a, b, c], 5, [(0, 0)], [0, 0])


def test_cpu_handle_accepts_graphs_as_a_no_op():
    a = np.arange(4, dtype=np.float32)
    with aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu"), graphs=True, outputs="static") as h:
        for _ in range(5):
            np.testing.assert_array_equal(h.run([a, a, a])[0].numpy(), a * a + a)
        collected, _ = h.loop([a, a, a], 4, feedback=[(0, 2)], collect=[0])
        assert collected[0].shape == (4, 4)
        stats = h.graph_stats
        assert stats["enabled"] is False and stats["graphs"] == 0 and stats["captures"] == 0
        assert "does nothing for a CPU handle" in stats["disabled_reason"]
    with aotirt.load(aotirt.models.path("add_mul", "cpu"), graphs=True) as h:
        assert not h.graph_stats["enabled"]
    with aotirt.models.open("decoder", "cpu", graphs=True) as h:
        assert "CPU handle" in h.graph_stats["disabled_reason"]


def test_graph_stats_without_graphs(cpu_add_mul):
    stats = cpu_add_mul.graph_stats
    assert set(stats) == {"enabled", "graphs", "instances", "hits", "captures", "evictions", "invalidations",
                          "eager_runs", "output_copies", "memory_bytes", "disabled_reason"}
    assert stats["instances"] == 0 and stats["output_copies"] == 0
    assert stats["enabled"] is False and "graphs are off" in stats["disabled_reason"]


@pytest.mark.parametrize("kwargs, error, match", [
    ({"outputs": "views"}, ValueError, 'outputs is "copy" or "static"'),
    ({"max_graphs": 0}, ValueError, "max_graphs is 1 or more"),
    ({"max_graphs": 1.5}, TypeError, "max_graphs is a number"),
    ({"max_graphs": True}, TypeError, "max_graphs is a number"),
])
def test_bad_graph_options_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu"), **kwargs)
    with pytest.raises(error, match=match):
        aotirt.load(aotirt.models.path("add_mul", "cpu"), graphs=True, **kwargs)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"steps": 0}, ValueError, "steps is 1 or more"),
    ({"steps": 2.0}, TypeError, "steps is a number"),
    ({"steps": 2, "feedback": [(2, 0)]}, ValueError, r"feedback pair 0 \(output 2, input 0\) is out of range"),
    ({"steps": 2, "feedback": [(0, 3)]}, ValueError, "out of range: the model has 2 outputs and 2 inputs"),
    ({"steps": 2, "feedback": [(0, 1), (1, 1)]}, ValueError, "input 1 is fed by two outputs"),
    ({"steps": 2, "feedback": [(-1, 0)]}, ValueError, "0 or more"),
    ({"steps": 2, "feedback": [1]}, TypeError, "pairs"),
    ({"steps": 2, "feedback": 3}, TypeError, "sequence"),
    ({"steps": 2, "collect": [2]}, ValueError, "collect: output 2 is out of range"),
    ({"steps": 2, "collect": ["0"]}, TypeError, "collect takes ints"),
    # logits (float32 [1024]) cannot become token (int64 [1]): refused naming both.
    ({"steps": 2, "feedback": [(0, 1)]}, ValueError, r"output 0 \(float32 \[1024\]\) cannot feed input 1 "
                                                      r"\(int64 \[1\]\)"),
])
def test_bad_loop_arguments_are_refused(cpu_decoder, kwargs, error, match):
    with pytest.raises(error, match=match):
        cpu_decoder.loop(list(decoder_inputs(1)), **kwargs)


def test_loop_input_count_is_checked(cpu_decoder):
    with pytest.raises(ValueError, match="takes 2 inputs, got 1"):
        cpu_decoder.loop([decoder_inputs(1)[0]], 2)


def test_add_mul_fed_back_into_itself_collects_every_step():
    with aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu")) as h:
        a, b = np.ones(4, np.float32), np.ones(4, np.float32)
        collected, _ = h.loop([a, b, b], 3, feedback=[(0, 0)], collect=[0])
        np.testing.assert_array_equal(collected[0].numpy(), [[2] * 4, [3] * 4, [4] * 4])


# ---- on a GPU -----------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("graphs", [False, True])
@pytest.mark.parametrize("outputs", ["copy", "static"])
def test_cuda_decoder_loop_equals_a_python_loop(graphs, outputs):
    with aotirt.models.open("decoder", 0) as eager, \
            aotirt.models.open("decoder", 0, graphs=graphs, outputs=outputs) as h:
        for seed in range(3):
            inputs = decoder_inputs(seed)
            expected_collected, expected_last = python_loop(eager, inputs, 20, [(1, 1)], [0, 1])
            for steps, want in ((20, expected_collected), (1, [c[:1] for c in expected_collected])):
                collected, last = h.loop(inputs, steps, feedback=[(1, 1)], collect=[0, 1])
                for got, w in zip(collected, want):
                    assert got.device == "cuda:0"
                    np.testing.assert_array_equal(got.numpy(), w)
                if steps == 20:
                    for got, w in zip(last, expected_last):
                        np.testing.assert_array_equal(got.numpy(), w)
        stats = h.graph_stats
        if graphs:
            # One graph per (signature, feedback pairs): captured once, then hits.
            assert stats["enabled"] and stats["captures"] == 1 and stats["hits"] == 5, stats
        else:
            assert not stats["enabled"] and stats["captures"] == 0


@pytest.mark.gpu
def test_cuda_loop_outputs_stay_valid_in_copy_mode():
    with aotirt.models.open("decoder", 0, graphs=True) as h:
        _, first = h.loop(decoder_inputs(4), 6, feedback=[(1, 1)])
        kept = first[1].numpy().copy()
        h.loop(decoder_inputs(5), 6, feedback=[(1, 1)])
        np.testing.assert_array_equal(first[1].numpy(), kept)


@pytest.fixture(scope="module")
def counter(tmp_path_factory):
    return interposer_library(str(tmp_path_factory.mktemp("interposer")))


@pytest.mark.gpu
@pytest.mark.parametrize("graphs", [False, True])
def test_a_loop_waits_only_in_the_final_copy(counter, graphs):
    counts = count_waits(counter, setup=f"""
        import numpy as np, aotirt
        h = aotirt.models.open("decoder", 0, graphs={graphs})
        hidden = aotirt.asarray(np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32), device=0)
        token = aotirt.asarray(np.array([0], np.int64), device=0)
        h.loop([hidden, token], 4, feedback=[(1, 1)], collect=[1])[0][0].numpy()   # captures
    """, body="""
        (tokens,), _ = h.loop([hidden, token], 500, feedback=[(1, 1)], collect=[1])
        assert tokens.numpy().shape == (500, 1)
    """)
    unexpected = {name: n for name, n in counts.items() if n and name != "cudaStreamSynchronize"}
    assert unexpected == {} and counts["cudaStreamSynchronize"] == 1, counts
