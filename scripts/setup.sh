#!/usr/bin/env bash
# Create .venv with st-static and everything its tests and main job need, from the package registries only.
# torch comes first and pinned: 2.13.0 is the CPU wheel (any other version pulls several GB of CUDA).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[dev]"
