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


# ------------------------------------------------------------------------------------------------ other JSON files
DEEP_JSON = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("file", ["config_sentence_transformers.json", "1_Normalize/config.json", "config.json"])
@pytest.mark.parametrize(
    ("content", "message"),
    [
        (DEEP_JSON, "is corrupt (its JSON is nested too deeply to parse)"),
        ("{junk", "is corrupt (Expecting property name"),
        ('{"a": ' + "9" * 5000 + "}", "is corrupt (it holds an integer of over 4,300 digits)"),
        ("[1, 2]", "is malformed: it is a JSON list, not a JSON object"),
        (b"\xff\xfe{}", "is corrupt ('utf-8' codec can't decode"),
    ],
)
def test_every_json_file_a_load_reads_is_parsed_safely(folder, file, content, message):
    path = folder / file
    path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content, encoding="utf-8")
    assert_refused(folder, f"{file} {message}")


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("model_type", "SparseEncoder", "its model_type is 'SparseEncoder', not 'SentenceTransformer'"),
        ("prompts", ["query"], "its prompts are ['query'], not a JSON object of prompt name -> text"),
        ("prompts", {"query": 3}, "its prompts are {'query': 3}, not a JSON object"),
        ("similarity_fn_name", ["cosine"], "its similarity_fn_name is ['cosine'], not a string"),
        ("default_prompt_name", "passage", "its default_prompt_name 'passage' is not one of its prompts"),
        ("truncate_dim", "8", "its truncate_dim is '8', not a positive integer"),
        ("__version__", "6.2.0", "its __version__ is '6.2.0', not a JSON object of package -> version"),
        ("__version__", {"sentence_transformers": "six"}, "its sentence_transformers version 'six' is not a version"),
    ],
)
def test_sentence_transformers_config_keys_of_the_wrong_type_are_refused(folder, key, value, message):
    edit_json(folder / "config_sentence_transformers.json", lambda config: config.update({key: value}))
    assert_refused(folder, f"config_sentence_transformers.json is malformed: {message}")


def test_what_sentence_transformers_refuses_after_the_checks_is_a_model_folder_error(folder):
    edit_json(
        folder / "modules.json", lambda modules: modules[1].update(type="sentence_transformers.base.modules.Dense")
    )
    (folder / "config.json").unlink()  # model2vec's config would be refused first: Dense is not its Normalize
    assert_refused(folder, "sentence-transformers cannot load the model (TypeError: ")


def test_info_runs_the_checks_of_a_load_after_the_files(folder):
    # The table's files are sound; only the loaded model shows that its first module is not the table.
    edit_json(folder / "modules.json", lambda modules: modules[0].update(type=modules[1]["type"]))
    assert_refused(folder, "the first module is Normalize, not a static embedding")


# ------------------------------------------------------------------------------------------------ model2vec's files
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"normalize": False}, "it says normalize: false, but the model ends with Normalize"),
        ({"normalize": None}, "it says normalize: null"),
        ({"max_length": 512}, "its max_length is 512 (model2vec's default 512 when absent)"),
        ({"hidden_dim": 8}, "its hidden_dim is 8, but the table has 16 dimensions"),
    ],
)
def test_a_model2vec_config_that_disagrees_with_the_folder_is_refused(folder, change, message):
    edit_json(folder / "config.json", lambda config: config.update(change))
    assert_refused(folder, f"config.json (read by model2vec) disagrees with the model: {message}")


def test_a_model2vec_config_without_max_length_is_refused(folder):
    edit_json(folder / "config.json", lambda config: config.pop("max_length"))
    assert_refused(folder, "its max_length is 512 (model2vec's default 512 when absent)")


def test_model2vec_config_on_a_model_model2vec_cannot_reproduce_is_refused(folder, tmp_path):
    from st_static.compression import quantize

    quantized = save_model(quantize(load_model(folder), "int8-column"), tmp_path / "int8-column")
    assert not (quantized / "config.json").exists()
    shutil.copyfile(folder / "config.json", quantized / "config.json")
    assert_refused(quantized, "config.json (read by model2vec) disagrees with the model: model2vec cannot give")


