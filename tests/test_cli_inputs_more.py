"""Bad input to ``st-static embed``, ``info``, ``push`` and ``card``: one ``error:`` line naming the argument or
option, before any work and with the folder unchanged, or a defined result; never a traceback or a silent fallback."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import st_static
from st_static.cli import app
from st_static.collections.folder import EmbeddingsFolder
from st_static.errors import StStaticError
from st_static.hub import push as hub_module
from st_static.hub.bare_load import BareLoadResult
from st_static.hub.push import RepoIdError, check_repo_id
from st_static.model.save_load import load_model, save_model
from st_static.model_card import EVALUATION_FILE_NAME, write_model_card

TOKEN = "hf_fake_token_for_tests"
EVALUATION = {"model": "m", "results": {"stsb-en-test": {"metric": "spearman", "score": 71.5}}, "versions": {}}
runner = CliRunner()


@pytest.fixture
def model_folder(described_model, tmp_path) -> Path:
    """A saved static model with an evaluation.json and a card generated from both (what push accepts)."""
    folder = save_model(described_model, tmp_path / "model")
    (folder / EVALUATION_FILE_NAME).write_text(json.dumps(EVALUATION), encoding="utf-8")
    write_model_card(load_model(folder), folder)
    return folder


@pytest.fixture
def no_upload(monkeypatch) -> list[str]:
    """The bare-load check run in this process, and any call to the Hub refused; returns what the checks loaded."""
    loaded: list[str] = []

    def in_process_bare_encode(folder, texts, env=None, timeout=600.0):
        loaded.append(str(folder))
        return BareLoadResult(embeddings=load_model(folder).encode(list(texts)), first_module="Static")

    def no_hub(*args, **kwargs):
        raise AssertionError("the Hub was called")

    monkeypatch.setattr(hub_module, "bare_encode", in_process_bare_encode)
    monkeypatch.setattr(hub_module.HfApi, "create_repo", no_hub)
    monkeypatch.setattr(hub_module.HfApi, "upload_folder", no_hub)
    return loaded


def assert_one_error_line(result, *fragments: str) -> str:
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    assert all(fragment in lines[0] for fragment in fragments), result.output
    return lines[0]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


# ------------------------------------------------------------------------------------------------ push
@pytest.mark.parametrize("repo_id", ["org/na me", "org/name.git", "../model", "org/-name", "org/a--b", "org/é"])
def test_push_refuses_a_repo_id_the_hub_refuses_before_any_check(model_folder, no_upload, repo_id):
    result = runner.invoke(app, ["push", str(model_folder), repo_id, "--token", TOKEN])
    assert_one_error_line(result, "org/name", repr(repo_id))
    assert no_upload == []  # refused before the checks, not by the Hub after them


@pytest.mark.parametrize("repo_id", ["org/name", "Org-1/my_model.v2", "a/b"])
def test_repo_ids_the_hub_takes_pass(repo_id):
    assert check_repo_id(repo_id) == repo_id


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        (["--token", ""], "--token is empty"),
        (["--token", TOKEN, "--revision", ""], "--revision '' is not a branch name"),
        (["--token", TOKEN, "--revision", "my branch"], "--revision 'my branch' is not a branch name"),
        (["--token", TOKEN, "--revision", "v1..2"], "is not a branch name"),
    ],
)
def test_push_refuses_an_empty_token_or_a_bad_branch_before_any_check(model_folder, no_upload, arguments, fragment):
    result = runner.invoke(app, ["push", str(model_folder), "org/name", *arguments])
    assert result.exit_code == 1 and fragment in result.output, result.output
    assert "Traceback" not in result.output and no_upload == []


def test_push_names_a_card_that_is_not_utf8(model_folder, no_upload):
    readme = model_folder / "README.md"
    readme.write_bytes(b"\xff\xfe" + readme.read_bytes())
    result = runner.invoke(app, ["push", str(model_folder), "org/name", "--token", TOKEN])
    assert result.exit_code == 1, result.output
    assert "README.md (the model card) is not UTF-8 text" in result.output
    assert f"st-static card {model_folder}" in result.output


# ------------------------------------------------------------------------------------------------ card
@pytest.mark.parametrize("model_id", ['org/x"y', "my org/model", "", "model"])
def test_card_refuses_a_model_id_that_is_not_a_repo_id(model_folder, model_id):
    before = snapshot(model_folder)
    result = runner.invoke(app, ["card", str(model_folder), "--model-id", model_id])
    assert_one_error_line(result, "--model-id", repr(model_id))
    assert snapshot(model_folder) == before


def test_check_repo_id_errors_are_value_errors_and_project_errors():
    with pytest.raises(ValueError, match="--model-id"):
        check_repo_id("a b/c", "--model-id")
    assert issubclass(RepoIdError, StStaticError)


def test_card_with_an_unreadable_evaluation_records_no_speed(model_folder, tmp_path):
    (model_folder / EVALUATION_FILE_NAME).write_text('{"results": 5}', encoding="utf-8")
    corpus = tmp_path / "speed.txt"
    corpus.write_text("the cat sat\nhello world\n", encoding="utf-8")
    before = snapshot(model_folder)
    result = runner.invoke(app, ["card", str(model_folder), "--speed-corpus", str(corpus), "--speed-sentences", "2"])
    assert_one_error_line(result, "evaluation.json")
    assert snapshot(model_folder) == before  # the speed was not measured, nor recorded in st_static_config.json


def test_card_regenerates_a_card_that_is_not_utf8_keeping_its_model_id(model_folder):
    (model_folder / "README.md").write_bytes(b'\xff\xfe old card: SentenceTransformer("org/kept")\n')
    result = runner.invoke(app, ["card", str(model_folder)])
    assert result.exit_code == 0, result.output
    card = (model_folder / "README.md").read_text(encoding="utf-8")
    assert 'SentenceTransformer("org/kept")' in card and "old card" not in card


def test_card_refuses_a_readme_that_is_a_folder_before_any_work(model_folder, tmp_path):
    (model_folder / "README.md").unlink()
    (model_folder / "README.md").mkdir()
    corpus = tmp_path / "speed.txt"
    corpus.write_text("the cat sat\n", encoding="utf-8")
    config = (model_folder / "st_static_config.json").read_bytes()
    result = runner.invoke(app, ["card", str(model_folder), "--speed-corpus", str(corpus)])
    assert_one_error_line(result, f"{model_folder / 'README.md'} is a folder")
    assert (model_folder / "st_static_config.json").read_bytes() == config


def test_card_refuses_a_hub_id_instead_of_writing_its_card_into_a_new_local_folder(model_folder, tmp_path, monkeypatch):
    from huggingface_hub import constants

    from .hf_cache import place_in_hf_cache

    cache = tmp_path / "hub"
    place_in_hf_cache(model_folder, "org/cached", cache)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    assert_one_error_line(runner.invoke(app, ["card", "org/cached"]), "org/cached: no such model folder")
    assert not (tmp_path / "org").exists()


# ------------------------------------------------------------------------------------------------ embed, info
def test_embed_reads_the_column_named_by_an_empty_column_option(word_model, tmp_path):
    model = save_model(word_model, tmp_path / "model")
    table = tmp_path / "rows.csv"
    table.write_text(",text\nthe cat,hello world\nsat on the mat,token\n", encoding="utf-8")  # pandas' index column
    out = tmp_path / "out"
    result = runner.invoke(app, ["embed", str(model), str(table), "--column", "", "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    _, vectors = EmbeddingsFolder(out).load()
    np.testing.assert_array_equal(vectors, st_static.encode(word_model, ["the cat", "sat on the mat"]))
    table.write_text("text\nthe cat\n", encoding="utf-8")
    result = runner.invoke(app, ["embed", str(model), str(table), "--column", "", "-o", str(tmp_path / "o2"), "-q"])
    assert_one_error_line(result, "no column ''", "--column")


def test_embed_refuses_an_address_without_the_ray_engine(word_model, tmp_path, monkeypatch):
    import st_static.collections.job as job

    model = save_model(word_model, tmp_path / "model")
    (tmp_path / "texts.txt").write_text("the cat\n", encoding="utf-8")
    monkeypatch.setattr(job, "load_collection_model", lambda *a, **k: pytest.fail("the model was loaded"))
    arguments = ["embed", str(model), str(tmp_path / "texts.txt"), "-o", str(tmp_path / "out")]
    result = runner.invoke(app, [*arguments, "--address", "ray://head:10001"])
    assert_one_error_line(result, "--address", "--engine ray")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["embed", "info"])
@pytest.mark.parametrize("model", ["", " "])
def test_an_empty_model_argument_is_named(tmp_path, monkeypatch, command, model):
    monkeypatch.chdir(tmp_path)  # an empty name is not read as the current folder
    (tmp_path / "texts.txt").write_text("the cat\n", encoding="utf-8")
    arguments = [command, model, *(["texts.txt", "-o", "out"] if command == "embed" else [])]
    assert_one_error_line(runner.invoke(app, arguments), "MODEL is empty")
    assert not (tmp_path / "out").exists()


def test_embed_refuses_an_input_named_twice_under_any_spelling(word_model, tmp_path):
    model = save_model(word_model, tmp_path / "model")
    texts = tmp_path / "a.txt"
    texts.write_text("the cat\n", encoding="utf-8")
    (tmp_path / "link.txt").symlink_to(texts)
    out = tmp_path / "out"
    for inputs, fragment in (
        ([str(texts), str(texts)], f"{texts} is given twice:"),
        ([str(tmp_path / "*.txt")], "is given twice (also as"),  # the glob matches the file and its link
    ):
        result = runner.invoke(app, ["embed", str(model), *inputs, "-o", str(out), "-q"])
        assert_one_error_line(result, fragment, "name each input once")
        assert not out.exists()
