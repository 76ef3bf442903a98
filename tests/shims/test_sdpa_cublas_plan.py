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


from support.helpers import run_host_check


def test_every_layout_maps_onto_batched_column_major_gemms(tmp_path):
    run_host_check(tmp_path, "sdpa_cublas_plan_check.cpp")
