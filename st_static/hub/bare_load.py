"""Load a saved model as a user without st-static would: a bare ``SentenceTransformer`` in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from st_static.errors import StStaticError

# Runs in a fresh interpreter: any import of st_static fails, so the model must load with sentence-transformers
# alone. argv: model name or path, JSON file of texts, output .npy file. Prints the first module's class name.
BARE_LOAD_SCRIPT = """
import importlib.abc, json, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "st_static" or name.startswith("st_static."):
            raise ImportError("st_static is blocked: the model must load without it")
sys.meta_path.insert(0, Block())
import numpy as np
from sentence_transformers import SentenceTransformer
model = SentenceTransformer(sys.argv[1], device="cpu")
with open(sys.argv[2], encoding="utf-8") as handle:
    texts = json.load(handle)
np.save(sys.argv[3], model.encode(texts, show_progress_bar=False))
print(type(model[0]).__name__)
"""


class BareLoadError(StStaticError, RuntimeError):
    """A bare ``SentenceTransformer`` (without st-static) could not load or run the model."""


@dataclass(frozen=True)
class BareLoadResult:
    """What the bare load gave: the embeddings of the texts and the class of the first module."""

    embeddings: np.ndarray
    first_module: str


def bare_encode(
    model_name_or_path: str | os.PathLike[str],
    texts: Sequence[str],
    env: Mapping[str, str] | None = None,
    timeout: float = 600.0,
) -> BareLoadResult:
    """Encode ``texts`` with ``SentenceTransformer(model_name_or_path)`` in a subprocess that cannot import st_static.

    The subprocess is an isolated interpreter (``python -I``) started in an empty temporary folder, so modules in
    the current folder or on ``PYTHONPATH`` cannot shadow the installed packages.

    Args:
        model_name_or_path: A model folder or a Hub repo id (resolved by the subprocess).
        texts: The texts to encode.
        env: Environment overrides for the subprocess, on top of the current environment. ``HF_HUB_OFFLINE``
            defaults to ``"1"``: the check never downloads anything.
        timeout: Seconds before the subprocess is abandoned.

    Returns:
        The embeddings and the first module's class name.

    Raises:
        BareLoadError: If the subprocess fails, with the end of its error output.
    """
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    # The subprocess runs in its own folder: a local path is passed absolute, a repo id as it is.
    name = os.path.abspath(model_name_or_path) if os.path.exists(model_name_or_path) else str(model_name_or_path)
    with tempfile.TemporaryDirectory(prefix="st-static-bare-load-") as work:
        texts_path = Path(work) / "texts.json"
        output_path = Path(work) / "embeddings.npy"
        texts_path.write_text(json.dumps(list(texts), ensure_ascii=False), encoding="utf-8")
        # -I: isolated mode, so neither the current folder nor PYTHONPATH/PYTHON* variables or the user's site
        # folder can put modules ahead of the installed ones (a numpy.py in the current folder would run first
        # with plain -c); cwd: a folder holding only our two files.
        command = [sys.executable, "-I", "-c", BARE_LOAD_SCRIPT, name, str(texts_path), str(output_path)]
        try:
            result = subprocess.run(command, env=environment, cwd=work, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as error:
            raise BareLoadError(
                f"SentenceTransformer({str(model_name_or_path)!r}) took over {timeout:.0f} s."
            ) from error
        if result.returncode != 0 or not output_path.is_file():
            error_lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
            raise BareLoadError(
                f"SentenceTransformer({str(model_name_or_path)!r}) without st-static failed: "
                + (error_lines[-1] if error_lines else f"exit code {result.returncode}")
            )
        embeddings = np.load(output_path)
    lines = result.stdout.strip().splitlines()
    return BareLoadResult(embeddings=embeddings, first_module=lines[-1] if lines else "")
