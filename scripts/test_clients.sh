#!/usr/bin/env bash
# The client tests (tests/test_clients.py: LangChain, Chroma, Haystack, LlamaIndex, SetFit, BERTopic) in their own
# .venv-clients: the clients extra pins huggingface-hub<2 (langchain-huggingface), which .venv's dev install must not
# get. st-static, the clients and pytest only (the tests need nothing from dev). A fresh install of dev and the
# clients together took 24 min of wall time on the busy 2-core machine (2 min of CPU), mostly pip's resolver; with
# scripts/clients-constraints.txt (the versions the client tests passed with, pip freeze of that venv) the install
# of st-static, the clients and pytest took 1:02 into a fresh venv. Refresh the file when a client needs a newer
# release: pip freeze of a venv where tests/test_clients.py passes. Its sentence-transformers pin is also what
# scripts/setup.sh installs in .venv (the same version in both venvs); a pip install --dry-run with the file
# resolves sentence-transformers 6.3.0 with every other pin unchanged (no client pins it).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv-clients/bin/python ]; then
    "$PYTHON" -m venv .venv-clients
    .venv-clients/bin/python -m pip install -q --upgrade pip
    .venv-clients/bin/python -m pip install -q "torch==2.13.0"
fi
.venv-clients/bin/python -m pip install -q -c scripts/clients-constraints.txt -e ".[clients]" "pytest>=8" "torch==2.13.0"
.venv-clients/bin/python -m pytest -q tests/test_clients.py
