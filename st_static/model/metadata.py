"""The facts a static model keeps about itself (``StaticWordAverage.metadata``, saved in ``st_static_config.json``).

:class:`ModelMetadata` names every key and its type; :func:`parse_metadata` checks a loaded dict against it and the
helpers here are the only code that adds to the record's lists. Keys are optional: a model made by hand may know
nothing about itself, and a build adds keys stage by stage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict, get_type_hints


class PCARecord(TypedDict, total=False):
    level: str
    removed_components: int
    dim: int


class TrainingRecord(TypedDict, total=False):
    loss: str
    steps: int
    best_step: int
    batch_size: int
    learning_rate: float
    temperature: float
    best_validation_loss: float | None
    propagated_rows: int


class SpeedRecord(TypedDict, total=False):
    sentences_per_second: float
    machine: str
    teacher_sentences_per_second: float
    texts: str
    command: str


class PruningRecord(TypedDict, total=False):
    kept_words: int
    original_words: int
    ranked_by: str


class FoldedNormsRecord(TypedDict, total=False):
    block_scales: list[float]
    texts: int


class EnsembleRecord(TypedDict, total=False):
    block_dims: list[int]
    block_weights: list[float]
    members: list[dict[str, Any]]
    """Per member: ``teacher``, ``stages``, ``vocab_size``, ``embedding_dim``, ``num_words``."""
    folded: FoldedNormsRecord


class ModelMetadata(TypedDict, total=False):
    """Every key a model's metadata may hold (see DEVELOPING.md, "Model metadata")."""

    teacher: str
    """Hub id of the teacher, or a local teacher's folder name (never a path of the machine that built it)."""
    teacher_dim: int
    prompt: str
    languages: list[str]
    corpus: str
    """The training files' names, comma-separated."""
    parallel: list[str]
    extra_pairs: list[str]
    vocab_size: int
    stages: list[str]
    """Finished stages, in order: extraction, completion, pca, distillation, contrastive."""
    pca: PCARecord
    training: TrainingRecord
    sentences_per_word: int
    speed: SpeedRecord
    build_command: str
    license: str
    data_license: str
    quantization: str
    pruning: PruningRecord
    word_counts: list[int]
    ensemble: EnsembleRecord
    truncated_from_dim: int


_KEY_TYPES = get_type_hints(ModelMetadata)
_PLAIN_TYPES: dict[str, type | tuple[type, ...]] = {}
for _key, _hint in _KEY_TYPES.items():
    origin = getattr(_hint, "__origin__", _hint)
    if origin is list:
        _PLAIN_TYPES[_key] = list
    elif origin is dict or (isinstance(origin, type) and issubclass(origin, dict)):
        _PLAIN_TYPES[_key] = dict
    elif _hint is float:
        _PLAIN_TYPES[_key] = (int, float)
    else:
        _PLAIN_TYPES[_key] = origin  # type: ignore[assignment]


def parse_metadata(raw: object) -> ModelMetadata:
    """Check that ``raw`` is a metadata dict whose known keys have their types, and return it as the typed record.

    Unknown keys are kept (a newer st-static may have written them).

    Raises:
        ValueError: Naming the first key with the wrong type (or ``raw`` not being a dict).
    """
    if raw is None:
        return ModelMetadata()
    if not isinstance(raw, Mapping):
        raise ValueError(f"the metadata must be a JSON object, got {type(raw).__name__}")
    for key, value in raw.items():
        expected = _PLAIN_TYPES.get(key)
        if expected is None or value is None:
            continue
        if (isinstance(value, bool) and expected is not bool) or not isinstance(value, expected):
            names = expected.__name__ if isinstance(expected, type) else " or ".join(kind.__name__ for kind in expected)
            raise ValueError(f"metadata key {key!r} must be {names}, got {type(value).__name__}")
    return ModelMetadata(**raw)  # type: ignore[typeddict-item]


def add_stage(metadata: ModelMetadata, stage: str) -> None:
    """Record ``stage`` as finished (once, at the end of the list)."""
    stages = list(metadata.get("stages", []))
    if stage not in stages:
        stages.append(stage)
    metadata["stages"] = stages


def with_stage(metadata: Mapping[str, Any], stage: str, **updates: Any) -> ModelMetadata:
    """A copy of ``metadata`` with ``stage`` finished and ``updates`` set."""
    copied = ModelMetadata(**dict(metadata))  # type: ignore[typeddict-item]
    add_stage(copied, stage)
    copied.update(updates)  # type: ignore[typeddict-item]
    return copied
