"""``st-static push``: the checks before upload, and the Hub round trip against a local stand-in of the Hub."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import huggingface_hub
import numpy as np
import pytest
from typer.testing import CliRunner

from st_static.cli import app
from st_static.errors import StStaticError
from st_static.hub import push as hub_module
from st_static.hub.bare_load import BareLoadError, BareLoadResult, bare_encode
from st_static.hub.push import (
    FolderReport,
    HubUploadError,
    PushRefusedError,
    _check_staged,
    _staged_upload,
    push_folder,
)
from st_static.model.save_load import load_model, save_model
from st_static.model_card import EVALUATION_FILE_NAME, card_weights_sha256, file_sha256, write_model_card

from .conftest import REPO_ROOT
from .fake_hub import FakeHub
from .hf_cache import place_in_hf_cache

TOKEN = "hf_fake_token_for_tests"


def check_folder(folder: Path | str, repo_id: str | None = None) -> FolderReport:
    """The checks ``push_folder`` runs before uploading, without uploading."""
    with _staged_upload(Path(folder)) as (staged, plan):
        return _check_staged(Path(folder), staged, plan, repo_id)


EVALUATION = {"model": "m", "results": {"stsb-en-test": {"metric": "spearman", "score": 71.5}}, "versions": {}}
TEXTS = ["the cat sat on the mat", "Tokeniser!", "", "hello world", "naïve café"]


@pytest.fixture
def model_folder(described_model, tmp_path):
    """A saved static model with an evaluation.json and a card generated from both."""
    folder = save_model(described_model, tmp_path / "model")
    (folder / EVALUATION_FILE_NAME).write_text(json.dumps(EVALUATION), encoding="utf-8")
    write_model_card(load_model(folder), folder)
    return folder


@pytest.fixture
def in_process_bare_load(monkeypatch):
    """Replace the bare-load subprocess by the same computation in this process (the subprocess is slow; its
    own behaviour is covered by the tests that run it)."""

    def fake_bare_encode(folder, texts, env=None, timeout=600.0):
        model = load_model(folder)
        return BareLoadResult(embeddings=model.encode(list(texts)), first_module="StaticEmbedding")

    monkeypatch.setattr(hub_module, "bare_encode", fake_bare_encode)


@pytest.fixture
def local_hub(monkeypatch, tmp_path):
    """The fake Hub, with this process's huggingface_hub pointed at it over the plain/LFS upload path."""
    with FakeHub(token=TOKEN) as hub:
        monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", hub.url)
        template = hub.url + "/{repo_id}/resolve/{revision}/{filename}"
        monkeypatch.setattr(huggingface_hub.constants, "HUGGINGFACE_CO_URL_TEMPLATE", template)
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_XET", True)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
        monkeypatch.delenv("HF_TOKEN", raising=False)
        yield hub


def push_cli(folder, *args: str):
    return CliRunner().invoke(app, ["push", str(folder), *args])


# ------------------------------------------------------------------------------------------------ refusals
def test_push_refuses_truncated_weights(model_folder, local_hub):
    weights = model_folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:200])
    result = push_cli(model_folder, "org/swe", "--token", TOKEN)
    assert result.exit_code == 1
    assert f"error: refusing to push {model_folder}:" in result.output
    assert "model.safetensors is corrupt or truncated" in result.output
    assert "Re-save the model" in result.output
    assert local_hub.calls == []  # nothing reached the Hub


def test_push_refuses_a_card_whose_evaluation_table_is_stale(model_folder, local_hub, in_process_bare_load):
    changed = json.loads(json.dumps(EVALUATION))
    changed["results"]["stsb-en-test"]["score"] = 74.25
    (model_folder / EVALUATION_FILE_NAME).write_text(json.dumps(changed), encoding="utf-8")
    result = push_cli(model_folder, "org/swe", "--token", TOKEN)
    assert result.exit_code == 1
    assert "the card's evaluation table does not match evaluation.json" in result.output
    assert "stsb-en-test: the card shows spearman 71.50, evaluation.json has spearman 74.25" in result.output
    assert f"st-static card {model_folder}" in result.output
    assert local_hub.calls == []
    write_model_card(load_model(model_folder), model_folder)  # the fix the message names
    check_folder(model_folder)


