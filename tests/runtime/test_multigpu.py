"""Two GPUs in one process: each device keeps its own stream and pool, a
tensor of one GPU given to a handle on another is moved by a peer copy
ordered by events, graphs and loops work on any device, one thread per GPU
runs its handles concurrently, and the current device survives every call.

Every test needs two GPUs (`multigpu`): skipped with a reason on fewer, an
error under AOTIRT_REQUIRE_GPU=1 where two exist. No timed assertions: the
scaling figure is bench/multigpu.py's."""

import threading

import numpy as np
import pytest

import aotirt
from aotirt._device import peer_access_enabled
from support.devices import can_access_peer, current_device, primary_context_active, set_current_device
from support.helpers import assert_add_mul_close, in_tests, random_inputs, run_python

pytestmark = [pytest.mark.gpu, pytest.mark.multigpu]

BIG = (1 << 22,)  # 16 MiB per input: long enough that an unordered copy would read unfinished work


@pytest.fixture
def path():
    return aotirt.models.path("add_mul", "cuda")


@pytest.fixture(autouse=True)
def back_on_device_0():
    yield
    set_current_device(0)


def test_each_device_has_its_own_stream_and_memory(path):
    rng = np.random.default_rng(1)
    a, b, c = random_inputs(rng, (4097,))
    with aotirt.CudaHandle(path, device=0) as h0, aotirt.CudaHandle(path, device=1) as h1:
        assert h0.stream.device == 0 and h1.stream.device == 1
        assert h1.stream == aotirt.Stream.shared(1) != h0.stream
        for h, device in ((h0, 0), (h1, 1)):
            inputs = [aotirt.asarray(x, device=device) for x in (a, b, c)]
            assert all(t.stream == aotirt.Stream.shared(device) for t in inputs)
            (out,) = h.run(inputs)
            assert out.device == f"cuda:{device}" and out.stream == h.stream
            assert_add_mul_close(out.numpy(), a, b, c)
        assert current_device() == 0


def test_a_handle_on_device_1_never_makes_device_0s_context():
    # A fresh process that only ever uses cuda:1: device 0's CUDA context is
    # never created (restoring the "current" device 0 would create it).
    code = in_tests("""
        import numpy as np, aotirt
        from support.devices import primary_context_active
        with aotirt.CudaHandle(aotirt.models.path("add_mul", "cuda"), device=1) as h:
            x = aotirt.asarray(np.ones(1000, np.float32), device=1)
            (y,) = h.run([x, x, x])
            assert (y.numpy() == 2).all()
            z = y.to(1)
            print("device 0 context:", primary_context_active(0), "device 1 context:", primary_context_active(1))
    """)
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert "device 0 context: False device 1 context: True" in proc.stdout, proc.stdout


def test_inputs_on_another_gpu_are_moved_after_their_producer(path):
    rng = np.random.default_rng(2)
    a, b, c = random_inputs(rng, BIG)
    with aotirt.CudaHandle(path, device=0) as h0, aotirt.CudaHandle(path, device=1) as h1:
        a0, b0, c0 = (aotirt.asarray(x, device=0) for x in (a, b, c))
        c1 = aotirt.asarray(c, device=1)
        (y0,) = h0.run([a0, b0, c0])        # queued on cuda:0, not waited for
        (z1,) = h1.run([y0, b0, c1])        # two inputs of cuda:0, one of cuda:1
        assert z1.device == "cuda:1" and z1.stream == h1.stream
        y = (a.astype(np.float64) * b + c).astype(np.float32)
        assert_add_mul_close(z1.numpy(), y, b, c)
        # The caller's tensors are untouched, on their own device.
        assert y0.device == "cuda:0" and y0.stream == h0.stream
        assert_add_mul_close(y0.numpy(), a, b, c)
    assert peer_access_enabled(1, 0) == can_access_peer(1, 0)


def test_to_moves_a_view_with_its_strides(path):
    host = np.arange(4 * 7, dtype=np.float32).reshape(4, 7)
    t0 = aotirt.asarray(host, device=0)
    view = t0.narrow(1, 2, 3)
    moved = view.to(1)
    assert moved.device == "cuda:1" and moved.shape == (4, 3) and moved.strides == view.strides
    assert moved.stream == aotirt.Stream.shared(1)
    np.testing.assert_array_equal(moved.numpy(), host[:, 2:5])
    mine = aotirt.Stream.create(1)
    back = moved.to(0).to(1, stream=mine)
    assert back.stream == mine
    np.testing.assert_array_equal(back.numpy(), host[:, 2:5])
    with pytest.raises(ValueError, match="the stream is on cuda:1, the copy goes to cuda:0"):
        moved.to(0, stream=mine)


def test_copy_between_gpus_any_strides():
    host = np.arange(6 * 5, dtype=np.float32).reshape(6, 5)
    src = aotirt.asarray(host, device=0).narrow(1, 1, 3)        # strided, on cuda:0
    dst = aotirt.empty((6, 3), "float32", device=1)
    dst.copy_(src)
    assert dst.stream == aotirt.Stream.shared(1)
    np.testing.assert_array_equal(dst.numpy(), host[:, 1:4])
    wide = aotirt.empty((6, 5), "float32", device=1).narrow(1, 0, 3)   # a strided destination too
    wide.copy_(src)
    np.testing.assert_array_equal(wide.numpy(), host[:, 1:4])


