"""The facts a static model keeps about itself (``StaticWordAverage.metadata``, saved in ``st_static_config.json``).

:class:`ModelMetadata` is the one typed record of them: parsed once from the saved JSON
(:meth:`ModelMetadata.from_dict`, which checks every key's type), read and written by attribute, and turned back into
the JSON object it came from by :meth:`ModelMetadata.to_dict`. No other code reads or writes metadata by key.

Every field is optional (``None`` when the model does not record it): a model made by hand may know nothing about
itself, and a build adds keys stage by stage. ``to_dict`` writes only the keys that are set, plus ``extra``: the
keys this st-static does not know (a newer one may have written them), kept and written back unchanged, together
with known keys that held ``null``. The nested records (``pca``, ``training``, ``speed``, ``pruning``, ``ensemble``
and its ``members`` and ``folded``, ``fallback``, the ``extend`` entries, ``meaning_map``) work the same way.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import types
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Self, Union, get_args, get_origin, get_type_hints

from st_static.errors import ModelFolderError


class _WrongType(Exception):
    """A value of the wrong type at ``key`` (a dotted path such as ``training.steps`` or ``languages[1]``)."""

    def __init__(self, key: str, expected: str, value: object) -> None:
        super().__init__(f"metadata key {key!r} must be {expected}, got {_json_type(value)}")


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    return {dict: "a JSON object", list: "a list"}.get(type(value), type(value).__name__)


class _Record:
    """What the metadata record and its nested records share: reading, checking and writing their JSON form."""

    extra: dict[str, Any]
    _hints: ClassVar[dict[str, Any]]

    @classmethod
    def _field_hints(cls) -> dict[str, Any]:
        if "_hints" not in cls.__dict__:
            hints = get_type_hints(cls)
            cls._hints = {item.name: hints[item.name] for item in fields(cls) if item.name != "extra"}  # type: ignore[arg-type]
        return cls._hints

    @classmethod
    def _parse(cls, raw: Mapping[str, Any], prefix: str) -> Self:
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        hints = cls._field_hints()
        for key, value in raw.items():
            if key not in hints or value is None:  # unknown keys and nulls are written back as they were
                extra[key] = copy.deepcopy(value)
                continue
            values[key] = _parse_value(value, hints[key], f"{prefix}{key}")
        return cls(**values, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this record: the keys that are set (not ``None``) and ``extra``.

        Raises:
            TypeError: Naming the key whose value has the wrong type (set by code after loading), so that a save
                never writes metadata its load would refuse.
        """
        data = self._json()
        try:
            type(self)._parse(data, "")
        except _WrongType as error:
            raise TypeError(str(error)) from None
        return data

    def _json(self) -> dict[str, Any]:
        data = copy.deepcopy(self.extra)
        for name in self._field_hints():
            value = getattr(self, name)
            if value is not None:
                data[name] = _dump_value(value)
        return data

    def __repr__(self) -> str:
        items = [f"{name}={getattr(self, name)!r}" for name in self._field_hints() if getattr(self, name) is not None]
        if self.extra:
            items.append(f"extra={self.extra!r}")
        return f"{type(self).__name__}({', '.join(items)})"

    def copy(self) -> Self:
        """A deep copy (changing it leaves this record as it was)."""
        return copy.deepcopy(self)

    def updated(self, **changes: Any) -> Self:
        """A copy with the fields ``changes`` names set (``TypeError`` for a name that is not a field)."""
        return dataclasses.replace(self.copy(), **copy.deepcopy(changes))

    def is_empty(self) -> bool:
        """Whether the record holds nothing (no field set, no extra key)."""
        return not self._json()

    def __bool__(self) -> bool:
        """False for an empty record, as for the dict it stands for."""
        return not self.is_empty()


def _parse_value(value: object, hint: Any, key: str) -> Any:
    """``value`` (from JSON) as the type ``hint`` names, or :class:`_WrongType` naming ``key``."""
    origin = get_origin(hint)
    if origin is Union or origin is types.UnionType:
        options = [option for option in get_args(hint) if option is not type(None)]
        if value is None and len(options) < len(get_args(hint)):
            return None
        (hint,) = options
        origin = get_origin(hint)
    if isinstance(hint, type) and issubclass(hint, _Record):
        if isinstance(value, hint):
            return value
        if not isinstance(value, Mapping):
            raise _WrongType(key, "a JSON object", value)
        return hint._parse(value, f"{key}.")
    if origin is list:
        if not isinstance(value, list | tuple):
            raise _WrongType(key, "a list", value)
        (item_hint,) = get_args(hint)
        return [_parse_value(item, item_hint, f"{key}[{index}]") for index, item in enumerate(value)]
    if origin is dict:
        if not isinstance(value, Mapping) or not all(isinstance(name, str) for name in value):
            raise _WrongType(key, "a JSON object", value)
        _, item_hint = get_args(hint)
        return {name: _parse_value(item, item_hint, f"{key}.{name}") for name, item in value.items()}
    if hint is Any:
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _WrongType(key, "int or float", value)
        return value
    if (isinstance(value, bool) and hint is not bool) or not isinstance(value, hint):
        raise _WrongType(key, hint.__name__, value)
    return value