def test_push_refuses_a_card_for_other_weights(model_folder, in_process_bare_load):
    load_model(model_folder).save(str(model_folder), create_model_card=False)  # same table, so equal
    check_folder(model_folder)
    model = load_model(model_folder)
    model[0].embedding.weight.data.mul_(3.0)
    model.save(str(model_folder), create_model_card=False)
    with pytest.raises(PushRefusedError, match="the card was generated for other weights"):
        check_folder(model_folder)


def test_push_refuses_a_missing_card_and_an_unexpected_table(model_folder, in_process_bare_load):
    (model_folder / EVALUATION_FILE_NAME).unlink()
    with pytest.raises(PushRefusedError, match=r"the card shows 1 evaluation result.*no evaluation\.json"):
        check_folder(model_folder)
    (model_folder / "README.md").unlink()
    with pytest.raises(PushRefusedError, match=r"README.md \(the model card\) is missing"):
        check_folder(model_folder)


def test_push_refuses_a_card_that_names_another_repo(model_folder, in_process_bare_load):
    write_model_card(load_model(model_folder), model_folder, model_id="org/other")
    with pytest.raises(PushRefusedError, match=r"load org/other, not org/swe.*--model-id org/swe"):
        check_folder(model_folder, "org/swe")


def test_push_refuses_without_a_token(model_folder, local_hub):
    result = push_cli(model_folder, "org/swe")
    assert result.exit_code == 1
    assert "no Hugging Face token" in result.output
    result = push_cli(model_folder, "not-a-repo-id", "--token", TOKEN)
    assert result.exit_code == 1
    assert "org/name" in result.output


