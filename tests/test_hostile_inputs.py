"""Hostile inputs (issue 31 item 6): each is refused with an st-static error naming the file, one ``error:`` line
from the command line, and before any teacher pass when it is an input of a build."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import st_static.extraction.stages as stages_module
from st_static import save_model
from st_static.cli import app
from st_static.errors import ModelFolderError
from st_static.model.save_load import load_model

from .teachers import make_tiny_teacher

runner = CliRunner()
DEEP_JSON = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def teacher(tmp_path_factory) -> Path:
    return make_tiny_teacher(tmp_path_factory.mktemp("teacher"))


@pytest.fixture
def folder(word_model, tmp_path) -> Path:
    return save_model(word_model, tmp_path / "model")


@pytest.fixture
def no_teacher_pass(monkeypatch) -> None:
    monkeypatch.setattr(stages_module, "load_teacher", lambda *a, **k: pytest.fail("the teacher was loaded"))
    monkeypatch.setattr(stages_module, "extract_word_vectors", lambda *a, **k: pytest.fail("the teacher ran"))


def assert_one_error_line(result, fragment: str) -> None:
    """Exit code 1, no traceback, and one ``error:`` line (last) holding ``fragment``; progress lines may precede it."""
    lines = result.output.strip().splitlines()
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert [line for line in lines if line.startswith("error:")] == lines[-1:], result.output
    assert fragment in lines[-1], result.output


def build_arguments(teacher: Path, corpus: Path, out: Path) -> list[str]:
    return ["build", "--teacher", str(teacher), "--corpus", str(corpus), "--out", str(out), "--dim", "8"]


# ------------------------------------------------------------------------------------------------ model folders
@pytest.mark.parametrize(
    ("file", "content", "message"),
    [
        ("tokenizer.json", DEEP_JSON, "tokenizer.json is corrupt (its JSON is nested too deeply to parse)"),
        ("st_static_config.json", DEEP_JSON, "st_static_config.json is corrupt (its JSON is nested too deeply"),
        ("st_static_config.json", '{"num_words": ' + "9" * 5000 + "}", "holds an integer of over 4,300 digits"),
        ("st_static_config.json", "{not json", "st_static_config.json is corrupt (Expecting property name"),
        ("modules.json", DEEP_JSON, "modules.json is corrupt (its JSON is nested too deeply"),
        ("modules.json", "[{", "modules.json is corrupt (Expecting property name"),
    ],
)
def test_json_python_cannot_parse_is_a_model_folder_error_naming_the_file(folder, file, content, message):
    (folder / file).write_text(content, encoding="utf-8")
    with pytest.raises(ModelFolderError, match=re.escape(message)):
        load_model(folder)


def test_info_on_a_deeply_nested_tokenizer_is_one_error_line(folder):
    (folder / "tokenizer.json").write_text(DEEP_JSON, encoding="utf-8")
    assert_one_error_line(runner.invoke(app, ["info", str(folder)]), "tokenizer.json is corrupt")


@pytest.mark.parametrize("kind", ["os.system", "some_pkg.Evil"])
def test_info_refuses_a_class_outside_sentence_transformers_as_load_model_does(folder, kind):
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    modules[1]["type"] = kind
    (folder / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    with pytest.raises(ModelFolderError, match=f"names the class '{kind}'"):
        load_model(folder)
    assert_one_error_line(
        runner.invoke(app, ["info", str(folder)]), f"modules.json: its entry 1 names the class '{kind}'"
    )


def test_a_module_path_outside_the_folder_is_refused(folder):
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    modules[1]["path"] = "../elsewhere"
    (folder / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    with pytest.raises(ModelFolderError, match="not a relative path inside the folder"):
        load_model(folder)
