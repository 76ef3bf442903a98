"""CUDA graph mode: CudaHandle.capture and Graph.replay.

A replay runs the same kernels on the same data as an eager run, and the
example models' kernels have no atomics, so results are compared exactly.
"""

import gc
import os
import re

import numpy as np
import pytest

import aotirt
from aotirt import _layout
from aotirt.pipeline import GreedyDecoder, demo_frames
from support.helpers import assert_one_line_error, cli, device_free_bytes
from support.waits import count_waits, interposer_library

UNCAPTURABLE = os.path.join(os.path.dirname(aotirt.__file__), "models", "testing", "uncapturable_cuda.so")


def decoder_inputs(rng):
    hidden = rng.standard_normal((_layout.T, _layout.D)).astype(np.float32)
    token = np.array([rng.integers(0, _layout.V)], np.int64)
    return hidden, token


# ---- without a GPU: argument checks ----------------------------------------------------------

def test_a_cpu_handle_has_no_capture():
    assert hasattr(aotirt.CudaHandle, "capture")
    assert not hasattr(aotirt.AotiHandle, "capture")
    with aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu")) as h:
        assert not hasattr(h, "capture")


def test_graphs_come_from_capture_only():
    with pytest.raises(TypeError, match=r"CudaHandle\.capture"):
        aotirt.Graph()
    bare = aotirt.Graph.__new__(aotirt.Graph)
    with pytest.raises(ValueError, match="not made by CudaHandle.capture"):
        bare.replay()
    assert bare.closed and "not captured" in repr(bare)
    bare.close()


def test_graph_mode_needs_a_gpu():
    with pytest.raises(ValueError, match="needs a CUDA device"):
        GreedyDecoder("cpu", "graph")
    assert_one_line_error(cli("demo", "--device", "cpu", "--graph"), 2, "--graph", "needs a CUDA GPU")


# ---- on a GPU ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def add_mul():
    with aotirt.CudaHandle(aotirt.models.path("add_mul", "cuda")) as h:
        yield h


@pytest.fixture(scope="module")
def decoder():
    with aotirt.models.open("decoder", 0) as h:
        yield h


@pytest.mark.gpu
def test_add_mul_replays_equal_eager_runs(add_mul):
    rng = np.random.default_rng(0)
    example = [rng.standard_normal((3, 257)).astype(np.float32) for _ in range(3)]
    with add_mul.capture(example) as g:
        assert len(g.inputs) == 3 and len(g.outputs) == 1
        # The capture's own launch ran on the example inputs.
        np.testing.assert_array_equal(g.outputs[0].numpy(), add_mul.run(example)[0].numpy())
        for _trial in range(5):
            arrays = [rng.standard_normal((3, 257)).astype(np.float32) for _ in range(3)]
            # Host arrays, device Tensors, and a CPU Tensor (copied host to device by the core).
            inputs = [arrays[0], aotirt.asarray(arrays[1], device=0), aotirt.asarray(arrays[2])]
            outputs = g.replay(inputs)
            assert outputs is g.outputs
            np.testing.assert_array_equal(outputs[0].numpy(), add_mul.run(arrays)[0].numpy())
        # No inputs: the static inputs as they are, the last ones copied in.
        np.testing.assert_array_equal(g.replay()[0].numpy(), add_mul.run(arrays)[0].numpy())


@pytest.mark.gpu
def test_static_inputs_and_outputs_stay_where_they_are(add_mul):
    a, b, c = (np.full(64, v, np.float32) for v in (2.0, 3.0, 1.0))
    with add_mul.capture([a, b, c], warmup=0) as g:
        out = g.outputs[0]
        addresses = [t.data_ptr for t in g.inputs] + [out.data_ptr]
        g.inputs[2].copy_(aotirt.asarray(np.full(64, 10.0, np.float32), device=0))
        g.replay(list(g.inputs))          # the static inputs themselves: taken as they are
        np.testing.assert_array_equal(out.numpy(), np.full(64, 16.0, np.float32))
        g.replay()
        assert [t.data_ptr for t in g.inputs] + [g.outputs[0].data_ptr] == addresses
        assert g.outputs[0] is out


