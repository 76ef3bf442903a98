"""Which convolutions the cuDNN tuning's alternatives take, and the views
they run the same convolution on (cuda_src/shims/convolution/conv_view.h),
checked on the host: contiguous operands moved to channels-last, im2col's
windows (padded copy and strided gather, and the one-pass gather of
conv_windows.h) against a direct convolution, and what neither takes."""

from support.helpers import run_host_check


def test_alternative_views(tmp_path):
    run_host_check(tmp_path, "conv_view_check.cpp", includes=("cuda_src", "include"), flags=("-Wall", "-Wextra", "-Werror"),
                   timeout=120)
