"""``StaticWordAverage.load`` on tampered or malformed folders: one ``ModelFolderError`` naming the folder and the
problem, never a raw error, a Rust panic or silent NaN; legitimate folders (old, compressed, pruned) still load."""

from __future__ import annotations

import hashlib
import json
import pickle
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from typer.testing import CliRunner

from st_static import StaticWordAverage
from st_static.cli import app
from st_static.compression import ensemble, prune_vocabulary, quantize
from st_static.errors import StStaticError
from st_static.model.folder_checks import MAX_TABLE_MAGNITUDE, MAX_WORD_CHARS_LIMIT
from st_static.model.save_load import load_model, save_model
from st_static.model.static_word_average import ModelFolderError

TABLE_KEY = "embeddings"  # the table's name in model.safetensors (model2vec's layout)


@pytest.fixture
def folder(word_model, tmp_path) -> Path:
    return save_model(word_model, tmp_path / "model")


def read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def write_json(path: Path, value: object) -> None:
    path.write_text(json.dumps(value), encoding="utf-8")


def edit_tokenizer(folder: Path, edit) -> None:
    state = read_json(folder / "tokenizer.json")
    edit(state)
    write_json(folder / "tokenizer.json", state)


def edit_weights(folder: Path, edit) -> None:
    """Rewrite model.safetensors with ``edit(tensors)`` applied and drop the recorded hashes, so that the check
    under test, not the hash check, is what refuses the folder."""
    tensors = load_file(folder / "model.safetensors")
    edit(tensors)
    save_file(tensors, str(folder / "model.safetensors"))
    forget_hashes(folder)


def forget_hashes(folder: Path) -> None:
    """Drop the recorded file hashes, as in a folder saved before st-static recorded them."""
    config = read_json(folder / "st_static_config.json")
    config.pop("files", None)
    write_json(folder / "st_static_config.json", config)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------------------------------------ file hashes
def test_save_records_the_sha256_of_the_tokenizer_the_table_and_the_module_files(folder):
    modules = [entry["path"] for entry in read_json(folder / "modules.json")[1:]]
    module_files = {
        f"{module}/{entry.name}": sha256(entry) for module in modules for entry in (folder / module).iterdir()
    }
    assert module_files and read_json(folder / "st_static_config.json")["files"] == {
        "model.safetensors": sha256(folder / "model.safetensors"),
        "tokenizer.json": sha256(folder / "tokenizer.json"),
        **module_files,
    }


def test_two_swapped_token_ids_are_refused(folder):
    def swap(state):
        vocab = state["model"]["vocab"]
        vocab["cat"], vocab["sat"] = vocab["sat"], vocab["cat"]

    edit_tokenizer(folder, swap)
    with pytest.raises(ModelFolderError, match=r"tokenizer\.json has changed since the model was saved.*re-save"):
        StaticWordAverage.load(str(folder))


def test_a_changed_table_is_refused(folder):
    tensors = load_file(folder / "model.safetensors")
    tensors[TABLE_KEY][1] *= -1.0
    save_file(tensors, str(folder / "model.safetensors"))
    with pytest.raises(ModelFolderError, match=r"model\.safetensors has changed since the model was saved"):
        StaticWordAverage.load(str(folder))


def test_a_folder_saved_without_hashes_still_loads(folder, word_model):
    forget_hashes(folder)
    loaded = StaticWordAverage.load(str(folder))
    assert torch.equal(loaded.word_vectors, word_model[0].word_vectors)


def test_edited_metadata_keeps_the_folder_loadable(folder):
    config = read_json(folder / "st_static_config.json")
    config["metadata"]["teacher"] = "org/teacher"
    write_json(folder / "st_static_config.json", config)
    assert StaticWordAverage.load(str(folder)).metadata.teacher == "org/teacher"


@pytest.mark.parametrize("files", [["x"], {"tokenizer.json": 5}, {"tokenizer.json": "not-a-sha256"}])
def test_malformed_file_hashes_are_refused(folder, files):
    config = read_json(folder / "st_static_config.json")
    config["files"] = files
    write_json(folder / "st_static_config.json", config)
    with pytest.raises(ModelFolderError, match=r"st_static_config\.json.*files"):
        StaticWordAverage.load(str(folder))


# ------------------------------------------------------------------------------------------------ the table
@pytest.mark.parametrize("value", [3e38, -2 * MAX_TABLE_MAGNITUDE, float("nan"), float("inf")])
def test_absurd_or_non_finite_table_values_are_refused(folder, value):
    edit_weights(folder, lambda tensors: tensors[TABLE_KEY][:3].fill_(value))
    with pytest.raises(ModelFolderError, match=re.escape(f"{folder}: model.safetensors holds")):
        StaticWordAverage.load(str(folder))