def _dump_value(value: object) -> Any:
    if isinstance(value, _Record):
        return value._json()
    if isinstance(value, list | tuple):
        return [_dump_value(item) for item in value]
    return copy.deepcopy(value)


@dataclass(kw_only=True, repr=False)
class PCARecord(_Record):
    """``pca``: how the PCA stage reduced the table."""

    level: str | None = None
    """``"sentence"`` or ``"word"``: what the PCA was fitted on."""
    removed_components: int | None = None
    dim: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, repr=False)
class TrainingRecord(_Record):
    """``training``: the refinement run (distillation or contrastive) and its outcome."""

    loss: str | None = None
    steps: int | None = None
    best_step: int | None = None
    batch_size: int | None = None
    learning_rate: float | None = None
    temperature: float | None = None
    best_validation_loss: float | None = None
    """``null`` in the saved file when the run had no validation split (see :meth:`of_run`)."""
    propagated_rows: int | None = None
    """Completed rows moved by the refinement's map (set after the run when the table was completed)."""
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of_run(
        cls,
        *,
        loss: str,
        steps: int,
        best_step: int,
        batch_size: int,
        learning_rate: float,
        temperature: float,
        best_validation_loss: float,
    ) -> TrainingRecord:
        """The record of a finished run; a run without validation (NaN loss) records ``best_validation_loss: null``."""
        record = cls(
            loss=loss,
            steps=steps,
            best_step=best_step,
            batch_size=batch_size,
            learning_rate=learning_rate,
            temperature=temperature,
        )
        if math.isfinite(best_validation_loss):
            record.best_validation_loss = best_validation_loss
        else:
            record.extra["best_validation_loss"] = None
        return record


@dataclass(kw_only=True, repr=False)
class SpeedRecord(_Record):
    """``speed``: the model's encoding speed, as ``st-static card --speed-corpus`` measured it."""

    sentences_per_second: float | None = None
    machine: str | None = None
    texts: str | None = None
    """What was encoded (how many texts, from which file, with which batch size)."""
    teacher_sentences_per_second: float | None = None
    command: str | None = None
    """Read by the card if a builder records it; st-static does not write it."""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, repr=False)
class PruningRecord(_Record):
    """``pruning``: what :func:`st_static.compression.prune_vocabulary` kept."""

    kept_words: int | None = None
    original_words: int | None = None
    ranked_by: str | None = None
    """``"frequencies"``, ``"word_counts"`` or ``"row order"``."""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, repr=False)
class FallbackRecord(_Record):
    """``fallback``: the fallback rows :func:`st_static.add_fallback_rows` gave the table (every text a vector)."""

    characters: int | None = None
    """How many characters got a row (besides the empty-text row)."""
    character_scale: float | None = None
    """A fallback character's row norm (median) over a word row's (median)."""
    empty_text_scale: float | None = None
    """The empty-text row's norm over a word row's (median)."""
    fitted_on: int | None = None
    """Vocabulary words whose teacher vectors fitted the map into the table's space."""
    held_out_cosine: float | None = None
    """Mean cosine of mapped and actual rows of held-out words (how well the map carries the teacher's space)."""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, repr=False)
class ExtendRecord(_Record):
    """One entry of ``extend``: the words :func:`st_static.extend` added from a user's documents."""

    words: int | None = None
    """How many words got a row."""
    files: list[str] | None = None
    """The documents' file names (never their paths), or how texts given in memory were described."""
    min_count: int | None = None
    """The fewest occurrences in the documents that gave a word a row."""
    fitted_on: int | None = None
    """Known words whose teacher vectors fitted the map into the table's space."""
    held_out_cosine: float | None = None
    """Mean cosine of mapped and actual rows of held-out known words."""
    norm: str | None = None
    """How the new rows were scaled (see :mod:`st_static.extraction.extend`)."""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, repr=False)
