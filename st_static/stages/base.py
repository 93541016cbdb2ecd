"""The shape every build stage shares, the state they pass down, and the timer that scores each stage.

A stage (:class:`Stage`) says whether it runs in a build (``applies``) and runs (``run``), leaving what the later
stages read on the :class:`Build`. A stage kept on disk (:class:`FolderStage`, all but the storage) also computes its
key from the key of the stage it reads, ``asdict`` of its own settings and the content of its inputs (``key``), names
its folder in the work folder ``LABEL-KEY`` (``folder``) and runs there (``run_in``), reusing a finished folder and
resuming an interrupted one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import resource
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from sentence_transformers import SentenceTransformer

from st_static.distributed import is_first_process
from st_static.extraction.corpus import CorpusSource, corpus_files, corpus_name
from st_static.extraction.pair_sources import SourceFilter
from st_static.files import write_json_atomically
from st_static.model.metadata import ModelMetadata
from st_static.model.save_load import load_model
from st_static.settings import BuildSettings, ExtractionSettings
from st_static.stages.extraction_folder import ExtractionStage  # the folder reader: imports no stage

if TYPE_CHECKING:
    from st_static.extraction.long_texts import LongTexts
    from st_static.extraction.multilingual import MultilingualCorpus
    from st_static.extraction.target_mix import SecondTeacherTargets

Evaluator = Callable[[SentenceTransformer], dict[str, dict[str, Any]]]
"""Scores a model: task name -> result with ``metric`` and ``score`` (x100), as ``st_static.evaluation`` gives."""

KEYED_ELSEWHERE = {
    "completion": ("complete_words", "complete_spaceless"),
    "long texts": ("long_texts", "long_text_sentences"),
    "second teacher": (
        "second_teacher",
        "second_teacher_prompt",
        "second_teacher_sentences",
        "second_teacher_weight",
        "second_teacher_mix",
    ),
    "after the refinement": ("fallback_rows", "piece_rows", "storage"),  # each keys its own folder only
}
"""``ExtractionSettings`` fields that key a later stage, not the extraction (the second teacher's weight and mix key
the refinement)."""


def stage_key(*parts: object) -> str:
    """A short hash of everything a stage depends on."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


def stage_settings(settings: ExtractionSettings, stage: str) -> dict[str, Any]:
    """``asdict`` of the ``ExtractionSettings`` fields that key ``stage`` (a key of :data:`KEYED_ELSEWHERE`)."""
    values = asdict(settings)
    return {name: values[name] for name in KEYED_ELSEWHERE[stage]}