def test_push_refuses_a_folder_a_bare_sentence_transformer_cannot_load(model_folder):
    modules = json.loads((model_folder / "modules.json").read_text(encoding="utf-8"))
    modules[0]["type"] = "st_static.model.static_word_average.StaticWordAverage"  # needs st-static to load
    (model_folder / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    with pytest.raises(PushRefusedError, match=r"SentenceTransformer\(.*\) without st-static failed"):
        check_folder(model_folder)


def test_push_reports_an_unreachable_hub(model_folder, in_process_bare_load):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with pytest.raises(HubUploadError, match=f"uploading to org/swe at {endpoint} failed"):
        push_folder(model_folder, "org/swe", token=TOKEN, endpoint=endpoint)


def test_push_reports_a_hub_refusal(model_folder, local_hub, in_process_bare_load):
    result = push_cli(model_folder, "org/swe", "--token", "hf_wrong_token")
    assert result.exit_code == 1
    assert "uploading to org/swe" in result.output and "401" in result.output


def test_push_refuses_two_swapped_token_ids(model_folder, local_hub, in_process_bare_load):
    """Two words swapping vectors passes every structural check and the bare load; the recorded sha256 does not."""
    tokenizer = json.loads((model_folder / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = tokenizer["model"]["vocab"]
    vocab["cat"], vocab["sat"] = vocab["sat"], vocab["cat"]
    (model_folder / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    result = push_cli(model_folder, "org/swe", "--token", TOKEN)
    assert result.exit_code == 1
    assert f"{model_folder}: tokenizer.json has changed since the model was saved" in result.output
    assert local_hub.calls == []


@pytest.mark.parametrize("link", ["notes.txt", "training", "1_Normalize/config.json"])
def test_push_refuses_symbolic_links_and_uploads_nothing(model_folder, local_hub, in_process_bare_load, tmp_path, link):
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "config.json").write_text('{"api_key": "hf_secret"}', encoding="utf-8")
    target = model_folder / link
    if target.exists():
        target.unlink()
    target.symlink_to(secret if link == "training" else secret / "config.json")
    result = push_cli(model_folder, "org/swe", "--token", TOKEN)
    assert result.exit_code == 1
    assert f"{link} is a symbolic link" in result.output
    assert local_hub.calls == []


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("teacher", "{root}/someone/models/all-MiniLM-L6-v2", "metadata.teacher"),
        ("teacher", "C:\\Users\\someone\\teacher", "metadata.teacher"),
        ("corpus", "corpus at {home}/data/en.txt", "metadata.corpus"),
        ("parallel", ["en-de.tsv", "{root}/en-ja.tsv"], "metadata.parallel[1]"),
    ],
)
def test_push_refuses_paths_of_this_machine_in_the_metadata(
    model_folder, in_process_bare_load, monkeypatch, tmp_path, key, value, shown
):
    # Absolute paths made under tmp_path: a home folder and other folders of the machine the test runs on.
    home = tmp_path / "home" / "tester"
    monkeypatch.setenv("HOME", str(home))
    config = json.loads((model_folder / "st_static_config.json").read_text(encoding="utf-8"))
    paths = {"home": home, "root": tmp_path}
    config["metadata"][key] = (
        value.format(**paths) if isinstance(value, str) else [item.format(**paths) for item in value]
    )
    (model_folder / "st_static_config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(PushRefusedError, match=re.escape(shown) + r".*Replace each with a Hub repo id.*st-static card"):
        check_folder(model_folder)


def test_push_refuses_a_card_that_mentions_the_home_folder(model_folder, in_process_bare_load, monkeypatch, tmp_path):
    home = tmp_path / "home" / "tester"
    monkeypatch.setenv("HOME", str(home))
    readme = model_folder / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8") + f"\nBuilt in {home}/work.\n", encoding="utf-8")
    with pytest.raises(PushRefusedError, match=rf"README\.md mentions your home folder \({re.escape(str(home))}\)"):
        check_folder(model_folder)


def test_push_errors_are_project_errors():
    assert all(issubclass(error, StStaticError) for error in (PushRefusedError, HubUploadError, BareLoadError))


# ------------------------------------------------------------------------------------------------ uploads
def test_push_uploads_to_a_branch_and_fills_in_the_model_id(model_folder, local_hub, in_process_bare_load):
    result = push_folder(model_folder, "org/swe", revision="v1", token=TOKEN)
    repo = local_hub.repos["org/swe"]
    assert result.commit_url.startswith(f"{local_hub.url}/org/swe/commit/")
    assert repo.branches["main"] == {}
    uploaded = repo.branches["v1"]
    assert set(uploaded) == {
        path.relative_to(model_folder).as_posix() for path in model_folder.rglob("*") if path.is_file()
    }
    card = uploaded["README.md"].decode()
    assert 'SentenceTransformer("org/swe")' in card and "sentence_transformers_model_id" not in card
    # sentence-transformers' two usage snippets and the model2vec one
    assert (model_folder / "README.md").read_text(encoding="utf-8").count("sentence_transformers_model_id") == 3
    assert uploaded["model.safetensors"] == (model_folder / "model.safetensors").read_bytes()
    assert "model.safetensors" in repo.lfs_paths


def test_model_push_to_hub_regenerates_the_card(described_model, local_hub, tmp_path):
    (tmp_path / "evaluation.json").write_text(json.dumps(EVALUATION), encoding="utf-8")
    described_model.push_to_hub("org/pushed", token=TOKEN)
    uploaded = local_hub.repos["org/pushed"].branches["main"]
    card = uploaded["README.md"].decode()
    assert 'SentenceTransformer("org/pushed")' in card
    assert "## Bias, Risks and Limitations" in card and "**Similarity distillation.**" in card
    (tmp_path / "weights").write_bytes(uploaded["model.safetensors"])
    assert card_weights_sha256(card) == file_sha256(tmp_path / "weights")


def plant_stray_files(folder):
    """What a model folder may hold besides the model: notes, a pickle, left-overs, other folders."""
    (folder / "notes.txt").write_text("private notes", encoding="utf-8")
    (folder / "pytorch_model.bin").write_bytes(b"not a model")
    (folder / ".model.safetensors.tmp-123").write_bytes(b"left-over")
    (folder / "drafts").mkdir()
    (folder / "drafts" / "card.md").write_text("draft", encoding="utf-8")
    (folder / "1_Normalize" / "extra.bin").write_bytes(b"extra")
    (folder / "training").mkdir()
    (folder / "training" / "training_history.json").write_text("{}", encoding="utf-8")
    (folder / "training" / "scratch.txt").write_text("scratch", encoding="utf-8")


def test_push_uploads_only_the_files_a_save_writes(model_folder, local_hub, in_process_bare_load):
    plant_stray_files(model_folder)
    push_folder(model_folder, "org/swe", token=TOKEN)
    assert set(local_hub.repos["org/swe"].branches["main"]) == {
        "1_Normalize/config.json",
        "README.md",
        "config.json",  # model2vec's
        "config_sentence_transformers.json",
        "evaluation.json",
        "model.safetensors",
        "modules.json",
        "st_static_config.json",
        "tokenizer.json",
        "training/training_history.json",
    }


def test_push_lists_what_it_skips(model_folder, local_hub, in_process_bare_load):
    plant_stray_files(model_folder)
    result = push_cli(model_folder, "org/swe", "--token", TOKEN)
    assert result.exit_code == 0, result.output
    assert (
        "not uploaded (not written by a save): .model.safetensors.tmp-123, 1_Normalize/extra.bin, drafts/, "
        "notes.txt, pytorch_model.bin, training/scratch.txt"
    ) in result.output


def test_the_bare_load_ignores_modules_planted_in_the_current_folder(model_folder, tmp_path, monkeypatch):
    mark = tmp_path / "planted-numpy-ran"
    planted = tmp_path / "cwd"
    planted.mkdir()
    (planted / "numpy.py").write_text(f"open({str(mark)!r}, 'w').close()\nraise SystemExit(3)\n", encoding="utf-8")
    monkeypatch.chdir(planted)
    bare_encode(model_folder, TEXTS)
    assert not mark.exists()


def test_the_bare_load_resolves_a_relative_folder_from_the_callers_folder(model_folder, monkeypatch):
    monkeypatch.chdir(model_folder.parent)
    loaded = bare_encode(model_folder.name, TEXTS)
    np.testing.assert_allclose(loaded.embeddings, load_model(model_folder).encode(TEXTS), atol=1e-6)


def test_hub_round_trip_without_network(model_folder, tmp_path):
    """`st-static push` (a subprocess pointed at the local Hub with HF_ENDPOINT) uploads the folder; the uploaded
    files, laid out as a Hugging Face cache, load offline with a bare SentenceTransformer("org/name")."""
    with FakeHub(token=TOKEN) as hub:
        env = {
            **os.environ,
            "HF_ENDPOINT": hub.url,
            "HF_HUB_DISABLE_XET": "1",  # hf_xet would upload through a Xet CAS server, which the fake Hub lacks
            "HF_HOME": str(tmp_path / "hf-home"),
            "PYTHONPATH": str(REPO_ROOT),
        }
        env.pop("HF_TOKEN", None)
        command = [sys.executable, "-m", "st_static.cli", "push", str(model_folder), "org/swe-round-trip"]
        result = subprocess.run(
            [*command, "--private", "--token", TOKEN], env=env, capture_output=True, text=True, timeout=600
        )
        assert result.returncode == 0, result.stderr[-3000:]
        assert "uploaded" in result.stdout and f"{hub.url}/org/swe-round-trip/commit/" in result.stdout
        repo = hub.repos["org/swe-round-trip"]
        assert repo.private
        assert [commit["summary"] for commit in repo.commits] == ["Upload static model with st-static"]
        downloaded = repo.write_branch("main", tmp_path / "downloaded")

    assert 'SentenceTransformer("org/swe-round-trip")' in (downloaded / "README.md").read_text(encoding="utf-8")
    cache = tmp_path / "hub-cache"
    place_in_hf_cache(downloaded, "org/swe-round-trip", cache)
    offline = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache), "HF_HOME": str(tmp_path / "hf-home")}
    loaded = bare_encode("org/swe-round-trip", TEXTS, env=offline)
    assert loaded.first_module == "StaticEmbedding"
    original = load_model(model_folder).encode(TEXTS)
    np.testing.assert_allclose(loaded.embeddings, original, atol=1e-6)