class SecondTeacherRecord(_Record):
    """``second_teacher``: the teacher whose similarities the distillation mixed in (``--second-teacher``)."""

    teacher: str | None = None
    """Hub id of the second teacher, or a local teacher's folder name."""
    prompt: str | None = None
    weight: float | None = None
    """Its share of the distilled targets (the first teacher has the rest)."""
    mix: str | None = None
    """How the targets mixed: ``distributions`` (each teacher's neighbour distribution) or ``cosines`` (``None``:
    a table built before the setting, cosines)."""
    sentences: int | None = None
    """Distillation sentences it encoded."""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, repr=False)
class PiecesRecord(_Record):
    """``pieces``: the subword-piece rows :func:`st_static.add_piece_rows` gave the table (what unknown words read)."""

    pieces: int | None = None
    """How many pieces got a row."""
    used: int | None = None
    """How many of them some vocabulary word's cut uses (all, in tables built since unused pieces are dropped; the
    others are zero rows)."""
    fitted_on: int | None = None
    """Vocabulary words whose cut (prefix and pieces) fitted the rows."""
    ridge: float | None = None
    held_out_cosine_prefix: float | None = None
    """Mean cosine of held-out words' rows to their prefix's row alone (the rule without pieces)."""
    held_out_cosine: float | None = None
    """Mean cosine of held-out words' rows to their prefix's row plus their pieces' rows."""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, repr=False)
class MeaningMapRecord(_Record):
    """``meaning_map``: the disentangler's meaning map folded into the table
    (:func:`st_static.training.disentangle_table`): every row ``r`` became ``W r``, so the table holds the meaning
    parts of its texts."""

    constraints: str | None = None
    """``intra``, ``inter`` or ``both``: the constraint families it was trained with."""
    language_weight: float | None = None
    """The weight of ``L_lang`` within the intra-component constraints."""
    languages: list[str] | None = None
    """The languages of its translation pairs, the pivot first."""
    files: list[str] | None = None
    """The translation-pair files' names (never their paths)."""
    pairs: int | None = None
    """Translation pairs it trained on (the validation pairs not counted)."""
    validation_pairs: int | None = None
    epochs: int | None = None
    """Epochs it ran (early stopping included)."""
    best_epoch: int | None = None
    """The epoch of the lowest validation loss, whose map was folded in (0: the identity)."""
    best_validation_loss: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, repr=False)
class FoldedNormsRecord(_Record):
    """``ensemble.folded``: the per-block scales :func:`st_static.compression.fold_block_normalization` folded in."""

    block_scales: list[float] | None = None
    texts: int | None = None
    """How many texts the block norms were measured on."""
    score_differences: dict[str, float] | None = None
    """Folded minus exact (per-member normalisation) on evaluation tasks, x100, where measured
    (``st-static compress --fold-norms ... --eval-data``)."""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, repr=False)
class EnsembleMember(_Record):
    """One entry of ``ensemble.members``: what an ensemble keeps of a member model."""

    name: str | None = None
    """The member as it was given: a folder's name, a Hub repo id or ``wordllama:CONFIG:DIM``."""
    kind: str | None = None
    """``st-static``, ``model2vec``, ``static-embedding`` or ``wordllama``."""
    license: str | None = None
    teacher: str | None = None
    stages: list[str] | None = None
    vocab_size: int | None = None
    embedding_dim: int | None = None
    num_words: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, repr=False)
class EnsembleRecord(_Record):
    """``ensemble``: how :func:`st_static.compression.ensemble` concatenated its members."""

    block_dims: list[int] | None = None
    block_weights: list[float] | None = None
    members: list[EnsembleMember] | None = None
    folded: FoldedNormsRecord | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, repr=False)
