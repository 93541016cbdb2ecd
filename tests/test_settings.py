"""One settings object: defaults written once, CLI options from the fields, stage keys from asdict, losses by name."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from sentence_transformers import SentenceTransformer
from torch import nn
from typer.testing import CliRunner

from st_static.cli import app
from st_static.errors import StStaticError
from st_static.losses import LOSSES, register_loss
from st_static.pipeline.publish import build
from st_static.settings import (
    BuildSettings,
    ExtractionSettings,
    RefinementSettings,
    SettingsError,
    settings_fields,
)

from .teachers import TINY_CORPUS, make_tiny_teacher
from .test_build import tiny_settings


def test_every_setting_is_a_build_option_with_its_help():
    import typer

    options = {
        option: parameter.help
        for parameter in typer.main.get_command(app).commands["build"].params
        for option in parameter.opts
    }
    for _, item in settings_fields():
        flag = "--" + item.name.replace("_", "-")
        assert flag in options, item.name
        assert options[flag] == item.metadata["help"] and options[flag], item.name


def test_setting_names_are_unique_across_stages():
    names = [item.name for _, item in settings_fields()]
    assert len(names) == len(set(names))


def test_flat_values_reach_their_stage():
    settings = BuildSettings.from_flat(dim=64, steps=7, sentences_per_word=5, languages=["en"])
    assert settings.reduction.dim == 64 and settings.refinement.steps == 7
    assert settings.extraction.sentences_per_word == 5
    with pytest.raises(TypeError, match="Unknown build setting"):
        BuildSettings.from_flat(dimension=64)


@pytest.mark.parametrize(
    ("kind", "values", "message"),
    [
        (ExtractionSettings, {"sentences_per_word": 0}, "sentences_per_word"),
        (RefinementSettings, {"batch_size": 1}, "batch_size"),
        (RefinementSettings, {"learning_rate": -1.0}, "learning_rate"),
        (RefinementSettings, {"matryoshka_dims": [64, 0]}, "matryoshka_dims"),
    ],
)
def test_values_are_checked_when_settings_are_made(kind, values, message):
    with pytest.raises(SettingsError, match=message):
        kind(**values)


def test_the_stage_key_follows_every_field():
    from st_static.stages.base import stage_key

    base = RefinementSettings()
    changes = [("steps", 11), ("temperature", 0.1), ("center_teacher", False), ("loss", "contrastive")]
    keys = {stage_key(dataclasses.asdict(dataclasses.replace(base, **{name: value}))) for name, value in changes}
    assert len(keys | {stage_key(dataclasses.asdict(base))}) == len(changes) + 1


class MeanCosineLoss(nn.Module):
    """A toy loss: pull every sentence towards the teacher's direction (only for this test)."""

    def __init__(self, model: SentenceTransformer, temperature: float = 0.05) -> None:
        super().__init__()
        self.model = model
        self.temperature = temperature

    def forward(self, sentence_features: list[dict[str, torch.Tensor]], labels: torch.Tensor) -> torch.Tensor:
        embeddings = self.model(sentence_features[0])["sentence_embedding"]
        return -torch.nn.functional.cosine_similarity(embeddings, embeddings.mean(0, keepdim=True)).mean()


def test_a_new_loss_joins_the_build_by_registering_and_naming_it(tmp_path):
    register_loss("mean-cosine", data="teacher_embeddings")(MeanCosineLoss)
    try:
        teacher = make_tiny_teacher(tmp_path / "teacher")
        corpus = tmp_path / "corpus.txt"
        corpus.write_text("\n".join(TINY_CORPUS * 3) + "\n")
        result = build(tiny_settings(teacher, corpus=str(corpus), loss="mean-cosine"), tmp_path / "model")
    finally:
        del LOSSES["mean-cosine"]
    history = json.loads((result.output / "training" / "training_history.json").read_text())
    assert history["settings"]["loss"] == "MeanCosineLoss"
    assert result.model[0].metadata.training.loss == "MeanCosineLoss"


def test_an_unknown_loss_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(app, ["build", "--out", str(tmp_path / "m"), "--corpus", "x.txt", "--loss", "nope"])
    assert result.exit_code == 1


def test_the_teachers_default_prompt_is_used_unless_the_user_gives_one(tmp_path):
    teacher = make_tiny_teacher(tmp_path / "teacher")
    config_path = teacher / "config_sentence_transformers.json"
    config = json.loads(config_path.read_text())
    config.update(prompts={"query": "query: ", "document": "passage: "}, default_prompt_name="query")
    config_path.write_text(json.dumps(config))
    assert ExtractionSettings(teacher=str(teacher)).with_teacher_prompt().prompt == "query: "
    assert ExtractionSettings(teacher=str(teacher), prompt="").with_teacher_prompt().prompt == ""
    assert ExtractionSettings(teacher=str(teacher), prompt="x: ").with_teacher_prompt().prompt == "x: "
    config.update(default_prompt_name="missing")
    config_path.write_text(json.dumps(config))
    with pytest.raises(StStaticError, match="names the default prompt 'missing' but does not define it"):
        ExtractionSettings(teacher=str(teacher)).with_teacher_prompt()
    assert ExtractionSettings(teacher="intfloat/multilingual-e5-small").with_teacher_prompt().prompt == "query: "


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--dim", "64", "--matryoshka-dims", "32,128"], "matryoshka_dims"),
        (["--pca-sample-size", "1"], "pca_sample_size 1 is below --dim"),
        (["--device", "tpu:7"], "not a torch device"),
        (["--dim", "64"], "larger than the teacher's 32 dimensions"),
    ],
)
def test_settings_a_build_cannot_use_are_one_error_line_before_the_teacher_runs(
    tmp_path, monkeypatch, options, message
):
    import st_static.stages.extraction as stages

    monkeypatch.setattr(stages, "load_teacher", lambda *a, **k: pytest.fail("the teacher was loaded"))
    teacher = make_tiny_teacher(tmp_path / "teacher")  # 32-d
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 3) + "\n")
    arguments = ["build", "--teacher", str(teacher), "--corpus", str(corpus), "--out", str(tmp_path / "m")]
    result = CliRunner().invoke(app, [*arguments, *options])
    assert result.exit_code == 1
    assert message in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "m").exists()