@pytest.mark.gpu
def test_decoder_replays_equal_eager_runs(decoder):
    rng = np.random.default_rng(1)
    hidden, token = decoder_inputs(rng)
    with decoder.capture([hidden, token]) as g:
        logits, next_token = g.outputs
        for trial in range(4):
            if trial:
                hidden, token = decoder_inputs(rng)
                g.replay([aotirt.asarray(hidden, device=0), token])
            eager_logits, eager_next = decoder.run([hidden, token])
            np.testing.assert_array_equal(logits.numpy(), eager_logits.numpy())
            np.testing.assert_array_equal(next_token.numpy(), eager_next.numpy())


@pytest.mark.gpu
def test_greedy_loop_by_replays_gives_the_eager_tokens():
    frames = [demo_frames(seed=0), demo_frames(seed=1)]
    with GreedyDecoder("cuda:0", "shared") as eager:
        expected = [eager.decode(f, 32) for f in frames]
    with GreedyDecoder("cuda:0", "graph") as graphed:
        for f, tokens in zip(frames + frames, expected + expected):   # the graph is captured once
            np.testing.assert_array_equal(graphed.decode(f, 32), tokens)
        stats = graphed.decoder.graph_stats   # decoder.loop on graphs: one capture, then hits
        assert stats["captures"] == 1 and stats["hits"] == 3, stats


@pytest.mark.gpu
def test_static_output_fed_back_as_an_input_without_feedback_pairs(decoder):
    # The loop without feedback: next_token (a static output) is copied into
    # the token input (a few bytes, device to device) before each launch.
    frames = demo_frames(seed=2)
    with GreedyDecoder("cuda:0", "shared") as eager:
        expected = eager.decode(frames, 24)
        (hidden,) = eager.encoder.run([frames])
    start = np.array([0], np.int64)
    with decoder.capture([hidden, start]) as g:
        logits, next_token = g.outputs
        tokens = [int(next_token.numpy()[0])]
        for _ in range(23):
            g.replay([g.inputs[0], next_token])
            tokens.append(int(next_token.numpy()[0]))
    np.testing.assert_array_equal(tokens, expected)


@pytest.mark.gpu
@pytest.mark.reads_device_free_memory
def test_10000_replays_keep_device_memory_flat(decoder):
    rng = np.random.default_rng(3)
    with decoder.capture(list(decoder_inputs(rng)), feedback=[(1, 1)]) as g:
        for _ in range(2000):
            g.replay()
        assert 0 <= int(g.outputs[1].numpy()[0]) < _layout.V
        gc.collect()
        free_before = device_free_bytes()
        for _ in range(10_000):
            g.replay()
        assert 0 <= int(g.outputs[1].numpy()[0]) < _layout.V
        gc.collect()
        free_after = device_free_bytes()
    assert free_before - free_after <= 8 << 20, (free_before, free_after)


def graph_memory_in_use():
    """Bytes of graph allocations alive now (cuda-bindings, not aotirt)."""
    from cuda.bindings import runtime

    err, value = runtime.cudaDeviceGetGraphMemAttribute(
        0, runtime.cudaGraphMemAttributeType.cudaGraphMemAttrUsedMemCurrent)
    assert err == runtime.cudaError_t.cudaSuccess, err
    return int(value)


def trim_graph_memory():
    # CUDA keeps freed graph memory reserved for the next graph; trimming
    # hands it back so that what remains is what is really still held.
    from cuda.bindings import runtime

    (err,) = runtime.cudaDeviceGraphMemTrim(0)
    assert err == runtime.cudaError_t.cudaSuccess, err