def peak_memory_mib() -> float:
    """Peak resident memory of this process so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class BackgroundTrainings(Protocol):
    """Trainings running in child processes (a soup's other seeds, :class:`st_static.stages.soup.SeedChildren`)."""

    def finish(self, at_once: int) -> None:
        """Run every training to its end, ``at_once`` at a time."""

    def stop(self) -> None:
        """Stop every training still running."""


@dataclass
class Build:
    """One build as its stages see it: its inputs, then what each stage left for the later ones."""

    settings: BuildSettings
    work_dir: Path
    corpus: CorpusSource | None = None
    metadata: ModelMetadata | None = None
    """Extra metadata for the refined model (``build_command``; the second teacher's record)."""
    keys: dict[str, str] = field(default_factory=dict)
    """Stage name -> the key of its folder, for every stage keyed so far."""
    multilingual: MultilingualCorpus | None = None
    extraction: ExtractionStage | None = None
    """The raw table with its targets: the extraction's folder, or the completion's when it ran."""
    reduced: SentenceTransformer | None = None
    long_texts: LongTexts | None = None
    second_targets: SecondTeacherTargets | None = None
    refined_path: Path | None = None
    """The refinement's folder (the model with ``training/``)."""
    second_pass_path: Path | None = None
    """The second contrastive pass's folder (the model with ``training/``), when it ran."""
    soup_path: Path | None = None
    """The seed soup's folder (the averaged model), when it ran."""
    beside_training: Callable[[Build], None] | None = None
    """Starts what trains beside the refinement's training when the refinement stage trains (a soup's other seeds,
    in :attr:`background_trainings`); the pipeline sets it."""
    background_trainings: BackgroundTrainings | None = None
    """Trainings started in child processes that a later stage awaits (a soup's other seeds)."""
    model: SentenceTransformer | None = None
    """The latest stage's model."""
    model_path: Path | None = None
    """The folder of the latest saved model (the one the fallback and pieces stages read)."""

    def extracted(self) -> ExtractionStage:
        """The raw table's folder (raises unless the extraction ran)."""
        if self.extraction is None:
            raise RuntimeError("the stages ran out of order: no extraction yet")
        return self.extraction

    def refined(self) -> Path:
        """The refinement's folder (raises unless the refinement ran)."""
        if self.refined_path is None:
            raise RuntimeError("the stages ran out of order: no refinement yet")
        return self.refined_path

    def trained(self) -> Path:
        """The trained table's folder, which the fallback and pieces stages read: the soup's when it ran, else the
        second pass's when it ran, else the refinement's."""
        return self.soup_path or self.second_pass_path or self.refined()

    @property
    def trained_key(self) -> str:
        """The key of :meth:`trained`'s stage."""
        return self.keys.get("soup", self.keys.get("second pass", self.keys["refinement"]))

    @property
    def table_key(self) -> str:
        """The key of the raw table the later stages read: the completion's when it ran, else the extraction's."""
        return self.keys.get("completion", self.keys["extraction"])

    def recorded_inputs(self) -> ModelMetadata:
        """Metadata naming the build's inputs by file name (never a path of this machine), plus ``metadata``."""
        settings = self.settings
        parallel = [path for paths in settings.parallel_files().values() for path in paths]
        extra = list((settings.extra_pairs or {}).values())
        names = distinct_file_names([*parallel, *extra])
        corpus = [corpus_name(self.corpus)] if self.corpus is not None else []
        recorded = ModelMetadata(
            corpus=", ".join([*corpus, *names[: len(parallel)]]),
            parallel=names[: len(parallel)] or None,
            extra_pairs=names[len(parallel) :] or None,
            keep_sources=settings.keep_sources or None,
            leave_out_sources=settings.leave_out_sources or None,
            training_leave_out_sources=settings.training_leave_out_sources or None,
            language_vocab_sizes=settings.extraction.language_vocab_sizes or None,
            data_license=settings.data_license or None,
        )
        return recorded.merged(self.metadata) if self.metadata is not None else recorded

    def record_inputs(self, model: SentenceTransformer) -> SentenceTransformer:
        """``model`` with :meth:`recorded_inputs` merged into its metadata."""
        model[0].metadata = model[0].metadata.merged(self.recorded_inputs())
        return model


def prepare_build(
    settings: BuildSettings,
    work_dir: Path,
    corpus: CorpusSource | None = None,
    metadata: ModelMetadata | None = None,
) -> Build:
    """The build the stages run: the corpus files read through the source filter, the teachers' prompts resolved."""
    if corpus is None and settings.corpus:
        corpus = corpus_files(settings.corpus, SourceFilter.of(settings.keep_sources, settings.leave_out_sources))
    settings = dataclasses.replace(
        settings, extraction=settings.extraction.with_teacher_prompt().with_second_teacher_prompt()
    )
    return Build(settings=settings, work_dir=work_dir, corpus=corpus, metadata=metadata)


class Stage(ABC):
    """One stage of a build: whether it runs, its label, its run."""

    name: ClassVar[str]
    """The stage's name: its entry in ``Build.keys`` (and by default its label)."""

    def applies(self, build: Build) -> bool:
        """Whether the stage runs in this build."""
        return True

    def label(self, build: Build) -> str:
        """The stage's name in the scores and timings (and its folder's, ``-`` for spaces)."""
        return self.name

    @abstractmethod
    def run(self, build: Build) -> SentenceTransformer | Path | None:
        """Run the stage, leave its results on ``build``; return the model to score, if any."""


SECONDS_FILE_NAME = "stage_seconds.json"
"""Written in a stage's folder when the build makes it from nothing: the seconds it took."""


class FolderStage(Stage):
    """A stage kept in a folder of the work folder, ``LABEL-KEY``: reused when finished, resumed when not."""

    @abstractmethod
    def key(self, build: Build) -> str:
        """A hash of everything the stage depends on (:func:`stage_key`)."""

    def folder(self, build: Build) -> Path:
        """Key the stage (recorded in ``build.keys``) and return its folder."""
        build.keys[self.name] = self.key(build)
        return self.keyed_folder(build)

    def keyed_folder(self, build: Build) -> Path:
        """The folder of the key :meth:`folder` recorded."""
        return build.work_dir / f"{self.label(build).replace(' ', '-')}-{build.keys[self.name]}"

    def run(self, build: Build) -> SentenceTransformer | Path | None:
        """Run in the stage's folder; one made from nothing records the seconds it took (:data:`SECONDS_FILE_NAME`)."""
        folder = self.folder(build)
        made_here = not folder.exists()
        started = time.perf_counter()
        result = self.run_in(build, folder)
        if made_here and folder.is_dir() and is_first_process():
            write_json_atomically(folder / SECONDS_FILE_NAME, {"seconds": time.perf_counter() - started})
        return result

    def seconds_from_empty(self, build: Build) -> float | None:
        """The seconds the stage's folder took to make from nothing, as recorded when it was made; ``None`` for a
        folder made before the record existed or resumed after an interruption."""
        path = self.keyed_folder(build) / SECONDS_FILE_NAME
        if not path.is_file():
            return None
        return float(json.loads(path.read_text(encoding="utf-8"))["seconds"])

    @abstractmethod
    def run_in(self, build: Build, folder: Path) -> SentenceTransformer | Path | None:
        """Make (or reuse) ``folder``, leave the stage's results on ``build``; return the model to score, if any."""


class StageTimer:
    """Times the stages of one build and scores the model each one leaves."""

    def __init__(self, evaluate: Evaluator | None) -> None:
        self.evaluate = evaluate
        self.seconds: dict[str, float] = {}
        self.scores: dict[str, dict[str, dict[str, Any]]] = {}

    def finished(
        self, name: str, started: float, model: SentenceTransformer | Path | None, from_empty: float | None = None
    ) -> None:
        self.seconds[name] = time.perf_counter() - started if from_empty is None else from_empty
        if self.evaluate is not None and model is not None:
            self.scores[name] = self.evaluate(load_model(model) if isinstance(model, Path) else model)

    def run(self, build: Build, stages: Sequence[Stage]) -> None:
        """Run the stages that apply to ``build``, in order. A stage whose folder was reused counts the seconds it
        took when it was made, so the build's seconds are those of a build from an empty work folder."""
        for stage in stages:
            if stage.applies(build):
                started = time.perf_counter()
                model = stage.run(build)
                from_empty = stage.seconds_from_empty(build) if isinstance(stage, FolderStage) else None
                self.finished(stage.label(build), started, model, from_empty)


def plan_folders(build: Build, stages: Sequence[Stage]) -> dict[str, Path]:
    """The folder of every stage kept in one that applies to ``build``, keyed without running any (label ->
    folder)."""
    return {
        stage.label(build): stage.folder(build)
        for stage in stages
        if isinstance(stage, FolderStage) and stage.applies(build)
    }


def distinct_file_names(paths: Sequence[str]) -> list[str]:
    """Each path's shortest tail of folders + file name that tells it apart from the others (``en-de.tsv`` and
    ``extra/en-de.tsv``): names a model may record, never a path of this machine."""
    parts = [Path(os.path.abspath(path)).parts[1:] for path in paths]
    names = []
    for index, path_parts in enumerate(parts):
        others = [other for position, other in enumerate(parts) if position != index]
        length = 1
        while length < len(path_parts) and any(other[-length:] == path_parts[-length:] for other in others):
            length += 1
        names.append("/".join(path_parts[-length:]))
    return names
