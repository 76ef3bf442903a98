"""The cuBLAS layout plan (cuda_src/shims/matmul/gemm_layout.h), checked on the host.

The CUDA matmul shims hand strided views to cuBLAS as transposed or not,
with leading dimensions, copies and scratch decided by gemm_layout.h. That
decision is pure arithmetic, so tests/shims/gemm_layout_check.cpp exercises it
without a GPU: every combination of small sizes and layouts (transposed,
padded, strided, reversed, repeated, interleaved batches) runs through a
column-major GEMM that follows cuBLAS's contract, and is compared with the
product taken directly from the strides.
"""


from support.helpers import run_host_check


def test_every_layout_maps_onto_a_column_major_gemm(tmp_path):
    run_host_check(tmp_path, "gemm_layout_check.cpp", includes=("cuda_src",))