@pytest.mark.parametrize("mode", ["shared", "separate", "graph", "sync_each"])
def test_encoder_and_decoder_on_two_gpus_decode_as_on_one(mode):
    from aotirt.pipeline import GreedyDecoder, demo_frames

    frames = demo_frames(seed=3)
    with GreedyDecoder("cuda:0", mode) as one:
        expected = one.decode(frames, 12)
    with GreedyDecoder("cuda:0", mode, decoder_device="cuda:1") as two:
        assert two.encoder.stream.device == 0 and two.decoder.stream.device == 1
        for _ in range(2):   # graph mode: the capture, then a replay
            np.testing.assert_array_equal(two.decode(frames, 12), expected)


def test_automatic_graphs_on_device_1_with_inputs_of_device_0(path):
    rng = np.random.default_rng(5)
    with aotirt.CudaHandle(path, device=1, graphs=True) as h1:
        for _ in range(5):
            a, b, c = random_inputs(rng, (3000,))
            inputs = [aotirt.asarray(a, device=0), aotirt.asarray(b, device=1), aotirt.asarray(c, device=0)]
            (out,) = h1.run(inputs)
            assert out.device == "cuda:1"
            assert_add_mul_close(out.numpy(), a, b, c)
        stats = h1.graph_stats
        assert stats["enabled"] and stats["captures"] == 1 and stats["hits"] == 2, stats


def test_a_graph_captured_on_device_1_replays_inputs_of_device_0(path):
    rng = np.random.default_rng(6)
    a, b, c = random_inputs(rng, (513,))
    with aotirt.CudaHandle(path, device=1) as h1:
        with h1.capture([aotirt.asarray(x, device=0) for x in (a, b, c)]) as graph:
            assert_add_mul_close(graph.replay([aotirt.asarray(x, device=0) for x in (a, b, c)])[0].numpy(), a, b, c)
            a2, b2, c2 = random_inputs(rng, (513,))
            (out,) = graph.replay([aotirt.asarray(a2, device=0), aotirt.asarray(b2, device=1),
                                   aotirt.asarray(c2, device=0)])
            assert out.device == "cuda:1"
            assert_add_mul_close(out.numpy(), a2, b2, c2)


def test_a_loop_on_device_1_takes_an_input_of_device_0(path):
    ones = np.ones(256, np.float32)
    with aotirt.CudaHandle(path, device=1) as h1:
        x = aotirt.asarray(ones, device=1)
        half = aotirt.asarray(np.full(256, 0.5, np.float32), device=0)   # read at every step, moved once
        # out = x * 0.5 + 0.5 is fed back as x: from x = 1 it stays 1 at every step.
        (stack,), (last,) = h1.loop([x, half, half], 4, feedback=[(0, 0)], collect=[0])
        assert last.device == "cuda:1" and stack.device == "cuda:1"
        np.testing.assert_allclose(stack.numpy(), np.ones((4, 256), np.float32))


def test_one_thread_per_gpu_runs_concurrently_and_correctly(path):
    errors = []

    def worker(device):
        try:
            set_current_device(device)      # as a thread of a server would, once
            rng = np.random.default_rng(device)
            a, b, c = random_inputs(rng, (1 << 16,))
            with aotirt.CudaHandle(path, device=device) as h:
                inputs = [aotirt.asarray(x, device=device) for x in (a, b, c)]
                for i in range(300):
                    (out,) = h.run(inputs)
                    if i % 100 == 99:
                        assert_add_mul_close(out.numpy(), a, b, c)
                assert current_device() == device
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(d,)) for d in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a worker hung"
    assert errors == []


def test_the_current_device_is_restored_after_calls_and_errors(path):
    rng = np.random.default_rng(7)
    a, b, c = random_inputs(rng, (100,))
    set_current_device(1)
    with aotirt.CudaHandle(path, device=0) as h0:
        assert current_device() == 1
        (y,) = h0.run([a, b, c])
        assert current_device() == 1
        with pytest.raises(aotirt.AotiError, match="has shape"):
            h0.run([a, b[:5], c])            # fails inside the run, after the device was switched
        assert current_device() == 1
        moved = y.to(1)
        assert current_device() == 1
        assert_add_mul_close(moved.to(0).numpy(), a, b, c)   # the copy back to the host, from cuda:0
        assert current_device() == 1
    set_current_device(0)
    with aotirt.CudaHandle(path, device=1) as h1:
        with pytest.raises(ValueError, match="input 0 is on cpu, the model runs on cuda:1"):
            h1.run([aotirt.asarray(a), b, c])
        assert current_device() == 0
        h1.run([a, b, c])[0].numpy()
        assert current_device() == 0
    assert primary_context_active(0) and primary_context_active(1)


def test_device_indices_past_the_machine_are_clear_errors(path):
    n = aotirt.device_count()
    with pytest.raises(ValueError, match=f"CUDA device {n} does not exist \\(this machine has {n}: cuda:0 to"):
        aotirt.CudaHandle(path, device=n)
    with pytest.raises(ValueError, match=f"CUDA device {n} does not exist"):
        aotirt.asarray(np.ones(2, np.float32), device=1).to(n)
