"""Knob types between cuDNN's plan names and cudnn-frontend's calls
(cuda_src/shims/libs/cudnn_knobs.h), on the host, against the real cuDNN and
cudnn-frontend headers: a plan name's knobs are the backend's types, and the
wide tuning mode builds configurations from them through the frontend's
types (on the H200 it built none until they were converted). The build
finds these headers the same way (setup.py's find_cudnn)."""

import os
import re
import sys
import sysconfig

import pytest

from support.helpers import run_host_check


def _site_dirs(relative):
    sites = [sysconfig.get_paths()[k] for k in ("purelib", "platlib")] + [p for p in sys.path if p]
    return [os.path.join(site, relative) for site in dict.fromkeys(sites)]


def _find(name, env, relative, fallbacks=()):
    dirs = [os.environ[env]] if os.environ.get(env) else _site_dirs(relative) + list(fallbacks)
    return next((d for d in dirs if os.path.isfile(os.path.join(d, name))), None)


def header_flags():
    """-isystem flags for cudnn.h (with the toolkit's cuda_runtime_api.h it
    includes), cudnn_frontend.h and the nvrtc.h the frontend includes, or a
    reason to skip."""
    cuda_include = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "include")
    if not os.path.isfile(os.path.join(cuda_include, "cuda_runtime_api.h")):
        return None, f"the CUDA toolkit's headers are not in {cuda_include} (set CUDA_HOME)"
    system = [cuda_include, "/usr/include", "/usr/local/include"]
    cudnn = _find("cudnn.h", "AOTIRT_CUDNN_INCLUDE", os.path.join("nvidia", "cudnn", "include"), system)
    frontend = _find("cudnn_frontend.h", "AOTIRT_CUDNN_FRONTEND_INCLUDE", "include", system)
    nvrtc = _find("nvrtc.h", "AOTIRT_NVRTC_INCLUDE", os.path.join("nvidia", "cu13", "include"), [cuda_include])
    if not cudnn or not frontend:
        return None, "cuDNN's or cudnn-frontend's headers are not installed (pip install aotirt[cudnn] builds with them)"
    text = open(os.path.join(frontend, "cudnn_frontend_version.h")).read()
    version = tuple(int(re.search(rf"CUDNN_FRONTEND_{p}_VERSION\s+(\d+)", text).group(1)) for p in ("MAJOR", "MINOR"))
    if version < (1, 32):
        return None, f"cudnn-frontend {version} has no knob converters (1.32 and newer: the wide mode's own bound)"
    dirs = dict.fromkeys(d for d in (cudnn, frontend, nvrtc, cuda_include) if d)
    return [f for d in dirs for f in ("-isystem", d)], None


def test_plan_name_knobs_cross_to_the_frontend_and_back(tmp_path):
    flags, why = header_flags()
    if why:
        pytest.skip(why)
    run_host_check(tmp_path, "cudnn_knobs_check.cpp", includes=("cuda_src",),
                   flags=("-Wall", "-DAOTIRT_HAVE_CUDNN=1", "-DNV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING",
                          "-DCUDNN_FRONTEND_SKIP_JSON_LIB", *flags),
                   sources=(os.path.join("cuda_src", "shims", "libs", "cudnn_tuning.cpp"),), libs=("-ldl",))