def test_a_table_without_normalize_is_saved_without_model2vec_config_and_loads(folder, tmp_path):
    plain = SentenceTransformer(modules=[load_model(folder)[0]], device="cpu")
    saved = save_model(plain, tmp_path / "plain")
    assert not (saved / "config.json").exists()
    card = (saved / "README.md").read_text(encoding="utf-8")
    assert "This folder does not load in model2vec: the model has no Normalize module" in card
    np.testing.assert_allclose(load_model(saved).encode(["the cat"]), plain.encode(["the cat"]), atol=1e-6)
    plain.save_pretrained(str(tmp_path / "bare"))  # the table's own save cannot see that Normalize is missing
    assert_refused(tmp_path / "bare", "model2vec cannot give this model's vectors: the model has no Normalize module")


def test_two_different_tables_in_the_weights_file_are_refused(folder):
    from safetensors.torch import load_file, save_file

    tensors = load_file(folder / "model.safetensors")
    save_file({**tensors, "embedding.weight": tensors["embeddings"].clone()}, str(folder / "model.safetensors"))
    edit_json(folder / "st_static_config.json", lambda config: config.pop("files"))  # the check, not the hashes
    assert load_model(folder).encode("the cat").shape == (16,)  # the same table twice loads
    save_file({**tensors, "embedding.weight": tensors["embeddings"] + 1}, str(folder / "model.safetensors"))
    assert_refused(folder, "model.safetensors holds two different tables: embedding.weight")


# ------------------------------------------------------------------------------------------------ where the model is
@pytest.fixture
def offline(monkeypatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


@pytest.fixture
def online(monkeypatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


def test_a_symbolic_link_loop_is_named_as_one(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert_refused(loop, f"{loop} is a symbolic link loop")
    assert_refused(loop / "model", f"{loop / 'model'} is a symbolic link loop (or its path passes through one)")


def test_a_broken_link_a_file_and_a_missing_folder_are_named(tmp_path):
    broken = tmp_path / "broken"
    broken.symlink_to(tmp_path / "gone")
    assert_refused(broken, f"{broken} is a symbolic link to {tmp_path / 'gone'}, which does not exist")
    (tmp_path / "file").write_text("{}", encoding="utf-8")
    assert_refused(tmp_path / "file", f"{tmp_path / 'file'} is a file, not a model folder")
    assert_refused(tmp_path / "nothing", f"{tmp_path / 'nothing'}: no such model folder")


def test_an_uncached_repo_id_offline_says_the_hub_is_not_asked(offline):
    assert_refused(
        "org/not-cached", "org/not-cached is not a folder here and not in the Hugging Face cache, and the Hub"
    )


def test_an_uncached_repo_id_the_hub_lacks_or_cannot_serve_is_named(online, monkeypatch):
    from types import SimpleNamespace

    from huggingface_hub.errors import RepositoryNotFoundError

    def missing(*args, **kwargs):
        raise RepositoryNotFoundError("404", response=SimpleNamespace(headers={}, request=None, status_code=404))

    monkeypatch.setattr("huggingface_hub.HfApi.model_info", missing)
    assert_refused("org/not-there", "not in the Hugging Face cache, and the Hugging Face Hub has no such model")

    def unreachable(*args, **kwargs):
        raise OSError("[Errno -2] Name or service not known")

    monkeypatch.setattr("huggingface_hub.HfApi.model_info", unreachable)
    assert_refused("org/not-there", "the Hugging Face Hub could not be reached (OSError: [Errno -2] Name or service")


def test_a_cached_repo_id_loads_offline(folder, tmp_path, offline):
    from .hf_cache import place_in_hf_cache

    cache = tmp_path / "hub"
    place_in_hf_cache(folder, "org/cached", cache)
    loaded = load_model("org/cached", cache_folder=str(cache))
    np.testing.assert_allclose(loaded.encode(["the cat"]), load_model(folder).encode(["the cat"]), atol=1e-6)
