"""The facts a static model keeps about itself (``StaticWordAverage.metadata``, saved in ``st_static_config.json``).

:class:`ModelMetadata` is the one typed record of them: parsed once from the saved JSON
(:meth:`ModelMetadata.from_dict`, which checks every key's type), read and written by attribute, and turned back into
the JSON object it came from by :meth:`ModelMetadata.to_dict`. No other code reads or writes metadata by key.

Every field is optional (``None`` when the model does not record it): a model made by hand may know nothing about
itself, and a build adds keys stage by stage. ``to_dict`` writes only the keys that are set, plus ``extra``: the
keys this st-static does not know (a newer one may have written them), kept and written back unchanged, together
with known keys that held ``null``. The nested records (``pca``, ``training``, ``speed``, ``pruning``, ``ensemble``
and its ``members`` and ``folded``, ``fallback``, the ``extend`` entries, ``meaning_map``, ``second_pass``) work the
same way.

The nested records and what every record shares are :mod:`st_static.model.metadata_records`; every name of it is
importable from here too.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from st_static.errors import ModelFolderError
from st_static.model.metadata_records import (
    EnsembleMember,
    EnsembleRecord,
    ExtendRecord,
    FallbackRecord,
    FoldedNormsRecord,
    MeaningMapRecord,
    PCARecord,
    PiecesRecord,
    PruningRecord,
    Record,
    SecondPassRecord,
    SecondTeacherRecord,
    SpeedRecord,
    TrainingRecord,
    WrongType,
    json_type,
)

__all__ = [
    "EnsembleMember",
    "EnsembleRecord",
    "ExtendRecord",
    "FallbackRecord",
    "FoldedNormsRecord",
    "MeaningMapRecord",
    "ModelMetadata",
    "PCARecord",
    "PiecesRecord",
    "PruningRecord",
    "SecondPassRecord",
    "SecondTeacherRecord",
    "SpeedRecord",
    "TrainingRecord",
]


@dataclass(kw_only=True, repr=False)
class ModelMetadata(Record):
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
    language_vocab_sizes: dict[str, int] | None = None
    """The largest vocabulary of the languages the build named (``--language-vocab-sizes``)."""
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
    second_pass: SecondPassRecord | None = None
    """The contrastive training continued on chosen pairs after the refinement (``build --second-pass-pairs``)."""
    soup_seeds: list[int] | None = None
    """The seeds whose refined tables were averaged into this one, the build's own first (``build --soup-seeds``)."""
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
            raise ModelFolderError(f"{source}: the metadata must be a JSON object, got {json_type(raw)}.")
        try:
            return cls._parse(raw, "")
        except WrongType as error:
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
