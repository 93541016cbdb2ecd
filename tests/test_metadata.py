"""ModelMetadata: parsed once from st_static_config.json, read by attribute, written back as it was read."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest

import st_static
from st_static import ModelFolderError, StaticWordAverage
from st_static.model.metadata import (
    EnsembleMember,
    EnsembleRecord,
    ModelMetadata,
    PCARecord,
    TrainingRecord,
)

REPOSITORY = Path(__file__).resolve().parents[1]
OLD_MODELS = Path(__file__).parent / "fixtures" / "old_models"
FULL = {
    "teacher": "sentence-transformers/all-MiniLM-L6-v2",
    "teacher_dim": 384,
    "prompt": "",
    "languages": ["en"],
    "corpus": "en.txt, en-de.tsv",
    "parallel": ["en-de.tsv"],
    "extra_pairs": ["pairs.tsv"],
    "keep_sources": ["ddtp", "mo.*"],
    "leave_out_sources": ["mo.wesnoth-*"],
    "vocab_size": 14,
    "sentences_per_word": 5,
    "stages": ["extraction", "completion", "pca", "distillation"],
    "pca": {"level": "sentence", "removed_components": 3, "dim": 16},
    "training": {
        "loss": "SimilarityDistillationLoss",
        "steps": 200,
        "best_step": 150,
        "batch_size": 128,
        "learning_rate": 0.001,
        "temperature": 0.05,
        "best_validation_loss": 0.25,
        "propagated_rows": 2,
    },
    "speed": {"sentences_per_second": 1000.5, "machine": "a CPU", "texts": "10 texts", "command": "st-static card"},
    "build_command": "st-static build ...",
    "license": "apache-2.0",
    "data_license": "CC BY 4.0",
    "quantization": "int8-row",
    "pruning": {"kept_words": 10, "original_words": 14, "ranked_by": "row order"},
    "word_counts": [3, 2, 1.5],
    "ensemble": {
        "block_dims": [16, 8],
        "block_weights": [1.0, 2],
        "members": [{"teacher": "t", "stages": ["extraction"], "vocab_size": 14, "embedding_dim": 16, "num_words": 14}],
        "folded": {"block_scales": [0.5, 0.25], "texts": 3},
    },
    "truncated_from_dim": 32,
}


def test_every_key_the_library_writes_round_trips_unchanged():
    metadata = ModelMetadata.from_dict(FULL)
    assert metadata.to_dict() == FULL
    assert json.dumps(metadata.to_dict(), sort_keys=True) == json.dumps(FULL, sort_keys=True)
    assert metadata.extra == {}
    assert metadata.training.best_step == 150
    assert metadata.ensemble.members[0] == EnsembleMember(
        teacher="t", stages=["extraction"], vocab_size=14, embedding_dim=16, num_words=14
    )
    assert metadata.ensemble.folded.texts == 3


def test_unknown_keys_and_nulls_are_kept_at_every_level():
    raw = {
        "from_the_future": {"kept": [1, 2]},
        "prompt": None,
        "training": {"loss": "x", "best_validation_loss": None, "new_setting": 1},
        "ensemble": {"members": [{"teacher": "t", "colour": "blue"}]},
    }
    metadata = ModelMetadata.from_dict(raw)
    assert metadata.to_dict() == raw
    assert metadata.prompt is None and metadata.extra["from_the_future"] == {"kept": [1, 2]}
    assert metadata.training.extra == {"best_validation_loss": None, "new_setting": 1}
    metadata.prompt = "query: "
    assert metadata.to_dict()["prompt"] == "query: "


def test_to_dict_writes_only_the_keys_that_are_set():
    assert ModelMetadata().to_dict() == {}
    assert ModelMetadata(teacher="t", stages=["extraction"]).to_dict() == {"teacher": "t", "stages": ["extraction"]}
    assert ModelMetadata(pca=PCARecord(dim=8)).to_dict() == {"pca": {"dim": 8}}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"teacher_dim": "384"}, "metadata key 'teacher_dim' must be int, got str"),
        ({"teacher_dim": True}, "metadata key 'teacher_dim' must be int, got bool"),
        ({"languages": "en"}, "metadata key 'languages' must be a list, got str"),
        ({"languages": ["en", 7]}, r"metadata key 'languages\[1\]' must be str, got int"),
        ({"pca": [8]}, "metadata key 'pca' must be a JSON object, got a list"),
        ({"training": {"steps": 1.5}}, "metadata key 'training.steps' must be int, got float"),
        ({"training": {"learning_rate": "fast"}}, "metadata key 'training.learning_rate' must be int or float"),
        (
            {"ensemble": {"members": [{"teacher": "a"}, {"num_words": "14"}]}},
            r"metadata key 'ensemble.members\[1\].num_words' must be int, got str",
        ),
        ([1, 2], "the metadata must be a JSON object, got a list"),
    ],
)
def test_a_wrong_type_is_a_model_folder_error_naming_the_key_and_the_source(raw, message):
    with pytest.raises(ModelFolderError, match=rf"^folder: st_static_config\.json: {message}"):
        ModelMetadata.from_dict(raw, source="folder: st_static_config.json")


def test_a_wrong_type_set_by_code_is_refused_before_it_is_saved(word_model, tmp_path):
    word_model[0].metadata.training = TrainingRecord(steps="many")
    with pytest.raises(TypeError, match=r"metadata key 'training\.steps' must be int, got str"):
        st_static.save_model(word_model, tmp_path / "model")


def test_the_module_keeps_a_parsed_copy(word_model):
    record = ModelMetadata(teacher="t")
    module = StaticWordAverage(word_model[0].tokenizer, word_model[0].word_vectors.detach(), metadata=record)
    record.teacher = "changed"
    assert module.metadata.teacher == "t"
    module.metadata = {"teacher": "from a dict", "stages": ["extraction"]}
    assert module.metadata == ModelMetadata(teacher="from a dict", stages=["extraction"])
    module.metadata = None
    assert module.metadata.is_empty() and not module.metadata
    with pytest.raises(ModelFolderError, match="metadata key 'vocab_size' must be int"):
        module.metadata = {"vocab_size": "many"}


def test_stage_helpers():
    metadata = ModelMetadata(stages=["extraction"])
    reduced = metadata.with_stage("pca", pca=PCARecord(dim=8))
    assert metadata.stages == ["extraction"] and metadata.pca is None
    assert reduced.stages == ["extraction", "pca"] and reduced.pca == PCARecord(dim=8)
    assert reduced.has_stage("pca") and not metadata.has_stage("pca")
    reduced.add_stage("pca")
    assert reduced.stages == ["extraction", "pca"]
    merged = reduced.merged(ModelMetadata(corpus="en.txt", extra={"note": 1}))
    assert merged.corpus == "en.txt" and merged.pca == PCARecord(dim=8) and merged.extra == {"note": 1}
    with pytest.raises(TypeError):
        metadata.updated(no_such_field=1)


def test_a_run_without_validation_records_a_null_loss():
    common = {"loss": "l", "steps": 4, "best_step": 4, "batch_size": 2, "learning_rate": 0.1, "temperature": 0.05}
    assert TrainingRecord.of_run(**common, best_validation_loss=float("nan")).to_dict()["best_validation_loss"] is None
    assert TrainingRecord.of_run(**common, best_validation_loss=0.5).best_validation_loss == 0.5


def test_dict_style_reading_still_works_with_a_deprecation_warning():
    metadata = ModelMetadata.from_dict(FULL)
    with pytest.warns(DeprecationWarning, match="read its fields as attributes"):
        assert metadata["teacher"] == FULL["teacher"]
    with pytest.warns(DeprecationWarning):
        assert metadata.get("training")["loss"] == "SimilarityDistillationLoss"
    with pytest.warns(DeprecationWarning):
        assert metadata.get("missing", 3) == 3
    with pytest.warns(DeprecationWarning):
        assert "pca" in metadata
    with pytest.raises(TypeError, match="not iterable"):
        list(metadata)


def test_loading_and_saving_an_old_folder_reads_no_metadata_by_key(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for name in ("plain", "int8-column", "ensemble"):
            model = st_static.load_model(OLD_MODELS / name)
            assert isinstance(model[0].metadata, ModelMetadata)
            st_static.save_model(model, tmp_path / name)


def test_ensemble_members_are_typed():
    members = ModelMetadata.from_dict(FULL).ensemble.members
    assert all(isinstance(member, EnsembleMember) for member in members)
    assert EnsembleRecord(members=members).to_dict() == {"members": FULL["ensemble"]["members"]}


def test_no_code_outside_the_metadata_module_reads_metadata_by_key():
    """The closing grep of issue 30 item 3: no ``metadata[...]``, ``metadata.get(...)`` or ``metadata.update(...)``
    in the library, the benchmarks or the card scripts but in ``st_static/model/metadata.py`` (``item.metadata`` is
    a dataclass field's own metadata, the settings' help texts)."""
    pattern = re.compile(r"metadata(\[|\.get\(|\.update\(|\.setdefault\()")
    found = [
        f"{path.relative_to(REPOSITORY)}:{number}: {line.strip()}"
        for folder in ("st_static", "benchmarks", "hub_cards")
        for path in sorted((REPOSITORY / folder).rglob("*.py"))
        if path != REPOSITORY / "st_static" / "model" / "metadata.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if pattern.search(line) and not re.search(r"\bitem\.metadata\.get\(", line)
    ]
    assert found == []
