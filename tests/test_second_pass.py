"""The second contrastive pass (issue 68): settings, inputs, stage keys, the trained table and its record."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import st_static
from st_static.cli.app import app
from st_static.extraction.corpus import CorpusError
from st_static.pipeline.publish import SECOND_PASS_TRAINING_FOLDER, build
from st_static.settings import BuildSettings, SecondPassSettings, SettingsError

from .teachers import TINY_CORPUS, make_tiny_teacher
from .test_build import GERMAN, tiny_settings


def write_pairs(path, count: int, offset: int = 0) -> None:
    """``count`` en-de pairs of three tiny-corpus sentences and their German ones, from the ``offset``-th on."""
    triples = [(a, b, c) for a in range(12) for b in range(12) for c in range(12) if len({a, b, c}) == 3]
    chosen = triples[offset : offset + count]
    rows = [" ".join(TINY_CORPUS[i] for i in triple) + "\t" + " ".join(GERMAN[i] for i in triple) for triple in chosen]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("en\tde\n" + "\n".join(rows) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("second-pass")
    teacher = make_tiny_teacher(folder / "teacher")
    write_pairs(folder / "en-de.tsv", 320)
    write_pairs(folder / "close" / "en-de.tsv", 120, offset=320)
    return folder, teacher


def settings_for(inputs, **overrides) -> BuildSettings:
    folder, teacher = inputs
    return tiny_settings(teacher, parallel=[f"de={folder / 'en-de.tsv'}"], languages=["en", "de"], **overrides)


def pair_cosine(model, path) -> float:
    """The mean cosine of the translation pairs of ``path``."""
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    first = model.encode([row[0] for row in rows], normalize_embeddings=True)
    second = model.encode([row[1] for row in rows], normalize_embeddings=True)
    return float(np.mean(np.sum(first * second, axis=1)))


def test_the_settings_name_their_pairs_as_lang_file_of_a_crosslingual_build():
    assert SecondPassSettings() == SecondPassSettings(
        second_pass_pairs=None, second_pass_steps=8000, second_pass_learning_rate=3e-4, second_pass_batch_size=128
    )
    with pytest.raises(SettingsError, match="cross-lingual table"):
        BuildSettings.from_flat(corpus=["en.txt"], second_pass_pairs=["de=en-de.tsv"])
    crosslingual = {"parallel": ["de=en-de.tsv"], "languages": ["en", "de"]}
    with pytest.raises(SettingsError, match="give LANG=FILE"):
        BuildSettings.from_flat(**crosslingual, second_pass_pairs=["en-de.tsv"])
    with pytest.raises(SettingsError, match="'ja' is not one of the paired languages"):
        BuildSettings.from_flat(**crosslingual, second_pass_pairs=["ja=en-ja.tsv"])
    with pytest.raises(SettingsError, match="given twice"):
        BuildSettings.from_flat(**crosslingual, second_pass_pairs=["de=close.tsv", "de=close.tsv"])
    with pytest.raises(SettingsError, match="second_pass_steps must be a positive integer"):
        SecondPassSettings(second_pass_steps=0)
    with pytest.raises(SettingsError, match="second_pass_batch_size must be at least 2"):
        SecondPassSettings(second_pass_batch_size=1)
    settings = BuildSettings.from_flat(**crosslingual, second_pass_pairs=["de=close.tsv"], second_pass_steps=10)
    assert settings.second_pass_files() == {"de": ["close.tsv"]} and "close.tsv" in settings.inputs


def test_the_command_line_offers_the_second_pass_and_checks_its_files_first(inputs, tmp_path):
    folder, teacher = inputs
    arguments = ["build", "--teacher", str(teacher), "--parallel", f"de={folder / 'en-de.tsv'}", "--languages", "en,de"]
    missing = CliRunner().invoke(
        app, [*arguments, "--second-pass-pairs", f"de={tmp_path / 'none.tsv'}", "--out", str(tmp_path / "m")]
    )
    assert missing.exit_code != 0 and "none.tsv" in missing.output and not (tmp_path / "m").exists()
    write_pairs(tmp_path / "few.tsv", 3)
    settings = settings_for(inputs, second_pass_pairs=[f"de={tmp_path / 'few.tsv'}"])
    with pytest.raises(CorpusError, match="second contrastive pass's pairs"):
        build(settings, tmp_path / "few-model", work_dir=tmp_path / "work")
    assert not (tmp_path / "work").exists()  # refused before the teacher loads: the unused work folder is removed


def test_the_pass_runs_after_the_refinement_and_keeps_its_folder_and_record(inputs, tmp_path):
    folder, _ = inputs
    close = folder / "close" / "en-de.tsv"
    work = tmp_path / "work"
    plain = build(settings_for(inputs), tmp_path / "plain", work_dir=work)
    second = settings_for(
        inputs,
        second_pass_pairs=[f"de={close}"],
        second_pass_steps=60,
        second_pass_learning_rate=0.05,
        second_pass_batch_size=8,
    )
    result = build(second, tmp_path / "second", work_dir=work)

    assert list(result.seconds)[-5:] == ["contrastive", "second pass", "fallback", "pieces", "storage (float16)"]
    assert len(list(work.glob("contrastive-*"))) == 1  # the refinement is reused, not trained again
    assert len(list(work.glob("second-pass-*"))) == 1 and len(list(work.glob("fallback-*"))) == 2
    loaded = st_static.load_model(tmp_path / "second")
    metadata = loaded[0].metadata
    assert metadata.training == st_static.load_model(tmp_path / "plain")[0].metadata.training  # the refinement's
    assert metadata.second_pass.files == ["close/en-de.tsv"] and metadata.second_pass.steps == 60
    assert metadata.second_pass.learning_rate == 0.05 and metadata.second_pass.batch_size == 8
    assert metadata.stages.index("second pass") == metadata.stages.index("contrastive") + 1
    history = tmp_path / "second" / "training" / SECOND_PASS_TRAINING_FOLDER / "training_history.json"
    assert json.loads(history.read_text(encoding="utf-8"))
    card = (tmp_path / "second" / "README.md").read_text(encoding="utf-8")
    assert "**Second contrastive pass.**" in card and "`close/en-de.tsv` alone for 60 more steps" in card
    assert pair_cosine(result.model, close) > pair_cosine(plain.model, close)
    assert (tmp_path / "second" / "model.safetensors").is_file() and "second_pass" not in json.dumps(
        st_static.load_model(tmp_path / "plain")[0].metadata.to_dict()
    )
