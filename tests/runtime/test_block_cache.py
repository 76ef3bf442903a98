"""A stream's cache of device memory (cuda_src/runtime/block_cache.h).

On the host, its books: segments split by best fit and merged again, small
and large requests apart, whole free segments released over the cap (the
longest free first), all of it against a plain model of the policy. On the
GPU, what reaches the pool: nothing where freed memory fits the request,
and one free per segment let go over the cap."""

import pytest

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
