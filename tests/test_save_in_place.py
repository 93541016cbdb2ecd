"""A save in place (issue 38): ``save_model(load_model(F), F)`` replaces the model's files and keeps everything else
in F (evaluation, stage scores, training record, the user's notes), and the card keeps its evaluation table."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from sentence_transformers import SentenceTransformer

from st_static import load_model, save_model
from st_static.files import file_sha256
from st_static.pipeline.publish import build

from .teachers import TINY_CORPUS, make_tiny_teacher
from .test_build import fake_evaluator, tiny_settings

NOT_MODEL_FILES = [
    "evaluation.json",
    "stage_scores.json",
    "stage_scores.md",
    "training/training_history.json",
    "NOTES.txt",
    "notes/todo.md",
]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A model folder as ``st-static build`` publishes it, plus the user's own notes."""
    root = tmp_path_factory.mktemp("built")
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 3) + "\n")
    teacher = make_tiny_teacher(root / "teacher")
    folder = build(tiny_settings(teacher, corpus=str(corpus)), root / "model", evaluate=fake_evaluator).output
    (folder / "NOTES.txt").write_text("my notes: fine-tune on support tickets next\n")
    (folder / "notes").mkdir()
    (folder / "notes" / "todo.md").write_text("- compare with the teacher\n")
    return folder


@pytest.fixture
def folder(built, tmp_path) -> Path:
    return Path(shutil.copytree(built, tmp_path / "model"))


def digests(folder: Path) -> dict[str, str]:
    return {name: file_sha256(folder / name) for name in NOT_MODEL_FILES if (folder / name).is_file()}


def evaluation_rows(card: str) -> list[str]:
    return [line for line in card.splitlines() if line.startswith("| toy-sts ")]


def fine_tune(model: SentenceTransformer) -> None:
    """Change the word vectors as a fine-tuning step would."""
    with torch.no_grad():
        model[0].embedding.weight.mul_(1.5)


def test_the_built_folder_has_what_an_in_place_save_must_keep(built):
    assert set(digests(built)) == set(NOT_MODEL_FILES)
    assert evaluation_rows((built / "README.md").read_text())


@pytest.mark.parametrize("loader", ["load_model", "bare"])
def test_a_save_in_place_keeps_everything_it_does_not_write(folder, loader):
    before = digests(folder)
    rows = evaluation_rows((folder / "README.md").read_text())
    weights = file_sha256(folder / "model.safetensors")
    model = load_model(folder) if loader == "load_model" else SentenceTransformer(str(folder), device="cpu")
    fine_tune(model)
    save_model(model, folder)
    assert digests(folder) == before  # byte-identical
    assert file_sha256(folder / "model.safetensors") != weights  # the model's own files were replaced
    card = (folder / "README.md").read_text()
    assert evaluation_rows(card) == rows  # the card still shows evaluation.json
    reloaded = load_model(folder)
    if getattr(model[0], "storage", "float32") == "float16":  # load_model keeps the build's float16 storage
        assert reloaded[0].storage == "float16"
        torch.testing.assert_close(reloaded[0].embedding.weight, model[0].embedding.weight.half().float())
    else:
        torch.testing.assert_close(reloaded[0].embedding.weight, model[0].embedding.weight)
    assert reloaded[0].metadata.teacher == load_model(folder)[0].metadata.teacher
    assert not [path.name for path in folder.parent.iterdir() if path.name.startswith(".model.")]


def test_a_save_in_place_drops_module_folders_the_model_no_longer_has(folder):
    model = load_model(folder)
    later = [name for name in model._modules if name != next(iter(model._modules))]
    assert later, "the built model ends with Normalize (after the empty text's Dense)"
    folders = [path.name for path in folder.iterdir() if path.is_dir() and path.name[0].isdigit()]
    for name in later:
        del model._modules[name]
    save_model(model, folder)
    assert not any((folder / name).exists() for name in folders)  # the old module folder went with the module
    assert digests(folder).keys() == set(NOT_MODEL_FILES)


def test_a_save_to_another_folder_or_of_another_model_replaces_the_folder(folder, word_model, tmp_path):
    copy = save_model(load_model(folder), tmp_path / "copy")
    assert not (copy / "NOTES.txt").exists() and not (copy / "evaluation.json").exists()
    save_model(word_model, folder)  # a model not loaded from there: its old evaluation would describe another model
    assert not (folder / "evaluation.json").exists() and not (folder / "NOTES.txt").exists()
    assert not evaluation_rows((folder / "README.md").read_text())
