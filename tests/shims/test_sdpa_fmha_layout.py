"""Which float32 attention problems CUTLASS's fused kernel takes, and where
it reads and writes them (cuda_src/shims/attention/sdpa_fmha_layout.h),
checked on the host: tests/shims/sdpa_fmha_layout_check.cpp compares the
kernel's address arithmetic with the problems' strides over thousands of
random layouts, and the cases it must leave to cuBLAS. The GPU suite
(test_attention_fmha_gpu.py) runs the kernel itself."""


from support.helpers import run_host_check


def test_every_accepted_layout_is_addressed_as_its_strides_say(tmp_path):
    run_host_check(tmp_path, "sdpa_fmha_layout_check.cpp")