def test_huge_values_in_rows_only_a_bare_load_reads_are_refused(folder, word_model):
    # Rows past the vocabulary (dropped pieces) are read by a bare StaticEmbedding, not by StaticWordAverage.
    edit_weights(folder, lambda tensors: tensors[TABLE_KEY][word_model[0].num_words + 3].fill_(3e38))
    with pytest.raises(ModelFolderError, match="larger than"):
        StaticWordAverage.load(str(folder))


def test_large_but_sane_values_load(folder):
    edit_weights(folder, lambda tensors: tensors[TABLE_KEY][:3].fill_(MAX_TABLE_MAGNITUDE / 2))
    assert StaticWordAverage.load(str(folder)).word_vectors.abs().max() == MAX_TABLE_MAGNITUDE / 2


def test_an_integer_table_is_refused(folder):
    edit_weights(folder, lambda tensors: tensors.update({TABLE_KEY: tensors[TABLE_KEY].long()}))
    with pytest.raises(ModelFolderError, match=r"int64, not floating point"):
        load_model(folder)


def test_a_model2vec_mapping_out_of_range_is_refused(word_model, tmp_path):
    folder = save_model(quantize(word_model, "int8-row"), tmp_path / "int8")
    edit_weights(folder, lambda tensors: tensors["mapping"].__setitem__(0, 10**6))
    with pytest.raises(ModelFolderError, match="mapping"):
        StaticWordAverage.load(str(folder))


def test_a_non_finite_column_scale_is_refused(word_model, tmp_path):
    folder = save_model(quantize(word_model, "int8-column"), tmp_path / "int8-column")
    edit_weights(folder, lambda tensors: tensors["column_scale"].__setitem__(0, float("inf")))
    with pytest.raises(ModelFolderError, match="column_scale"):
        StaticWordAverage.load(str(folder))


