"""Knob types between cuDNN's plan names and cudnn-frontend's calls
(cuda_src/shims/libs/cudnn_knobs.h), on the host, against the real cuDNN and
cudnn-frontend headers: a plan name's knobs are the backend's types, and the
wide tuning mode builds configurations from them through the frontend's
types (on the H200 it built none until they were converted). The headers
are found by setup.py's own find_cudnn, as the build finds them."""

import importlib.util
import os
import re

import pytest

from support.helpers import REPO, run_host_check


def build_flags():
    """The compiler flags the build gives the cuDNN shims (setup.py's
    find_cudnn, and the toolkit's include folder), or a reason to skip."""
    spec = importlib.util.spec_from_file_location("aotirt_setup", os.path.join(REPO, "setup.py"))
    setup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup)   # imported, setup.py defines its finders and builds nothing
    try:
        cuda_home = setup.find_cuda_home()
    except SystemExit as e:          # its message: no toolkit
        return None, str(e)
    includes, defines = setup.find_cudnn(cuda_home)
    if not includes:
        return None, "built without cuDNN: its headers are not installed (setup.py said why above)"
    folders = includes[1::2]         # ["-isystem", folder, ...]
    frontend = next(d for d in folders if os.path.isfile(os.path.join(d, "cudnn_frontend_version.h")))
    text = open(os.path.join(frontend, "cudnn_frontend_version.h")).read()
    version = tuple(int(re.search(rf"CUDNN_FRONTEND_{p}_VERSION\s+(\d+)", text).group(1)) for p in ("MAJOR", "MINOR"))
    if version < (1, 32):
        return None, f"cudnn-frontend {version} has no knob converters (1.32 and newer: the wide mode's own bound)"
    return [*includes, "-isystem", os.path.join(cuda_home, "include"), *(f"-D{d}" for d in defines)], None


def test_plan_name_knobs_cross_to_the_frontend_and_back(tmp_path):
    flags, why = build_flags()
    if why:
        pytest.skip(why)
    run_host_check(tmp_path, "cudnn_knobs_check.cpp", includes=("cuda_src",), flags=("-Wall", *flags),
                   sources=(os.path.join("cuda_src", "shims", "libs", "cudnn_tuning.cpp"),), libs=("-ldl",))
