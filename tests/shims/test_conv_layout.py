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

from support.helpers import run_host_check


def test_output_layouts_follow_torchs_rules(tmp_path):
    run_host_check(tmp_path, "conv_layout_check.cpp", includes=(os.path.join("cuda_src", "shims", "convolution"),),
                   flags=("-Wall", "-Wextra", "-Werror"), timeout=120)