class _LeavesAMark:
    """Unpickling this creates ``path``: proof that the pickle was opened."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


def test_a_pickle_is_never_opened(folder, tmp_path):
    mark = tmp_path / "unpickled"
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps({"embedding.weight": _LeavesAMark(mark)}))
    with pytest.raises(ModelFolderError, match=r"model\.safetensors is missing.*never.*pytorch_model\.bin"):
        StaticWordAverage.load(str(folder))
    assert not mark.exists()


# ------------------------------------------------------------------------------------------------ the tokenizer
def test_a_hostile_pre_tokenizer_regex_is_refused(folder):
    edit_tokenizer(folder, lambda state: state["pre_tokenizer"]["pattern"].update(Regex="(a+)+$"))
    forget_hashes(folder)
    with pytest.raises(ModelFolderError, match=r"Not a st-static word tokenizer: its pre-tokenizer"):
        StaticWordAverage.load(str(folder))


@pytest.mark.parametrize(
    ("part", "value"),
    [
        ("normalizer", {"type": "Replace", "pattern": {"Regex": "(a+)+$"}, "content": "x"}),
        ("normalizer", None),
        ("post_processor", {"type": "ByteLevel", "trim_offsets": True, "add_prefix_space": True, "use_regex": True}),
        (
            "added_tokens",
            [
                {
                    "id": 0,
                    "content": "the cat",
                    "single_word": False,
                    "lstrip": False,
                    "rstrip": False,
                    "normalized": True,
                    "special": False,
                }
            ],
        ),
        ("truncation", {"direction": "Right", "max_length": 2, "strategy": "LongestFirst", "stride": 0}),
        ("decoder", {"type": "Replace", "pattern": {"Regex": "(a+)+$"}, "content": "x"}),
    ],
)
def test_any_other_tokenizer_structure_is_refused(folder, part, value):
    edit_tokenizer(folder, lambda state: state.update({part: value}))
    forget_hashes(folder)
    with pytest.raises(ModelFolderError, match="Not a st-static word tokenizer"):
        StaticWordAverage.load(str(folder))


@pytest.mark.parametrize(
    "model_edit",
    [
        {"max_input_chars_per_word": MAX_WORD_CHARS_LIMIT + 1},
        {"continuing_subword_prefix": ""},
        {"unk_token": "the"},
        {"type": "WordLevel"},
    ],
)
def test_a_changed_word_piece_model_is_refused(folder, model_edit):
    edit_tokenizer(folder, lambda state: state["model"].update(model_edit))
    forget_hashes(folder)
    with pytest.raises(ModelFolderError, match="Not a st-static word tokenizer"):
        StaticWordAverage.load(str(folder))


def test_every_compression_output_still_loads(word_model, tmp_path):
    made = {storage: quantize(word_model, storage) for storage in ("float16", "int8-row", "int8-column", "binary")}
    made["pruned"] = prune_vocabulary(word_model, 5)
    made["ensemble"] = ensemble([word_model, prune_vocabulary(word_model, 5)])
    for name, model in made.items():
        loaded = StaticWordAverage.load(str(save_model(model, tmp_path / name)))
        assert loaded.num_words == model[0].num_words, name


# ------------------------------------------------------------------------------------------------ the config
@pytest.mark.parametrize(
    ("config", "message"),
    [
        (["not", "a", "dict"], "not a JSON object"),
        ({"metadata": ["a", "list"]}, "metadata is a list, not a JSON object"),
        ({"metadata": {}, "num_words": "14"}, "num_words"),
    ],
)
def test_a_malformed_config_is_refused(folder, config, message):
    write_json(folder / "st_static_config.json", config)
    with pytest.raises(ModelFolderError, match=message):
        StaticWordAverage.load(str(folder))


def test_model_folder_errors_are_project_errors():
    assert issubclass(ModelFolderError, StStaticError) and issubclass(ModelFolderError, ValueError)


# ------------------------------------------------------------------------------------------------ st-static info
def test_info_on_a_folder_without_modules_json_is_an_error(folder):
    (folder / "modules.json").unlink()
    result = CliRunner().invoke(app, ["info", str(folder)])
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"error: {folder}: modules.json is missing, so this is not a complete model (an interrupted save?); "
        "re-save it with st_static.save_model."
    ]


def test_info_on_a_folder_whose_modules_json_is_a_folder_is_one_error_line(folder):
    (folder / "modules.json").unlink()
    (folder / "modules.json").mkdir()
    result = CliRunner().invoke(app, ["info", str(folder)])
    assert result.exit_code == 1, result.output
    assert result.output.splitlines() == [f"error: {folder}: modules.json cannot be read (Is a directory)."]


def test_info_prints_a_complete_model(folder):
    result = CliRunner().invoke(app, ["info", str(folder)])
    assert result.exit_code == 0
    assert json.loads(result.output)["num_words"] == 14
    assert np.isfinite(load_model(folder).encode(["the cat"])).all()


# ------------------------------------------------------------------------- issue 46: format, links, model2vec
@pytest.mark.parametrize(
    ("version", "message"),
    [(99, "format_version 99, written by a newer st-static"), ("1", "format_version '1' is no format"), (0, "is no")],
)
def test_an_unknown_format_version_is_refused(folder, version, message):
    config = read_json(folder / "st_static_config.json")
    config["format_version"] = version
    write_json(folder / "st_static_config.json", config)
    with pytest.raises(ModelFolderError, match=message):
        load_model(folder)
    result = CliRunner().invoke(app, ["info", str(folder)])
    assert result.exit_code == 1 and message.split(",")[0] in result.output


def test_a_module_folder_that_leads_out_of_the_model_folder_is_refused(folder, tmp_path):
    outside = tmp_path / "elsewhere"
    (folder / "1_Normalize").rename(outside)  # the same folder, now reached through a link
    (folder / "1_Normalize").symlink_to(outside)
    with pytest.raises(ModelFolderError, match=r"1_Normalize leads out of the model folder"):
        load_model(folder)
    (folder / "1_Normalize").unlink()
    (folder / "1_Normalize").symlink_to("/etc")
    result = CliRunner().invoke(app, ["info", str(folder)])
    assert result.exit_code == 1 and "leads out of the model folder (to /etc)" in result.output


def test_a_model2vec_folder_is_called_one_with_the_way_to_convert_it(folder):
    for name in ("modules.json", "st_static_config.json", "config_sentence_transformers.json", "README.md"):
        (folder / name).unlink()
    for entry in folder.glob("1_*"):
        for child in entry.iterdir():
            child.unlink()
        entry.rmdir()
    assert sorted(path.name for path in folder.iterdir()) == ["config.json", "model.safetensors", "tokenizer.json"]
    with pytest.raises(ModelFolderError, match="a model2vec folder") as caught:
        load_model(folder)
    assert "interrupted save" not in str(caught.value)
    assert "StaticEmbedding.from_model2vec(" in str(caught.value)
