"""A stream's cache of device memory (cuda_src/runtime/block_cache.h).

On the host, its books: segments split by best fit and merged again, small
and large requests apart, whole free segments released over the cap (the
longest free first), all of it against a plain model of the policy. On the
GPU, what reaches the pool: nothing where freed memory fits the request,
and one free per segment let go over the cap. Which streams keep a cache:
aotirt's own, and an adopted stream once a handle opens on it (drained onto
it before its owner is told), not a conversion's wrapper nor
cudaStreamPerThread (cuda_src/runtime/stream.h, keep_cache)."""

import numpy as np
import pytest

import aotirt
from support.helpers import run_host_check
from support.waits import count_pool_calls, interposer_library


def test_block_cache_books(tmp_path):
    run_host_check(tmp_path, "block_cache_check.cpp", includes=("cuda_src",),
                   sources=("cuda_src/runtime/block_cache.cpp",), flags=("-Wall", "-Wextra", "-Werror"), timeout=120)


@pytest.fixture(scope="module")
def counter(tmp_path_factory):
    return interposer_library(str(tmp_path_factory.mktemp("interposer")))


def test_the_counter_sees_pool_calls(counter):
    # Positive control, runnable without a GPU: CUDA fails the call (no
    # device, or a null pointer), and it is counted all the same.
    counts = count_pool_calls(counter, setup="import aotirt", body="ctypes.CDLL(None).cudaFreeAsync(None, None)")
    assert counts == {"cudaMallocAsync": 0, "cudaFreeAsync": 1}


# `anchor` keeps the shared stream, and its cache, alive throughout, as a
# loaded model does: the stream dies with its last user, and its cache with
# it (without it, each tensor of a loop would make and end a stream).
ANCHORED = """
    import aotirt
    anchor = aotirt.empty((1,), "float32", device=0)
"""


@pytest.mark.gpu
def test_freed_memory_that_fits_serves_other_sizes(counter):
    # Four 64 MiB tensors, freed, leave their segments in the cache; a loop
    # of 3 MiB tensors is then served from them (split), and a 64 MiB one
    # again after it (merged back). Nothing reaches the pool. (The cache
    # before segments served a block only to a request of its exact size:
    # the loop's first allocation went to the pool.)
    counts = count_pool_calls(counter, setup=ANCHORED + """
    stale = [aotirt.empty((64 * 2**20 // 4,), "float32", device=0) for _ in range(4)]
    del stale
    """, body="""
    for _ in range(100):
        t = aotirt.empty((3 * 2**20 // 4,), "float32", device=0)
        del t
    whole = aotirt.empty((64 * 2**20 // 4,), "float32", device=0)
    """)
    assert counts == {"cudaMallocAsync": 0, "cudaFreeAsync": 0}, counts


@pytest.mark.gpu
def test_over_the_cap_whole_segments_go_back(counter):
    # Five 100 MiB tensors take five segments. Freed one by one, the third
    # free passes the 256 MiB cap (with the anchor's small segment's free
    # bytes), and it and the two after it each release the segment free
    # longest: three frees. Two 100 MiB tensors after that are served from
    # the two segments kept.
    counts = count_pool_calls(counter, setup=ANCHORED, body="""
    big = [aotirt.empty((100 * 2**20 // 4,), "float32", device=0) for _ in range(5)]
    while big:
        big.pop()
    again = [aotirt.empty((100 * 2**20 // 4,), "float32", device=0) for _ in range(2)]
    """)
    assert counts == {"cudaMallocAsync": 5, "cudaFreeAsync": 3}, counts


# A handle on a stream that aotirt adopts: a raw non-blocking stream made
# with cuda.bindings (the counter's process imports no torch), three runs
# to warm up, inputs on the handle's stream.
ADOPTED_HANDLE = """
    import aotirt, numpy as np
    from cuda.bindings import runtime
    err, raw = runtime.cudaStreamCreateWithFlags(runtime.cudaStreamNonBlocking)
    assert err == runtime.cudaError_t.cudaSuccess, err
    h = aotirt.CudaHandle(aotirt.models.path("add_mul", "cuda"), stream={stream})
    inputs = [aotirt.asarray(np.full(1024, v, np.float32), device=0, stream=h.stream) for v in (2.0, 3.0, 1.0)]
    for _ in range(3):
        out, = h.run(inputs)
        del out
"""