@pytest.mark.gpu
@pytest.mark.reads_device_free_memory
def test_captures_and_closes_do_not_leak_device_memory(add_mul):
    x = np.ones(1 << 16, np.float32)
    for _ in range(5):
        add_mul.capture([x, x, x]).close()
    gc.collect()
    (add_mul.run([x, x, x])[0]).numpy()     # everything queued so far is done
    trim_graph_memory()
    used_before, free_before = graph_memory_in_use(), device_free_bytes()
    for _ in range(50):
        with add_mul.capture([x, x, x]) as g:
            g.replay()
    # The last graph's static outputs stay readable after close() by design:
    # drop them too before counting what is still held.
    del g
    gc.collect()
    (add_mul.run([x, x, x])[0]).numpy()
    trim_graph_memory()
    # Every graph allocation of the 50 graphs was freed...
    assert graph_memory_in_use() <= used_before, (used_before, graph_memory_in_use())
    # ...and nothing else grows: 50 leaked graphs would hold 50 x 256 KiB outputs.
    assert free_before - device_free_bytes() <= 8 << 20, (free_before, device_free_bytes())


@pytest.mark.gpu
def test_mismatched_inputs_are_refused_naming_the_input(decoder):
    rng = np.random.default_rng(4)
    hidden, token = decoder_inputs(rng)
    with decoder.capture([hidden, token]) as g:
        with pytest.raises(ValueError, match=re.escape("input 1: the graph was captured with int64 [1], got int64 [2]")):
            g.replay([hidden, np.array([1, 2], np.int64)])
        with pytest.raises(ValueError, match=re.escape("input 0: the graph was captured with float32 [64, 256], "
                                                       "got float64 [64, 256]")):
            g.replay([hidden.astype(np.float64), token])
        with pytest.raises(ValueError, match="input 1: the graph was captured with int64 \\[1\\], got int32 \\[1\\]"):
            g.replay([hidden, token.astype(np.int32)])
        with pytest.raises(ValueError, match="takes 2 inputs, got 1"):
            g.replay([hidden])
        # Refusals change nothing: the next replay is still right.
        g.replay([hidden, token])
        np.testing.assert_array_equal(g.outputs[0].numpy(), decoder.run([hidden, token])[0].numpy())


@pytest.mark.gpu
def test_bad_capture_arguments(decoder, add_mul):
    hidden, token = decoder_inputs(np.random.default_rng(5))
    with pytest.raises(ValueError, match="takes 2 inputs, got 1 example inputs"):
        decoder.capture([hidden])
    with pytest.raises(ValueError, match="warmup"):
        decoder.capture([hidden, token], warmup=-1)
    with pytest.raises(TypeError, match="warmup"):
        decoder.capture([hidden, token], warmup=1.5)
    with pytest.raises(TypeError, match="pairs"):
        decoder.capture([hidden, token], feedback=[1])
    with pytest.raises(ValueError, match="out of range"):
        decoder.capture([hidden, token], feedback=[(2, 1)])
    with pytest.raises(ValueError, match=re.escape("feedback: output 0 (float32 [1024]) cannot feed input 1 (int64 [1])")):
        decoder.capture([hidden, token], feedback=[(0, 1)])
    x = np.ones(8, np.float32)
    with pytest.raises(ValueError, match="fed by two outputs"):
        add_mul.capture([x, x, x], feedback=[(0, 1), (0, 1)])
    # The handle is unharmed.
    np.testing.assert_array_equal(add_mul.run([x, x, x])[0].numpy(), np.full(8, 2, np.float32))


