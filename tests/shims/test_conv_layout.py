"""The convolution output layout (cuda_src/shims/convolution/conv_layout.h),
checked on the host.

Generated code indexes a convolution's output with the strides torch's fake
tensor had when the model was compiled, so the CPU and CUDA shims lay their
outputs out by torch's rules: meta_conv's memory format, then the format of
the backend torch would pick (cuDNN on CUDA, mkldnn/thnn on the CPU), 1-D
convolutions through 2-D views. tests/shims/conv_layout_check.cpp runs those rules
over 1-, 2- and 3-D, transposed, grouped, channels-last, float64, empty and
size-1 cases against the strides torch gives, and checks the shape checks'
messages, without a GPU.
"""

import os
import subprocess

from support.helpers import REPO


def test_output_layouts_follow_torchs_rules(tmp_path):
    exe = str(tmp_path / "conv_layout_check")
    subprocess.run(["g++", "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror",
                    "-I", os.path.join(REPO, "cuda_src", "shims", "convolution"),
                    os.path.join(REPO, "tests", "shims", "conv_layout_check.cpp"), "-o", exe], check=True)
    proc = subprocess.run([exe], check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith(" 0 failures"), proc.stdout