RUNS = """
    for _ in range(50):
        out, = h.run(inputs)
        del out
    assert float(aotirt.copy_to_host(h.run(inputs)[0])[0]) == 7.0
"""


@pytest.mark.gpu
def test_a_handle_on_an_adopted_stream_runs_from_a_cache(counter):
    # Before a handle made its adopted stream keep a cache, each run took its
    # output from the pool and freed it there: 50 and 50.
    counts = count_pool_calls(counter, setup=ADOPTED_HANDLE.format(stream="int(raw)"), body=RUNS)
    assert counts == {"cudaMallocAsync": 0, "cudaFreeAsync": 0}, counts


@pytest.mark.gpu
def test_a_handle_on_the_per_thread_stream_allocates_from_the_pool(counter):
    # cudaStreamPerThread is a different stream on each thread; a cache's
    # blocks are ordered on one. Every run's output comes from the pool and
    # goes back to it (the check's own run included).
    counts = count_pool_calls(counter, setup=ADOPTED_HANDLE.format(stream="2"), body=RUNS)
    assert counts["cudaMallocAsync"] == counts["cudaFreeAsync"] >= 50, counts


@pytest.mark.gpu
def test_an_adopted_streams_cache_is_freed_onto_it_before_its_owner_is_told(counter):
    # The owner (an object with __cuda_stream__) is released when aotirt's
    # last reference to the stream goes; by then the cache's one segment
    # (the inputs and outputs, 4 KiB each) must have been freed onto the
    # stream, which the owner may destroy as soon as it is told.
    setup = ADOPTED_HANDLE.format(stream="owner").replace("    h = aotirt", """    told = []
    class Owner:
        def __cuda_stream__(self):
            return (0, int(raw))
        def __del__(self):
            told.append(counter.waits_count(b"cudaFreeAsync"))
    owner = Owner()
    h = aotirt""")
    counts = count_pool_calls(counter, setup=setup, body="""
    import gc
    h.close()
    del owner  # now aotirt holds the only reference
    del h, inputs
    gc.collect()
    assert told == [1], told
    """)
    assert counts == {"cudaMallocAsync": 0, "cudaFreeAsync": 1}, counts


def pool_bytes_in_use():
    runtime = pytest.importorskip("cuda.bindings.runtime", reason="needs cuda-bindings")
    err, pool = runtime.cudaDeviceGetDefaultMemPool(0)
    assert err == runtime.cudaError_t.cudaSuccess, err
    err, used = runtime.cudaMemPoolGetAttribute(pool, runtime.cudaMemPoolAttr.cudaMemPoolAttrUsedMemCurrent)
    assert err == runtime.cudaError_t.cudaSuccess, err
    return int(used)


@pytest.mark.gpu
def test_a_conversion_on_an_adopted_stream_takes_only_its_own_size():
    # Each conversion given a stream object wraps it anew, and the wrapper
    # lives with the tensor. A cache there would take a 2 MiB segment for
    # each 1 KiB tensor: 16 MiB for these eight.
    runtime = pytest.importorskip("cuda.bindings.runtime", reason="needs cuda-bindings")
    err, raw = runtime.cudaStreamCreateWithFlags(runtime.cudaStreamNonBlocking)
    assert err == runtime.cudaError_t.cudaSuccess, err
    kept = []
    try:
        anchor = aotirt.empty((1,), "float32", device=0)  # CUDA and the pool set up first
        before = pool_bytes_in_use()
        kept += [aotirt.asarray(np.full(256, i, np.float32), device=0, stream=int(raw)) for i in range(8)]
        grown = pool_bytes_in_use() - before
        assert grown < 4 * 2**20, f"{grown} bytes for eight 1 KiB tensors"
        assert [float(aotirt.copy_to_host(t)[0]) for t in kept] == list(range(8))
        del anchor
    finally:
        kept.clear()  # their frees are queued on the stream before it goes, even after a failure
        (err,) = runtime.cudaStreamDestroy(raw)   # queued work finishes first; no host wait
        assert err == runtime.cudaError_t.cudaSuccess, err
