"""Model folders saved by st-static before the package moves of issue 30 (``tests/fixtures/old_models``, made by
``tests/fixtures/make_old_models.py`` with main at 2a1bb21) still load, give the same vectors and keep their
metadata, unknown keys included, when saved again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import st_static
from st_static.cli import app

OLD_MODELS = Path(__file__).parent / "fixtures" / "old_models"
EXPECTED = json.loads((OLD_MODELS / "expected.json").read_text(encoding="utf-8"))
FOLDERS = sorted(EXPECTED["vectors"])


def read_json(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", FOLDERS)
def test_an_old_folder_loads_with_the_vectors_it_had(name):
    model = st_static.load_model(OLD_MODELS / name)
    vectors = model.encode(EXPECTED["texts"])
    np.testing.assert_allclose(vectors, np.array(EXPECTED["vectors"][name]), atol=1e-6)


@pytest.mark.parametrize("name", FOLDERS)
def test_an_old_folder_saved_again_keeps_its_modules_and_metadata(name, tmp_path):
    old = OLD_MODELS / name
    again = tmp_path / name
    st_static.save_model(st_static.load_model(old), again)
    if name != "int8-column":  # load_model folds the int8-column scale into a float table, dropping the Dense
        assert read_json(again / "modules.json") == read_json(old / "modules.json")
    saved_metadata = read_json(again / "st_static_config.json")["metadata"]
    assert saved_metadata == read_json(old / "st_static_config.json")["metadata"]
    vectors = st_static.load_model(again).encode(EXPECTED["texts"])
    np.testing.assert_allclose(vectors, np.array(EXPECTED["vectors"][name]), atol=1e-6)


def test_the_ensemble_folder_names_block_normalize_by_its_public_path():
    types = [module["type"] for module in read_json(OLD_MODELS / "ensemble" / "modules.json")]
    assert types[1] == "st_static.compression.BlockNormalize"


def test_unknown_metadata_keys_of_an_old_folder_survive_a_save(tmp_path):
    st_static.save_model(st_static.load_model(OLD_MODELS / "plain"), tmp_path / "plain")
    metadata = read_json(tmp_path / "plain" / "st_static_config.json")["metadata"]
    assert metadata["a_key_from_the_future"] == {"kept": [1, 2, 3]}


@pytest.mark.parametrize("name", FOLDERS)
def test_info_describes_an_old_folder(name, tmp_path):
    folder = shutil.copytree(OLD_MODELS / name, tmp_path / name)
    result = CliRunner().invoke(app, ["info", str(folder)])
    assert result.exit_code == 0, result.output


def test_a_metadata_value_of_the_wrong_type_names_the_key_and_the_file(tmp_path):
    folder = shutil.copytree(OLD_MODELS / "plain", tmp_path / "plain")
    config_path = folder / "st_static_config.json"
    config = read_json(config_path)
    config["metadata"]["teacher_dim"] = "384"
    config_path.write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(
        st_static.ModelFolderError, match=r"st_static_config\.json: metadata key 'teacher_dim' must be int"
    ):
        st_static.load_model(folder)
