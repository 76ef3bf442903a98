"""Which convolutions the cuDNN tuning's alternatives take, and the views
they run the same convolution on (cuda_src/shims/convolution/conv_view.h),
checked on the host: an RGB stem's channels padded to 16-byte rows (input and
weight; the output as it is), a 1-D front end's contiguous operands moved to
channels-last, and what neither takes."""

from support.helpers import run_host_check


def test_alternative_views(tmp_path):
    run_host_check(tmp_path, "conv_view_check.cpp", includes=("cuda_src",), flags=("-Wall", "-Wextra", "-Werror"),
                   timeout=120)
