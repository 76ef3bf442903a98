"""The one rule at run time: a preloaded counter sees every host-blocking CUDA
call our code makes. After warm-up, a run loop and one copy back must show
exactly one cudaStreamSynchronize (the copy's) and nothing else."""

import pytest

from support.waits import count_waits, interposer_library


@pytest.fixture(scope="module")
def counter(tmp_path_factory):
    return interposer_library(str(tmp_path_factory.mktemp("interposer")))


def only(counts, **expected):
    """The counts with every function not named in `expected` at zero."""
    unexpected = {name: n for name, n in counts.items() if n and name not in expected}
    assert unexpected == {}, unexpected
    for name, n in expected.items():
        assert counts[name] == n, (name, counts)


def test_the_counter_sees_calls_through_the_process(counter):
    # Positive control, runnable without a GPU: a call resolved through the
    # process's symbol table (as libaotirt's and models' calls are) is
    # counted even when CUDA then fails it.
    counts = count_waits(counter, setup="import aotirt", body="ctypes.CDLL(None).cudaDeviceSynchronize()")
    only(counts, cudaDeviceSynchronize=1)


def test_cpu_runs_never_wait(counter):
    counts = count_waits(counter, setup="""
        import numpy as np, aotirt
        h = aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu"))
        x = aotirt.asarray(np.ones(256, np.float32))
        h.run([x, x, x])
    """, body="""
        for _ in range(1000):
            (y,) = h.run([x, x, x])
        y.numpy()
    """)
    only(counts)


@pytest.mark.gpu
def test_cuda_runs_wait_only_in_the_copy(counter):
    counts = count_waits(counter, setup="""
        import numpy as np, aotirt
        h = aotirt.CudaHandle(aotirt.models.path("add_mul", "cuda"))
        x = aotirt.asarray(np.ones(4096, np.float32), device=0)
        for _ in range(10):
            (y,) = h.run([x, x, x])
        y.numpy()
    """, body="""
        for _ in range(1000):
            (y,) = h.run([x, x, x])
        assert (y.numpy() == 2).all()
    """)
    only(counts, cudaStreamSynchronize=1)


@pytest.mark.gpu
def test_uploads_chains_and_closing_do_not_wait(counter):
    counts = count_waits(counter, setup="""
        import numpy as np, aotirt
        path = aotirt.models.path("add_mul", "cuda")
        a = np.full(1 << 16, 0.5, np.float32)
        warm = aotirt.CudaHandle(path)
        warm.run([a, a, a])[0].numpy()
    """, body="""
        first, second = aotirt.CudaHandle(path), aotirt.CudaHandle(path)
        (y,) = first.run([a, a, a])           # numpy inputs: uploads
        for _ in range(100):
            (y,) = second.run([y, a, a])
        first.close(); second.close()          # work still queued
        del first, second
        result = y.numpy()
    """)
    only(counts, cudaStreamSynchronize=1)


@pytest.mark.gpu
def test_the_pipeline_waits_once_per_decode(counter):
    counts = count_waits(counter, setup="""
        from aotirt.pipeline import GreedyDecoder, demo_frames
        frames = demo_frames()
        decoder = GreedyDecoder("cuda:0", "shared")
        decoder.decode(frames, 4)
    """, body="""
        tokens = decoder.decode(frames, 64)     # encoder + 64 steps + 64 gathers + one copy
        assert tokens.shape == (64,)
    """)
    only(counts, cudaStreamSynchronize=1)


@pytest.mark.gpu
def test_a_real_aoti_library_runs_without_host_waits(counter):
    # The AOTInductor library itself references cudaEventSynchronize,
    # cudaMemcpy and cudaMalloc; through RunSingleThreaded a steady-state run
    # must call none of them.
    from test_aoti_models import model_folder

    folder, _meta = model_folder("mlp", "cuda")
    counts = count_waits(counter, setup=f"""
        import numpy as np, aotirt
        handle = aotirt.load({folder + '/model.pt2'!r})
        x = aotirt.asarray(np.load({folder + '/input0.npy'!r}), device=0)
        for _ in range(5):
            (y,) = handle.run([x])
        y.numpy()
    """, body="""
        for _ in range(100):
            (y,) = handle.run([x])
        y.numpy()
    """)
    only(counts, cudaStreamSynchronize=1)
