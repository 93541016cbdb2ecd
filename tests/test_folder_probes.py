"""Model folders whose files disagree with each other, or that hold JSON Python cannot parse, or that are not
there: ``load_model`` and ``st-static info`` refuse them with one ``ModelFolderError`` naming the file (issue 38)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from typer.testing import CliRunner

from st_static import StaticWordAverage, save_model
from st_static.cli import app
from st_static.errors import ModelFolderError
from st_static.model.save_load import load_model

from .conftest import WORDS, teacher_like_tokenizer
from .test_hostile_inputs import assert_one_error_line

runner = CliRunner()


def saved_model(folder: Path, seed: int = 0) -> Path:
    vectors = np.random.default_rng(seed).standard_normal((len(WORDS), 16)).astype(np.float32)
    module = StaticWordAverage.from_word_vectors(WORDS, vectors, teacher_tokenizer=teacher_like_tokenizer())
    return save_model(SentenceTransformer(modules=[module, Normalize()], device="cpu"), folder)


@pytest.fixture
def folder(tmp_path) -> Path:
    return saved_model(tmp_path / "model")


def edit_json(path: Path, edit) -> None:
    value = json.loads(path.read_text(encoding="utf-8"))
    edit(value)
    path.write_text(json.dumps(value), encoding="utf-8")


def assert_refused(folder: Path | str, message: str) -> None:
    """``load_model`` raises a ``ModelFolderError`` holding ``message``; ``info`` prints it as one error line."""
    with pytest.raises(ModelFolderError, match=re.escape(message)):
        load_model(folder)
    assert_one_error_line(runner.invoke(app, ["info", str(folder)]), message)


# ------------------------------------------------------------------------------------------------ modules.json
def test_a_first_module_outside_the_folder_root_is_refused(folder, tmp_path):
    own = load_model(folder).encode(["the cat sat"])
    other = saved_model(tmp_path / "other", seed=1)
    shutil.copytree(other, folder / "sub", ignore=shutil.ignore_patterns("modules.json", "1_Normalize"))
    edit_json(folder / "modules.json", lambda modules: modules[0].update(path="sub"))
    # The premise: a bare load reads the other table, while st-static and model2vec read the folder's own.
    bare = SentenceTransformer(str(folder), device="cpu").encode(["the cat sat"])
    np.testing.assert_allclose(bare, load_model(other).encode(["the cat sat"]), atol=1e-6)
    assert not np.allclose(bare, own, atol=1e-3)
    assert_refused(folder, "modules.json: its entry 0 has the path 'sub', not the folder itself")


def test_a_first_module_path_that_names_the_root_loads(folder):
    edit_json(folder / "modules.json", lambda modules: modules[0].update(path="./"))
    assert load_model(folder).encode("the cat").shape == (16,)
