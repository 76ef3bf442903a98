#!/usr/bin/env bash
# Puts the build-time headers that come from PyPI into .deps/ (ignored by
# git), for a GPU runner without network that gets the working tree copied
# over (the device tool: carry [".deps"]): cudnn-frontend's headers, and
# CUTLASS's headers with its fused attention kernel. scripts/gpu-check.sh
# points setup.py at them when the AOTIRT_* variables are not set.
#
#   scripts/carry-deps.sh          # needs pip and the network, once
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PY" -m pip download --quiet --no-deps -d "$work" nvidia-cudnn-frontend nvidia-cutlass
rm -rf .deps/cudnn_frontend .deps/cutlass
mkdir -p .deps/cudnn_frontend .deps/cutlass
( cd "$work" && "$PY" -m zipfile -e nvidia_cudnn_frontend-*.whl frontend && "$PY" -m zipfile -e nvidia_cutlass-*.whl cutlass )
cp -r "$work"/frontend/include .deps/cudnn_frontend/include
cp -r "$work"/cutlass/cutlass_library/source/include .deps/cutlass/include
cp -r "$work"/cutlass/cutlass_library/source/examples/41_fused_multi_head_attention .deps/cutlass/fmha
du -sh .deps/*
