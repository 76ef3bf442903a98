"""The random shims on CUDA: the same Philox values as the CPU shims for the
same seed and counters (uniform and integers bit for bit, normals to a few
ulp: Box-Muller's logf/cosf round differently on the host and the device),
the distributions' moments, a handle's own seed, no host wait, and new
numbers at every replay of a captured CUDA graph (the counter lives in
device memory and a kernel inside the graph advances it).
"""

import os

import numpy as np
import pytest

import aotirt
from support.random_shims import call, draw, fill_out, seed
from support.shims import dense, last_error, layout, read, view
from support.waits import count_waits, interposer_library

pytestmark = pytest.mark.gpu
HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
DEV = "cuda:0"
FLOATS = ["float32", "float64", "float16", "bfloat16"]
MODELS = os.path.join(os.path.dirname(aotirt.__file__), "models")
RANDOM_OPS = {d: os.path.join(MODELS, f"_random_ops_{d}.so") for d in ("cpu", "cuda")}


def both(op, size, dtype=None, low=None, high=None, value=11):
    seed(value)
    gpu = read(draw(op, size, dtype, DEV, low, high))
    seed(value)
    cpu = read(draw(op, size, dtype, "cpu", low, high))
    return gpu, cpu


@pytest.mark.parametrize("dtype", FLOATS)
def test_rand_is_the_cpu_shims_values(dtype):
    gpu, cpu = both("rand", [300, 70], dtype)
    np.testing.assert_array_equal(gpu, cpu)
    assert gpu.min() >= 0 and gpu.max() < 1 and abs(gpu.mean() - 0.5) < 0.01


@pytest.mark.parametrize("dtype", FLOATS)
def test_randn_is_the_cpu_shims_values_to_a_few_ulp(dtype):
    gpu, cpu = both("randn", [300, 70], dtype)
    tol = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 2e-2}[dtype]
    np.testing.assert_allclose(gpu, cpu, rtol=tol, atol=tol)
    assert abs(gpu.mean()) < 0.02 and abs(gpu.var() - 1) < 0.03


@pytest.mark.parametrize("dtype,low,high", [("int64", -5, 7), ("int64", 0, 2**63 - 1), ("int32", -1000, 1000),
                                            ("uint8", 0, 256), ("bool", 0, 2), ("float32", -3, 3)])
def test_randint_is_the_cpu_shims_values(dtype, low, high):
    gpu, cpu = both("randint_low", [1000, 33], dtype, low, high)
    np.testing.assert_array_equal(gpu, cpu)
    assert gpu.min() >= low and gpu.max() <= high - 1


def test_large_draws_cover_every_block_once():
    # More Philox blocks than one grid covers (a grid-stride loop): the
    # values match the CPU's in full, so none is skipped or written twice.
    gpu, cpu = both("rand", [1 << 26], "float32")
    np.testing.assert_array_equal(gpu, cpu)


def test_randint_low_out_into_a_strided_cuda_out():
    seed(8)
    want = read(draw("randint_low", [4, 6], "int64", "cpu", 0, 1000))
    out, _ = view(np.full(60, -1, np.int64), (4, 6), (1, 10), 2, device=DEV)
    seed(8)
    assert fill_out(out, 0, 1000, [4, 6], DEV) == 0, last_error()
    np.testing.assert_array_equal(read(out), want)
    assert layout(out)[1] == (1, 10)


def test_consecutive_cuda_draws_continue_the_counter():
    seed(3)
    first, second = read(draw("rand", [1000], "float32", DEV)), read(draw("rand", [1000], "float32", DEV))
    seed(3)
    both_at_once = read(draw("rand", [2000], "float32", "cpu"))
    np.testing.assert_array_equal(np.concatenate([first, second]), both_at_once)


def test_cuda_errors():
    status, handle = call("rand", [3], "int32", DEV)
    assert status != 0 and "floating dtypes only" in last_error()
    status, _ = call("rand", [3], None, DEV, device_type=0)
    assert status != 0 and "given to the CUDA shim" in last_error()
    cpu_out, _ = dense(np.zeros(3, np.int64))
    assert fill_out(cpu_out, 0, 5, [3], DEV) != 0 and "must be a CUDA tensor" in last_error()


def test_a_cuda_handle_draws_what_a_cpu_handle_draws_from_the_same_seed():
    x = np.zeros((5, 64), np.float32)
    with aotirt.CudaHandle(RANDOM_OPS["cuda"], 0) as gpu, aotirt.AotiHandle(RANDOM_OPS["cpu"]) as cpu:
        gpu.seed(21)
        cpu.seed(21)
        for _ in range(2):   # the second run continues both counters alike
            got = [t.numpy() for t in gpu.run([x])]
            want = [t.numpy() for t in cpu.run([x])]
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(got[2], want[2])
            np.testing.assert_array_equal(got[3], want[3])


def test_each_graph_replay_draws_new_numbers_and_a_seed_restarts_them():
    x = np.zeros((4, 100), np.float32)
    with aotirt.CudaHandle(RANDOM_OPS["cuda"], 0) as handle:
        handle.seed(5)
        eager = [t.numpy() for t in handle.run([x])]
        with handle.capture([x], warmup=1) as graph:
            first = [t.numpy() for t in graph.replay([x])]
            second = [t.numpy() for t in graph.replay([x])]
            for a, b in zip(first, second):
                assert not np.array_equal(a, b)
            for a, b in zip(first, eager):
                assert not np.array_equal(a, b)
            assert 0 <= first[0].min() and first[0].max() < 1 and -5 <= first[2].min() and first[2].max() <= 6
            # Seeding queues the new state on the handle's stream: the next
            # replay starts from counter 0, as the first eager run did.
            handle.seed(5)
            replayed = [t.numpy() for t in graph.replay([x])]
            for a, b in zip(replayed, eager):
                np.testing.assert_array_equal(a, b)


def test_auto_graphs_replays_draw_new_numbers():
    x = np.zeros((2, 50), np.float32)
    with aotirt.CudaHandle(RANDOM_OPS["cuda"], 0, graphs=True) as handle:
        runs = [handle.run([x])[0].numpy() for _ in range(6)]   # eager, eager, capture, replays
        assert handle.graph_stats["hits"] >= 2, handle.graph_stats
        assert len({r.tobytes() for r in runs}) == len(runs)


def test_draws_never_wait(tmp_path):
    counter = interposer_library(str(tmp_path))
    counts = count_waits(counter, setup=f"""
        import sys
        sys.path[:0] = [{HERE!r}, {TESTS!r}]
        import numpy as np
        import aotirt
        from support.random_shims import draw, seed
        from support.shims import read
        seed(1)
        read(draw("rand", [1000], "float32", "cuda:0"))
        handle = aotirt.CudaHandle({RANDOM_OPS["cuda"]!r}, 0)
        x = aotirt.asarray(np.zeros((4, 100), np.float32), device=0)
        handle.run([x])[0].numpy()
    """, body="""
        for _ in range(10):
            u = draw("rand", [1000], "float32", "cuda:0")
            n = draw("randn", [1000], "float16", "cuda:0")
            i = draw("randint_low", [1000], "int64", "cuda:0", -3, 3)
            outs = handle.run([x])
        handle.seed(4)
        outs = handle.run([x])
        outs[0].numpy()
    """)
    assert {name: n for name, n in counts.items() if n} == {"cudaStreamSynchronize": 1}, counts
