"""The cuBLAS layout plan (cuda_src/shims/matmul/gemm_layout.h), checked on the host.

The CUDA matmul shims hand strided views to cuBLAS as transposed or not,
with leading dimensions, copies and scratch decided by gemm_layout.h. That
decision is pure arithmetic, so tests/shims/gemm_layout_check.cpp exercises it
without a GPU: every combination of small sizes and layouts (transposed,
padded, strided, reversed, repeated, interleaved batches) runs through a
column-major GEMM that follows cuBLAS's contract, and is compared with the
product taken directly from the strides.
"""

import os
import subprocess

from support.helpers import REPO


def test_every_layout_maps_onto_a_column_major_gemm(tmp_path):
    exe = str(tmp_path / "gemm_layout_check")
    subprocess.run(["g++", "-std=c++17", "-O2", "-Wall", "-I", os.path.join(REPO, "cuda_src"),
                    os.path.join(REPO, "tests", "shims", "gemm_layout_check.cpp"), "-o", exe], check=True)
    proc = subprocess.run([exe], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith(" 0 failures"), proc.stdout
