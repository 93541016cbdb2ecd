"""The build's stages in order (:mod:`st_static.stages`, one module each), each cached in its own folder of a work
directory.

extraction (-> completion) -> PCA/ABTT (-> long texts, second teacher) -> refinement (-> second contrastive pass -> soup
-> fallback rows -> pieces -> disentangle -> storage). A stage's folder is named by a hash of what it depends on:
the previous stage's key, ``asdict`` of its own settings and the content of the inputs it reads. A re-run with the same
settings reuses finished stages (and resumes an interrupted teacher pass), while a changed setting or an edited input
redoes only the stages it feeds.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sentence_transformers import SentenceTransformer

from st_static.extraction.completion import frequent_words
from st_static.extraction.corpus import CorpusSource
from st_static.extraction.pair_sources import SourceFilter
from st_static.extraction.teacher_model import load_teacher_tokenizer
from st_static.model.metadata import ModelMetadata
from st_static.model.script_coverage import ScriptRows, coverage_line, table_script_coverage, uncovered_scripts
from st_static.model.static_word_average import StaticWordAverage
from st_static.pipeline.input_checks import check_dimensions, check_input_files
from st_static.settings import BuildSettings
from st_static.stages.base import (
    Build,
    Evaluator,
    Stage,
    StageTimer,
    distinct_file_names,
    peak_memory_mib,
    prepare_build,
    stage_key,
)
from st_static.stages.completion import completes
from st_static.stages.disentangle import Disentangle
from st_static.stages.extraction import check_prompt_length, pair_file_digests
from st_static.stages.fallback import Fallback, fallback_version
from st_static.stages.order import TRAINING_STAGES
from st_static.stages.pieces import Pieces, pieces_version
from st_static.stages.refinement import TRAINING_FOLDER
from st_static.stages.soup import Soup, start_seeds_beside_own_training, stop_seeds
from st_static.stages.storage import Storage
from st_static.teachers import teacher_dimension
from st_static.training.records import HISTORY_FILE_NAME

__all__ = [
    "STAGES",
    "TRAINING_FOLDER",
    "Evaluator",
    "PipelineResult",
    "distinct_file_names",
    "fallback_version",
    "pair_file_digests",
    "pieces_version",
    "prepare_build",
    "run_pipeline",
    "stage_key",
    "with_overrides",
]

logger = logging.getLogger(__name__)

STAGES: tuple[Stage, ...] = (
    *TRAINING_STAGES,
    Soup(),
    Fallback(),
    Pieces(),
    Disentangle(),
    Storage(),
)
"""Every stage of a build, in the order they run (each runs when it applies to the build's settings)."""


@dataclass
class PipelineResult:
    """What the stages produced."""

    model: SentenceTransformer
    """The refined model."""
    folder: Path
    """The refinement stage's folder (the model's files, with ``training/``)."""
    work_dir: Path
    second_pass_folder: Path | None = None
    """The second contrastive pass's folder (with its ``training/``), when it ran."""
    stage_scores: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    training: dict[str, Any] = field(default_factory=dict)
    vocabulary: dict[str, Any] = field(default_factory=dict)
    """Words of the table: ``corpus`` (kept from the corpus), for a cross-lingual table ``per_language`` (the entries
    each language gave), and, when completion ran, ``completion`` (its report)."""
    scripts: dict[str, ScriptRows] = field(default_factory=dict)
    """The finished table's rows per script (:mod:`st_static.model.script_coverage`)."""


def run_pipeline(
    settings: BuildSettings,
    work_dir: Path,
    *,
    corpus: CorpusSource | None = None,
    evaluate: Evaluator | None = None,
    metadata: ModelMetadata | None = None,
) -> PipelineResult:
    """Run (or reuse) every stage of a build in ``work_dir`` and return the refined model.

    Args:
        settings: What to build.
        work_dir: The stage cache (its lock must be held by the caller).
        corpus: The first language's sentences when they are not the files ``settings.corpus`` (a list of str or
            a ``datasets`` dataset).
        evaluate: Scores the model after each stage.
        metadata: Extra metadata for the refined model (e.g. ``build_command``).

    Raises:
        CorpusError, TeacherError, SettingsError: Before any heavy work, for unusable inputs.
    """
    build = prepare_build(settings, work_dir, corpus, metadata)
    if settings.refinement.soup_seeds:
        build.beside_training = start_seeds_beside_own_training
    _check_inputs(build)
    timer = StageTimer(evaluate)
    try:
        timer.run(build, STAGES)
    finally:
        stop_seeds(build)  # a stage after the refinement failed or was interrupted while a soup's seeds trained
    if build.model is None:
        raise RuntimeError("the build's stages left no model")
    refined_path = build.refined()
    training = json.loads((refined_path / TRAINING_FOLDER / HISTORY_FILE_NAME).read_text(encoding="utf-8"))
    logger.info("Stages done in %.0f s (peak memory %.0f MiB).", sum(timer.seconds.values()), peak_memory_mib())
    scripts = report_scripts(build.model, build.settings.languages)
    stats = build.extracted().stats
    per_language = stats.get("vocabulary", {}).get("per_language")
    return PipelineResult(
        model=build.model,
        folder=refined_path,
        work_dir=work_dir,
        second_pass_folder=build.second_pass_path,
        stage_scores=timer.scores,
        seconds=timer.seconds,
        training=training,
        vocabulary={
            "corpus": stats.get("words_kept"),
            **({"per_language": per_language} if per_language else {}),
            **({"completion": stats["completion"]} if "completion" in stats else {}),
        },
        scripts=scripts,
    )


def report_scripts(model: SentenceTransformer, languages: list[str]) -> dict[str, ScriptRows]:
    """Log the table's rows per script (one line) and warn about each script of ``languages`` none of whose letters
    reads a row on its own; return the rows per script (none for a model that is not a static table)."""
    module = model[0] if len(model) else None
    if not isinstance(module, StaticWordAverage):
        return {}
    coverage = table_script_coverage(module)
    logger.info(coverage_line(coverage))
    for script, written_in in uncovered_scripts(coverage, languages).items():
        logger.warning(
            "No row of the table reads a letter of the %s script on its own (no one-letter word, no fallback row): "
            "text in %s whose words the table lacks reads only the empty text's row (keep --fallback-rows, the "
            "default).",
            script,
            "/".join(written_in),
        )
    return coverage


def _check_inputs(build: Build) -> None:
    """Refuse unusable inputs before any heavy work: files, teachers, prompt, dimensions, wordfreq."""
    settings, corpus = build.settings, build.corpus
    logger.info("Teacher prompt: %r.", settings.extraction.prompt)
    sizes = check_input_files(settings, corpus, SourceFilter.of(settings.keep_sources, settings.leave_out_sources))
    if settings.extraction.second_teacher is not None:  # files first: they are checked before any teacher loads
        load_teacher_tokenizer(settings.extraction.second_teacher)  # a missing second teacher fails now too
        logger.info("Second teacher prompt: %r.", settings.extraction.second_teacher_prompt)
    teacher_tokenizer = load_teacher_tokenizer(settings.extraction.teacher)  # a missing teacher fails now
    check_prompt_length(settings.extraction, teacher_tokenizer)
    check_dimensions(settings, teacher_dimension(settings.extraction.teacher), sizes)
    if completes(settings) and not settings.crosslingual:
        frequent_words(settings.languages[0], 1)  # so does a missing wordfreq


def with_overrides(settings: BuildSettings, **overrides: Any) -> BuildSettings:
    """A copy of ``settings`` with fields of any stage replaced by name (``dim=128, steps=500``)."""
    flat: dict[str, Any] = {}
    for item in dataclasses.fields(settings):
        value = getattr(settings, item.name)
        if dataclasses.is_dataclass(value):
            flat.update(asdict(value))
        else:
            flat[item.name] = value
    return BuildSettings.from_flat(**{**flat, **overrides})
