"""The random shims on CUDA: the same Philox values as the CPU shims for the
same seed and counters (uniform and integers bit for bit, normals to a few
ulp: Box-Muller's logf/cosf round differently on the host and the device),
the distributions' moments, a handle's own seed, no host wait, and new
numbers at every replay of a captured CUDA graph (the counter lives in
device memory and the draw's own kernel, inside the graph, advances it);
odd sizes, non-contiguous and misaligned outs (the scalar stores beside
the vector ones and the warp-wide ones of 32-byte blocks), and the counter advancing by exactly what each draw used.
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


def test_large_int64_draws_cover_every_block_once():
    # Four int64 values a block go out a warp at a time through shared
    # memory (random_cuda.cu's staged stores), over several turns of the
    # grid-stride loop, with a last warp of partial blocks.
    gpu, cpu = both("randint_low", [(1 << 24) + 37], "int64", 0, 128256)
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


ODD_SIZES = [1, 2, 3, 5, 6, 7, 255, 257, 1023, 4097, 262147]
INTEGER_DTYPES = [("int64", -5, 7), ("int64", 0, 2**40 + 3), ("int32", -1000, 1000), ("int16", -7, 300),
                  ("int8", -128, 128), ("uint8", 0, 256), ("bool", 0, 2), ("float64", -3, 2**35),
                  ("float64", -3, 3), ("float32", -3, 3), ("float16", 0, 2048)]


@pytest.mark.parametrize("n", ODD_SIZES)
def test_sizes_not_a_multiple_of_a_philox_block_match_the_cpu(n):
    # The last block's values go through the scalar tail; the rest through
    # the vector stores (each block's values at once).
    for dtype in FLOATS:
        gpu, cpu = both("rand", [n], dtype)
        np.testing.assert_array_equal(gpu, cpu, err_msg=f"rand {dtype} [{n}]")
        gpu, cpu = both("randn", [n], dtype)
        tol = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 2e-2}[dtype]
        np.testing.assert_allclose(gpu, cpu, rtol=tol, atol=tol, err_msg=f"randn {dtype} [{n}]")
    for dtype, low, high in INTEGER_DTYPES:
        gpu, cpu = both("randint_low", [n], dtype, low, high)
        np.testing.assert_array_equal(gpu, cpu, err_msg=f"randint {dtype} [{low}, {high}) [{n}]")


@pytest.mark.parametrize("n", [1, 3, 5, 7, 8, 33, 1001])
@pytest.mark.parametrize("offset", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype,low,high", INTEGER_DTYPES)
def test_randint_low_out_into_a_view_at_an_offset(dtype, low, high, offset, n):
    # A contiguous out whose data pointer is not aligned to a block's vector
    # store (offset 1: never for 2-byte and wider elements; int64's 16-byte
    # stores are aligned again at offset 2, int32's at 4) takes the scalar
    # stores; the elements beside the view stay as they were.
    seed(9)
    want = read(draw("randint_low", [n], dtype, "cpu", low, high))
    sentinel = 1 if dtype == "bool" else 99
    out, _ = view(np.full(n + 8, sentinel), (n,), (1,), offset, device=DEV, dtype=dtype)
    seed(9)
    assert fill_out(out, low, high, [n], DEV) == 0, last_error()
    np.testing.assert_array_equal(read(out), want)
    whole = out.keep.numpy()
    assert (whole[:offset] == sentinel).all() and (whole[offset + n:] == sentinel).all(), whole


@pytest.mark.parametrize("dtype,low,high", INTEGER_DTYPES)
@pytest.mark.parametrize("shape,strides,offset", [((5, 7), (1, 5), 0), ((3, 5, 3), (30, 1, 10), 1),
                                                  ((64, 33), (40, 1), 3)])
def test_randint_low_out_into_non_contiguous_outs(dtype, low, high, shape, strides, offset):
    seed(12)
    want = read(draw("randint_low", list(shape), dtype, "cpu", low, high))
    span = offset + sum((size - 1) * stride for size, stride in zip(shape, strides)) + 1
    out, _ = view(np.zeros(span), shape, strides, offset, device=DEV, dtype=dtype)
    seed(12)
    assert fill_out(out, low, high, list(shape), DEV) == 0, last_error()
    np.testing.assert_array_equal(read(out), want)


def test_a_run_of_draws_advances_the_counter_as_the_cpu_does():
    # Each kernel advances the device counter by the blocks it used (its
    # last block to finish writes it): a mixed run of draws, odd sizes,
    # several grids of blocks and single blocks, is the CPU's run of the
    # same draws, and none repeats another's numbers.
    calls = [("rand", [1001], "float32", None, None), ("randint_low", [37], "int64", 0, 128256),
             ("randn", [5], "float64", None, None), ("rand", [1 << 22], "float32", None, None),
             ("randint_low", [3], "int64", 0, 2**63 - 1), ("randn", [4096, 33], "float32", None, None),
             ("rand", [7], "float16", None, None), ("randint_low", [8, 128256], "int64", 0, 128256),
             ("rand", [1], "bfloat16", None, None)] * 3
    got = {}
    for device in (DEV, "cpu"):
        seed(77)
        got[device] = [read(draw(op, size, dtype, device, low, high)) for op, size, dtype, low, high in calls]
    for k, (op, size, dtype, _, _) in enumerate(calls):
        if op == "randn":
            np.testing.assert_allclose(got[DEV][k], got["cpu"][k], rtol=1e-5, atol=1e-5, err_msg=f"call {k}")
        else:
            np.testing.assert_array_equal(got[DEV][k], got["cpu"][k], err_msg=f"call {k}: {op} {size} {dtype}")
    firsts = got[DEV][0], got[DEV][len(calls) // 3]
    assert not np.array_equal(*firsts)


def test_a_seed_restarts_the_device_counter_mid_run():
    seed(31)
    first = [read(draw("rand", [3001], "float32", DEV)) for _ in range(3)]
    seed(31)
    again = [read(draw("rand", [3001], "float32", DEV)) for _ in range(3)]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], first[1]) and not np.array_equal(first[1], first[2])


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


def test_graph_replays_advance_the_counter_as_eager_runs_do():
    # The kernel inside the graph advances the device counter by exactly
    # what an eager run's kernels do: replays after a seed are the eager
    # runs after the same seed, one for one.
    x = np.zeros((4, 100), np.float32)
    with aotirt.CudaHandle(RANDOM_OPS["cuda"], 0) as handle:
        handle.seed(6)
        eager = [[t.numpy() for t in handle.run([x])] for _ in range(3)]
        with handle.capture([x], warmup=1) as graph:
            handle.seed(6)
            replays = [[t.numpy() for t in graph.replay([x])] for _ in range(3)]
    for k, (got, want) in enumerate(zip(replays, eager)):
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b, err_msg=f"replay {k}")
    assert not np.array_equal(eager[0][0], eager[1][0])


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
