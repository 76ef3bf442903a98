"""The index arithmetic of aotirt's strided copies (cuda_src/runtime/strided_index.h),
checked on the host: the divider that replaces the hardware's division, copy
shapes reduced to fewer dimensions without moving any element, copies
widened to words that write the same bytes, 32-bit offsets equal to 64-bit
ones, and the copies refused the 32-bit arithmetic."""

from support.helpers import run_host_check


def test_strided_index_arithmetic(tmp_path):
    run_host_check(tmp_path, "strided_index_check.cpp", includes=("cuda_src",), flags=("-Wall", "-Wextra", "-Werror"),
                   timeout=120)
