"""Which float32 attention problems CUTLASS's fused kernel takes, and where
it reads and writes them (cuda_src/shims/attention/sdpa_fmha_layout.h),
checked on the host: tests/shims/sdpa_fmha_layout_check.cpp compares the
kernel's address arithmetic with the problems' strides over thousands of
random layouts, and the cases it must leave to cuBLAS. The GPU suite
(test_attention_fmha_gpu.py) runs the kernel itself."""

import os
import subprocess

from support.helpers import REPO


def test_every_accepted_layout_is_addressed_as_its_strides_say(tmp_path):
    exe = str(tmp_path / "sdpa_fmha_layout_check")
    subprocess.run(["g++", "-std=c++17", "-O2", "-Wall", "-I", os.path.join(REPO, "cuda_src"), "-I",
                    os.path.join(REPO, "include"), os.path.join(REPO, "tests", "shims", "sdpa_fmha_layout_check.cpp"),
                    "-o", exe], check=True)
    proc = subprocess.run([exe], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith(" 0 failures"), proc.stdout
