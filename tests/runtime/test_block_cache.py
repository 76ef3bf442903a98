"""The books of a stream's cache of freed device blocks
(cuda_src/runtime/block_cache.h), checked on the host: blocks reused by
size, the last given first; a block over the cap refused; a full cache lets
its oldest blocks go to make room (so sizes that came once do not keep every
later allocation from it); all of it against a plain model of the policy."""

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


@pytest.mark.gpu
def test_a_full_cache_makes_room_for_the_size_in_use(counter):
    # Four 64 MiB blocks of a size that never comes again fill the shared
    # stream's cache (256 MiB); then a loop allocates and frees a 3 MiB
    # tensor. Only its first allocation reaches the pool, and its first free
    # lets one old block go to make room. (A cache that refused blocks once
    # full sent all 100 allocations and frees to the pool.)
    # `anchor` keeps the shared stream, and its cache, alive throughout, as a
    # loaded model does: the stream dies with its last user, and its cache
    # with it (without it, each tensor of the loop made and ended a stream).
    counts = count_pool_calls(counter, setup="""
        import aotirt
        anchor = aotirt.empty((1,), "float32", device=0)
        stale = [aotirt.empty((64 * 2**20 // 4,), "float32", device=0) for _ in range(4)]
        del stale
    """, body="""
        for _ in range(100):
            t = aotirt.empty((3 * 2**20 // 4,), "float32", device=0)
            del t
    """)
    assert counts == {"cudaMallocAsync": 1, "cudaFreeAsync": 1}, counts
