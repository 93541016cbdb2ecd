"""The nested records of a model's metadata (``pca``, ``training``, ``speed``, ``pruning``, ``ensemble`` and its
``members`` and ``folded``, ``fallback``, ``second_teacher``, ``pieces``, the ``extend`` entries, ``meaning_map``,
``second_pass``) and what every record shares (:class:`Record`): parsing its JSON object with every known key's type
checked, writing back the keys that are set plus ``extra``. :class:`~st_static.model.metadata.ModelMetadata` is the
record that holds them; every name here is importable from :mod:`st_static.model.metadata` too.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import types
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Self, Union, get_args, get_origin, get_type_hints


class WrongType(Exception):
    """A value of the wrong type at ``key`` (a dotted path such as ``training.steps`` or ``languages[1]``)."""

    def __init__(self, key: str, expected: str, value: object) -> None:
        super().__init__(f"metadata key {key!r} must be {expected}, got {json_type(value)}")


def json_type(value: object) -> str:
    """How an error names the JSON type of ``value``."""
    if value is None:
        return "null"
    return {dict: "a JSON object", list: "a list"}.get(type(value), type(value).__name__)


class Record:
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
            values[key] = parse_value(value, hints[key], f"{prefix}{key}")
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
        except WrongType as error:
            raise TypeError(str(error)) from None
        return data

    def _json(self) -> dict[str, Any]:
        data = copy.deepcopy(self.extra)
        for name in self._field_hints():
            value = getattr(self, name)
            if value is not None:
                data[name] = dump_value(value)
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


def parse_value(value: object, hint: Any, key: str) -> Any:
    """``value`` (from JSON) as the type ``hint`` names, or :class:`WrongType` naming ``key``."""
    origin = get_origin(hint)
    if origin is Union or origin is types.UnionType:
        options = [option for option in get_args(hint) if option is not type(None)]
        if value is None and len(options) < len(get_args(hint)):
            return None
        (hint,) = options
        origin = get_origin(hint)
    if isinstance(hint, type) and issubclass(hint, Record):
        if isinstance(value, hint):
            return value
        if not isinstance(value, Mapping):
            raise WrongType(key, "a JSON object", value)
        return hint._parse(value, f"{key}.")
    if origin is list:
        if not isinstance(value, list | tuple):
            raise WrongType(key, "a list", value)
        (item_hint,) = get_args(hint)
        return [parse_value(item, item_hint, f"{key}[{index}]") for index, item in enumerate(value)]
    if origin is dict:
        if not isinstance(value, Mapping) or not all(isinstance(name, str) for name in value):
            raise WrongType(key, "a JSON object", value)
        _, item_hint = get_args(hint)
        return {name: parse_value(item, item_hint, f"{key}.{name}") for name, item in value.items()}
    if hint is Any:
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise WrongType(key, "int or float", value)
        return value
    if (isinstance(value, bool) and hint is not bool) or not isinstance(value, hint):
        raise WrongType(key, hint.__name__, value)
    return value


def dump_value(value: object) -> Any:
    """``value`` as JSON data (a record as its JSON object)."""
    if isinstance(value, Record):
        return value._json()
    if isinstance(value, list | tuple):
        return [dump_value(item) for item in value]
    return copy.deepcopy(value)


@dataclass(kw_only=True, repr=False)
class PCARecord(Record):
    """``pca``: how the PCA stage reduced the table."""

    level: str | None = None
    """``"sentence"`` or ``"word"``: what the PCA was fitted on."""
    removed_components: int | None = None
    dim: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, repr=False)
class TrainingRecord(Record):
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
class SpeedRecord(Record):
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
class PruningRecord(Record):
    """``pruning``: what :func:`st_static.compression.prune_vocabulary` kept."""

    kept_words: int | None = None
    original_words: int | None = None
    ranked_by: str | None = None
    """``"frequencies"``, ``"word_counts"`` or ``"row order"``."""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, repr=False)
class FallbackRecord(Record):
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
class ExtendRecord(Record):
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
class SecondTeacherRecord(Record):
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
class PiecesRecord(Record):
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
class MeaningMapRecord(Record):
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
class SecondPassRecord(TrainingRecord):
    """``second_pass``: the contrastive training continued after the refinement on chosen translation pairs
    (``build --second-pass-pairs``): its run, as ``training`` records one, and its files; ``training`` keeps the
    refinement's own record."""

    files: list[str] | None = None
    """The translation-pair files' names (never their paths)."""

    @classmethod
    def of(cls, run: TrainingRecord, files: list[str]) -> SecondPassRecord:
        """The record of ``run`` (every key it holds, its extra keys too) with ``files``."""
        values = {item.name: copy.deepcopy(getattr(run, item.name)) for item in fields(TrainingRecord)}
        return cls(**values, files=list(files))


@dataclass(kw_only=True, repr=False)
class FoldedNormsRecord(Record):
    """``ensemble.folded``: the per-block scales :func:`st_static.compression.fold_block_normalization` folded in."""

    block_scales: list[float] | None = None
    texts: int | None = None
    """How many texts the block norms were measured on."""
    score_differences: dict[str, float] | None = None
    """Folded minus exact (per-member normalisation) on evaluation tasks, x100, where measured
    (``st-static compress --fold-norms ... --eval-data``)."""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, repr=False)
class EnsembleMember(Record):
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
class EnsembleRecord(Record):
    """``ensemble``: how :func:`st_static.compression.ensemble` concatenated its members."""

    block_dims: list[int] | None = None
    block_weights: list[float] | None = None
    members: list[EnsembleMember] | None = None
    folded: FoldedNormsRecord | None = None
    extra: dict[str, Any] = field(default_factory=dict)
