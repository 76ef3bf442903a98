"""The cuBLAS plan of float32 attention (cuda_src/shims/attention/sdpa_cublas_plan.h),
checked on the host.

Which operand goes to cuBLAS transposed, with which leading dimension, as a
strided batch or through pointer arrays, with the heads of a group folded
into the rows or not, chunk by chunk: pure arithmetic, so
tests/shims/sdpa_cublas_plan_check.cpp runs thousands of random problems (layouts
Inductor hands over, grouped-query heads, causal masks, chunks) through an
emulated cuBLAS and an exact softmax without a GPU, checks every access
against its buffer and compares with attention taken directly from the
strides. The GPU suite (test_attention_cublas_gpu.py) runs the real thing.
"""

import os
import subprocess

from support.helpers import REPO


def test_every_layout_maps_onto_batched_column_major_gemms(tmp_path):
    exe = str(tmp_path / "sdpa_cublas_plan_check")
    subprocess.run(["g++", "-std=c++17", "-O2", "-Wall", "-I", os.path.join(REPO, "cuda_src"), "-I", os.path.join(REPO, "include"),
                    os.path.join(REPO, "tests", "shims", "sdpa_cublas_plan_check.cpp"), "-o", exe], check=True)
    proc = subprocess.run([exe], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith(" 0 failures"), proc.stdout