class ModelMetadata(_Record):
    """Everything a model records about itself (see DEVELOPING.md, "Model metadata").

    Read and set fields by attribute (``module.metadata.teacher``). :meth:`from_dict` parses the saved JSON object,
    :meth:`to_dict` gives it back. Dict-style reading (``metadata["teacher"]``, ``metadata.get("stages")``) still
    works, with a ``DeprecationWarning``; it returns the JSON form of the value.
    """

    teacher: str | None = None
    """Hub id of the teacher, or a local teacher's folder name (never a path of the machine that built it)."""
    teacher_dim: int | None = None
    prompt: str | None = None
    """The prompt the teacher read the corpus with (``""`` for none)."""
    languages: list[str] | None = None
    corpus: str | None = None
    """The training files' names, comma-separated (or how an in-memory corpus was described)."""
    parallel: list[str] | None = None
    """The translation-pair files' names (with as many folders as tell files of one name apart)."""
    extra_pairs: list[str] | None = None
    keep_sources: list[str] | None = None
    """Globs of the pair sources kept (``--keep-sources``) of pair files with a ``.source.txt``."""
    leave_out_sources: list[str] | None = None
    """Globs of the pair sources left out (``--leave-out-sources``)."""
    training_leave_out_sources: list[str] | None = None
    """Globs of the pair sources the contrastive training left out (``--training-leave-out-sources``)."""
    vocab_size: int | None = None
    sentences_per_word: int | None = None
    stages: list[str] | None = None
    """Finished stages, in order: extraction, completion, pca, distillation or contrastive (an ensemble: ensemble)."""
    pca: PCARecord | None = None
    training: TrainingRecord | None = None
    speed: SpeedRecord | None = None
    build_command: str | None = None
    license: str | None = None
    """Overrides the teacher's licence on the card. Set by a builder; st-static never writes it."""
    data_license: str | None = None
    quantization: str | None = None
    pruning: PruningRecord | None = None
    word_counts: list[float] | None = None
    """Counts aligned with the table's rows, which pruning ranks by. Set by a builder; pruning keeps it aligned."""
    ensemble: EnsembleRecord | None = None
    truncated_from_dim: int | None = None
    fallback: FallbackRecord | None = None
    second_teacher: SecondTeacherRecord | None = None
    pieces: PiecesRecord | None = None
    extend: list[ExtendRecord] | None = None
    """What each :func:`st_static.extend` added, in order."""
    meaning_map: MeaningMapRecord | None = None
    """The disentangler's meaning map folded into the table (``st-static disentangle``, ``build --disentangle``)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Keys this st-static does not know (and known keys that held ``null``), written back unchanged."""

    __iter__ = None  # not a mapping: ``for key in metadata`` must not fall back on __getitem__

    @classmethod
    def from_dict(cls, raw: object, source: str = "metadata") -> ModelMetadata:
        """Parse the saved JSON object (or copy a ``ModelMetadata``), checking every known key's type.

        Args:
            raw: The ``metadata`` object of ``st_static_config.json`` (``None`` for none), or a ``ModelMetadata``.
            source: What the error names as the metadata's origin (the folder and file it was read from).

        Raises:
            ModelFolderError: ``"{source}: metadata key 'teacher_dim' must be int, got str."``, naming the first key
                (a dotted path for nested keys) whose value has the wrong type, or saying that ``raw`` is not an
                object.
        """
        if isinstance(raw, ModelMetadata):
            return raw.copy()
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise ModelFolderError(f"{source}: the metadata must be a JSON object, got {_json_type(raw)}.")
        try:
            return cls._parse(raw, "")
        except _WrongType as error:
            raise ModelFolderError(f"{source}: {error}.") from None

    # -------------------------------------------------------------------------------- stages
    def has_stage(self, stage: str) -> bool:
        """Whether ``stage`` is among the finished stages."""
        return stage in (self.stages or [])

    def add_stage(self, stage: str) -> None:
        """Record ``stage`` as finished (once, at the end of the list)."""
        stages = list(self.stages or [])
        if stage not in stages:
            stages.append(stage)
        self.stages = stages

    def with_stage(self, stage: str, **updates: Any) -> ModelMetadata:
        """A copy with ``stage`` finished and the fields ``updates`` names set."""
        copied = self.updated(**updates)
        copied.add_stage(stage)
        return copied

    def merged(self, other: ModelMetadata) -> ModelMetadata:
        """A copy with every field ``other`` sets (and its extra keys) taken from ``other``."""
        copied = self.copy()
        copied.extra.update(copy.deepcopy(other.extra))
        for item in fields(other):
            value = getattr(other, item.name)
            if item.name != "extra" and value is not None:
                setattr(copied, item.name, copy.deepcopy(value))
                copied.extra.pop(item.name, None)
        return copied

    # -------------------------------------------------------------------------------- deprecated dict reading
    def __getitem__(self, key: str) -> Any:
        _warn_dict_access("metadata[key]")
        return self.to_dict()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """Deprecated: read ``metadata.<key>`` (an attribute) instead. The JSON form of the value, or ``default``."""
        _warn_dict_access("metadata.get(key)")
        return self.to_dict().get(key, default)

    def __contains__(self, key: object) -> bool:
        _warn_dict_access("key in metadata")
        return key in self.to_dict()


def _warn_dict_access(what: str) -> None:
    warnings.warn(
        f"{what} is deprecated: StaticWordAverage.metadata is a ModelMetadata now; read its fields as attributes "
        "(metadata.teacher, metadata.training.loss) or use metadata.to_dict() for the JSON object.",
        DeprecationWarning,
        stacklevel=3,
    )