@pytest.mark.gpu
@pytest.mark.parametrize("warmup", [0, 2])
def test_an_uncapturable_library_raises_and_the_handle_still_runs(warmup):
    x = np.arange(32, dtype=np.float32)
    with aotirt.CudaHandle(UNCAPTURABLE) as h:
        np.testing.assert_array_equal(h.run([x])[0].numpy(), x)
        with pytest.raises(aotirt.AotiError) as info:
            h.capture([x], warmup=warmup)
        message = str(info.value)
        assert "uncapturable_cuda.so cannot be captured as a CUDA graph: " in message, message
        assert re.search(r"cudaEvent\w+ failed", message), message
        # Eager runs go on, and nothing of the failed capture is left behind
        # as CUDA's last error for the next call to report.
        for _ in range(3):
            np.testing.assert_array_equal(h.run([x])[0].numpy(), x)
    with aotirt.CudaHandle(aotirt.models.path("add_mul", "cuda")) as other, other.capture([x, x, x]) as g:
        np.testing.assert_array_equal(g.replay()[0].numpy(), x * x + x)


@pytest.fixture(scope="module")
def counter(tmp_path_factory):
    return interposer_library(str(tmp_path_factory.mktemp("interposer")))


def only_the_copy(counts):
    unexpected = {name: n for name, n in counts.items() if n and name != "cudaStreamSynchronize"}
    assert unexpected == {}, unexpected
    assert counts["cudaStreamSynchronize"] == 1, counts


@pytest.mark.gpu
def test_capture_and_replays_wait_only_in_the_copy(counter):
    only_the_copy(count_waits(counter, setup="""
        import numpy as np, aotirt
        h = aotirt.models.open("decoder", 0)
        hidden = aotirt.asarray(np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32), device=0)
        token = aotirt.asarray(np.array([0], np.int64), device=0)
        h.run([hidden, token])[1].numpy()
    """, body="""
        g = h.capture([hidden, token], feedback=[(1, 1)])
        for _ in range(1000):
            g.replay()
        g.replay([hidden, token])
        g.close()                               # launches still queued
        assert 0 <= int(g.outputs[1].numpy()[0]) < 1024
    """))


@pytest.mark.gpu
def test_the_graph_pipeline_waits_once_per_decode(counter):
    only_the_copy(count_waits(counter, setup="""
        from aotirt.pipeline import GreedyDecoder, demo_frames
        frames = demo_frames()
        decoder = GreedyDecoder("cuda:0", "graph")
        decoder.decode(frames, 4)               # captures
    """, body="""
        tokens = decoder.decode(frames, 64)
        assert tokens.shape == (64,)
    """))


@pytest.mark.gpu
def test_closing_a_graph_with_work_queued(add_mul):
    rng = np.random.default_rng(6)
    arrays = [rng.standard_normal(1 << 18).astype(np.float32) for _ in range(3)]
    g = add_mul.capture(arrays, warmup=0)
    outputs, inputs = g.outputs, g.inputs
    for _ in range(200):
        g.replay()
    g.close()                                   # no wait: the launches finish on their own
    g.close()
    assert g.closed and "closed" in repr(g)
    with pytest.raises(ValueError, match="is closed"):
        g.replay()
    del g
    gc.collect()
    # The static tensors stay valid, with the last replay's data.
    expected = add_mul.run(arrays)[0].numpy()
    np.testing.assert_array_equal(outputs[0].numpy(), expected)
    np.testing.assert_array_equal(inputs[0].numpy(), arrays[0])


@pytest.mark.gpu
def test_a_closed_handle_or_replaced_weights_refuse_replays():
    hidden, token = decoder_inputs(np.random.default_rng(7))
    h = aotirt.models.open("decoder", 0)
    g = h.capture([hidden, token])
    with open(aotirt.models.weights("decoder"), "rb") as f:
        h.update_constants_from_blob(f.read())
    with pytest.raises(aotirt.AotiError, match="weights were replaced after this CUDA graph was captured"):
        g.replay()
    g2 = h.capture([hidden, token])
    g2.replay()
    h.close()
    with pytest.raises(ValueError, match="is closed: its CUDA graph cannot be replayed"):
        g2.replay()
    outputs = g2.outputs
    g.close()
    g2.close()
    assert 0 <= int(outputs[1].numpy()[0]) < _layout.V
