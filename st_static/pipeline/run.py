"""The build's stages in order, each cached in its own folder of a work directory.

extraction (-> completion of Chinese/Japanese tokens) -> PCA/ABTT -> refinement (-> fallback rows). A stage's
folder is named by a hash of what it depends on: the previous stage's key, ``asdict`` of its own settings and the
content of the inputs it reads. A re-run with the same settings reuses finished stages (and resumes an interrupted
teacher pass), while a changed setting or an edited input redoes only the stages it feeds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sentence_transformers import SentenceTransformer

from st_static.distributed import barrier, is_first_process
from st_static.extraction.completion import frequent_words
from st_static.extraction.corpus import (
    CorpusSource,
    corpus_digest,
    corpus_files,
    corpus_name,
    iter_sentences,
)
from st_static.extraction.long_texts import LongTexts, run_long_texts
from st_static.extraction.multilingual import (
    MultilingualCorpus,
    build_multilingual_vocabulary,
    read_multilingual_corpus,
)
from st_static.extraction.pair_sources import (
    SourceFilter,
    read_pairs,
    source_file,
)
from st_static.extraction.stages import (
    ExtractionStage,
    check_prompt_length,
    peak_memory_mib,
    run_completion,
    run_extraction,
    run_fallback,
    run_pieces,
    run_reduction,
)
from st_static.extraction.target_mix import SAMPLE_FILE, SecondTeacherTargets, run_second_teacher
from st_static.extraction.teacher_model import load_teacher, load_teacher_tokenizer, teacher_precision
from st_static.files import content_digest, staged_folder
from st_static.model.languages import has_spaceless_language
from st_static.model.metadata import ModelMetadata, SecondTeacherRecord
from st_static.model.save_load import load_model, write_model
from st_static.pipeline.input_checks import check_dimensions, check_input_files
from st_static.settings import BuildSettings
from st_static.teachers import teacher_dimension, teacher_record
from st_static.training.records import HISTORY_FILE_NAME

logger = logging.getLogger(__name__)

Evaluator = Callable[[SentenceTransformer], dict[str, dict[str, Any]]]
"""Scores a model: task name -> result with ``metric`` and ``score`` (x100), as ``st_static.evaluation`` gives."""
TRAINING_FOLDER = "training"


@dataclass
class PipelineResult:
    """What the stages produced."""

    model: SentenceTransformer
    """The refined model."""
    folder: Path
    """The refinement stage's folder (the model's files, with ``training/``)."""
    work_dir: Path
    stage_scores: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    training: dict[str, Any] = field(default_factory=dict)
    vocabulary: dict[str, Any] = field(default_factory=dict)
    """Words of the table: ``corpus`` (kept from the corpus) and, when completion ran, ``completion`` (its report)."""


def stage_key(*parts: object) -> str:
    """A short hash of everything a stage depends on."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


class _Stages:
    """Runs the stages of one build, timing and evaluating each."""

    def __init__(self, settings: BuildSettings, work: Path, evaluate: Evaluator | None) -> None:
        self.settings = settings
        self.work = work
        self.evaluate = evaluate
        self.seconds: dict[str, float] = {}
        self.scores: dict[str, dict[str, dict[str, Any]]] = {}

    def finished(self, name: str, started: float, model: SentenceTransformer | Path | None) -> None:
        self.seconds[name] = time.perf_counter() - started
        if self.evaluate is not None and model is not None:
            self.scores[name] = self.evaluate(load_model(model) if isinstance(model, Path) else model)


COMPLETION_FIELDS = ("complete_words", "complete_spaceless")  # keyed by the completion stage, not the extraction
LONG_TEXT_FIELDS = ("long_texts", "long_text_sentences")  # keyed by the long-texts stage
SECOND_TEACHER_FIELDS = (
    "second_teacher",
    "second_teacher_prompt",
    "second_teacher_sentences",
    "second_teacher_weight",
)  # keyed by the second-teacher stage (its weight by the refinement)
FALLBACK_FIELDS = (
    "fallback_rows",
    "piece_rows",
    "storage",
)  # steps after the refinement: each keys its own folder only


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
    source_filter = SourceFilter.of(settings.keep_sources, settings.leave_out_sources)
    if corpus is None and settings.corpus:
        corpus = corpus_files(settings.corpus, source_filter)
    settings = dataclasses.replace(
        settings, extraction=settings.extraction.with_teacher_prompt().with_second_teacher_prompt()
    )
    logger.info("Teacher prompt: %r.", settings.extraction.prompt)
    if settings.extraction.second_teacher is not None:
        load_teacher_tokenizer(settings.extraction.second_teacher)  # a missing second teacher fails now too
        logger.info("Second teacher prompt: %r.", settings.extraction.second_teacher_prompt)
    parallel_files = settings.parallel_files()
    sizes = check_input_files(settings, corpus, source_filter)
    teacher_tokenizer = load_teacher_tokenizer(settings.extraction.teacher)  # a missing teacher fails now
    check_prompt_length(settings.extraction, teacher_tokenizer)
    check_dimensions(settings, teacher_dimension(settings.extraction.teacher), sizes)
    if _completes(settings) and not settings.crosslingual:
        frequent_words(settings.languages[0], 1)  # so does a missing wordfreq
    stages = _Stages(settings, work_dir, evaluate)

    started = time.perf_counter()
    extraction_settings = asdict(settings.extraction)
    completion_settings = {name: extraction_settings.pop(name) for name in COMPLETION_FIELDS}
    long_text_settings = {name: extraction_settings.pop(name) for name in LONG_TEXT_FIELDS}
    second_teacher_settings = {name: extraction_settings.pop(name) for name in SECOND_TEACHER_FIELDS}
    for name in FALLBACK_FIELDS:
        extraction_settings.pop(name)
    extraction_settings["teacher_precision"] = teacher_precision(settings.extraction.teacher_precision, settings.device)
    extraction_inputs = [*([corpus_digest(corpus)] if corpus is not None else []), *pair_file_digests(settings)]
    extraction_key = stage_key(
        extraction_settings, settings.languages, extraction_inputs, *_source_filter_key(settings, parallel_files)
    )
    multilingual = _read_multilingual(settings, corpus) if settings.crosslingual else None
    extraction = _extract(settings, corpus, multilingual, work_dir / f"extraction-{extraction_key}")
    stages.finished("extraction", started, extraction.model_path)

    if _completes(settings):
        completion_version = {"digit_placeholders": "left out"}  # wordfreq's a00, m000 (since 2026-11-27)
        extraction_key = stage_key(extraction_key, "completion", completion_settings, completion_version)
        completion_path = work_dir / f"completion-{extraction_key}"
        started = time.perf_counter()
        if is_first_process():  # one process completes; the others wait and read its folder
            run_completion(extraction, completion_path, settings.extraction, settings.languages, settings.device)
        barrier()
        extraction = ExtractionStage.open(completion_path)
        added = extraction.stats.get("completion", {}).get("added", 0)
        stages.finished("completion", started, extraction.model_path if added else None)  # scored when it added words

    reduction_key = stage_key(extraction_key, asdict(settings.reduction))
    reduction_path = work_dir / f"pca-{reduction_key}"
    started = time.perf_counter()
    if is_first_process() and not (reduction_path / "modules.json").is_file():
        run_reduction(extraction, reduction_path, settings.reduction)
    barrier()
    reduced = load_model(reduction_path)
    stages.finished("pca", started, reduced)

    long_texts = None
    extra_pairs = [content_digest(path) for path in (settings.extra_pairs or {}).values()]
    refinement_inputs: list[Any] = [extra_pairs]  # (a build without long texts keeps the key it always had)
    if settings.extra_pairs and source_filter.active:  # the filtered rows of the training-only pairs
        refinement_inputs += _source_filter_key(settings, {"": list(settings.extra_pairs.values())})
    if (settings.extraction.long_texts or settings.passages) and corpus is not None and multilingual is None:
        long_key = stage_key(
            extraction_settings["teacher"],
            extraction_settings["prompt"],
            extraction_settings["teacher_precision"],
            corpus_digest(corpus),
            long_text_settings,
            *([content_digest(settings.passages)] if settings.passages else []),
        )
        started = time.perf_counter()
        long_texts = _long_texts(settings, corpus, work_dir / f"long-texts-{long_key}")
        stages.finished("long texts", started, None)
        refinement_inputs.append(long_key)
    second_targets = None
    if settings.extraction.second_teacher is not None:
        weight = second_teacher_settings.pop("second_teacher_weight")
        precision = teacher_precision(settings.extraction.teacher_precision, settings.device)
        second_key = stage_key(extraction_key, second_teacher_settings, precision)
        started = time.perf_counter()
        second_targets = _second_teacher(settings, extraction, work_dir / f"second-teacher-{second_key}")
        stages.finished("second teacher", started, None)
        refinement_inputs.append([second_key, weight])
        second_record = SecondTeacherRecord(
            teacher=teacher_record(str(settings.extraction.second_teacher)),
            prompt=settings.extraction.second_teacher_prompt,
            weight=float(weight),
            sentences=len(second_targets.sample),
        )
        metadata = ModelMetadata(second_teacher=second_record).merged(metadata or ModelMetadata())
    refinement_key = stage_key(reduction_key, asdict(settings.refinement), *refinement_inputs)
    stage = "contrastive" if multilingual is not None else "distillation"
    refined_path = work_dir / f"{stage}-{refinement_key}"
    started = time.perf_counter()
    if not (refined_path / "modules.json").is_file():  # every process trains (DDP); the first one writes
        pairs = multilingual.pairs if multilingual is not None else None
        _refine(reduced, extraction, settings, refined_path, pairs, long_texts, second_targets)
    barrier()
    refined = load_model(refined_path)
    refined[0].metadata = refined[0].metadata.merged(_recorded_inputs(settings, corpus, metadata))
    stages.finished(stage, started, refined)
    if settings.extraction.fallback_rows:  # every text a vector (st_static.extraction.fallback)
        started = time.perf_counter()
        fallback_path = work_dir / f"fallback-{stage_key(refinement_key, 'fallback', fallback_version())}"
        if is_first_process():
            run_fallback(refined_path, fallback_path, settings.extraction, settings.device)
        barrier()
        refined = load_model(fallback_path / "model")
        refined[0].metadata = refined[0].metadata.merged(_recorded_inputs(settings, corpus, metadata))
        stages.finished("fallback", started, refined)
    else:
        fallback_path = None
    if settings.extraction.piece_rows:  # unknown words read subword pieces (st_static.extraction.pieces)
        started = time.perf_counter()
        source = refined_path if fallback_path is None else fallback_path / "model"
        pieces_key = stage_key(refinement_key, "pieces", pieces_version(), settings.extraction.fallback_rows)
        pieces_path = work_dir / f"pieces-{pieces_key}"
        if is_first_process():
            run_pieces(source, pieces_path, settings.extraction)
        barrier()
        refined = load_model(pieces_path / "model")
        refined[0].metadata = refined[0].metadata.merged(_recorded_inputs(settings, corpus, metadata))
        stages.finished("pieces", started, refined)
    if settings.extraction.storage != "float32":  # the stored table: one row per row, float16 by default
        from st_static.compression.quantization import quantize

        started = time.perf_counter()
        refined = quantize(refined, settings.extraction.storage)
        stages.finished(f"storage ({settings.extraction.storage})", started, refined)
    training = json.loads((refined_path / TRAINING_FOLDER / HISTORY_FILE_NAME).read_text(encoding="utf-8"))
    logger.info("Stages done in %.0f s (peak memory %.0f MiB).", sum(stages.seconds.values()), peak_memory_mib())
    return PipelineResult(
        model=refined,
        folder=refined_path,
        work_dir=work_dir,
        stage_scores=stages.scores,
        seconds=stages.seconds,
        training=training,
        vocabulary={
            "corpus": extraction.stats.get("words_kept"),
            **({"completion": extraction.stats["completion"]} if "completion" in extraction.stats else {}),
        },
    )


def pieces_version() -> dict[str, float]:
    """What keys the pieces step besides the table: the constants of the fit."""
    from st_static.extraction.pieces import MAX_PIECE_CHARS, RIDGE

    return {"ridge": RIDGE, "max_piece_chars": MAX_PIECE_CHARS}


def fallback_version() -> dict[str, float]:
    """What keys the fallback step besides the refined table: the constants that set its rows."""
    from st_static.extraction.fallback import EMPTY_TEXT_SCALE, FALLBACK_CHARACTER_SCALE, FIT_WORDS

    return {"characters": FALLBACK_CHARACTER_SCALE, "empty_text": EMPTY_TEXT_SCALE, "fit_words": FIT_WORDS}


def _completes(settings: BuildSettings) -> bool:
    """Whether the build adds words the corpus lacks (see :func:`~st_static.extraction.stages.run_completion`)."""
    if settings.crosslingual:
        return settings.extraction.complete_spaceless and has_spaceless_language(settings.languages)
    return settings.extraction.complete_words > 0


def pair_file_digests(settings: BuildSettings) -> list[str | list[str]]:
    """What keys the extraction stage for the pair files: per paired language, the content digest of its file, or
    the list of its files' digests when it has several (a build with one file per language keeps its old key)."""
    return [
        corpus_digest(paths[0]) if len(paths) == 1 else [corpus_digest(path) for path in paths]
        for paths in settings.parallel_files().values()
    ]


def _source_filter_key(settings: BuildSettings, files: dict[str, list[str]]) -> list[Any]:
    """The key parts of a source filter (none without one): its globs and the ``.source.txt`` files it reads."""
    if not (settings.keep_sources or settings.leave_out_sources):
        return []
    source_files = [source_file(path) for paths in files.values() for path in paths]
    return [
        {
            "keep_sources": settings.keep_sources,
            "leave_out_sources": settings.leave_out_sources,
            "source_files": [content_digest(path) if path.is_file() else None for path in source_files],
        }
    ]


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


def _recorded_inputs(
    settings: BuildSettings, corpus: CorpusSource | None, metadata: ModelMetadata | None
) -> ModelMetadata:
    """Metadata naming the build's inputs by file name (never a path of this machine), plus ``metadata``."""
    parallel = [path for paths in settings.parallel_files().values() for path in paths]
    extra = list((settings.extra_pairs or {}).values())
    names = distinct_file_names([*parallel, *extra])
    recorded = ModelMetadata(
        corpus=", ".join([*([corpus_name(corpus)] if corpus is not None else []), *names[: len(parallel)]]),
        parallel=names[: len(parallel)] or None,
        extra_pairs=names[len(parallel) :] or None,
        keep_sources=settings.keep_sources or None,
        leave_out_sources=settings.leave_out_sources or None,
        data_license=settings.data_license or None,
    )
    return recorded.merged(metadata) if metadata is not None else recorded


def _read_multilingual(settings: BuildSettings, corpus: CorpusSource | None) -> MultilingualCorpus:
    monolingual = {settings.languages[0]: list(iter_sentences(corpus))} if corpus is not None else None
    return read_multilingual_corpus(
        settings.parallel_files(),
        settings.languages,
        monolingual,
        SourceFilter.of(settings.keep_sources, settings.leave_out_sources),
    )


def _extract(
    settings: BuildSettings,
    corpus: CorpusSource | None,
    multilingual: MultilingualCorpus | None,
    destination: Path,
) -> ExtractionStage:
    """Step 1, for one corpus or for several languages sharing one table."""
    if multilingual is None:
        return run_extraction(
            corpus, settings.extraction, destination, resume=True, languages=settings.languages, device=settings.device
        )
    if (destination / "stats.json").is_file():
        return ExtractionStage.open(destination)
    extraction = settings.extraction
    vocabulary, _ = build_multilingual_vocabulary(
        multilingual,
        load_teacher_tokenizer(extraction.teacher),
        vocab_size=extraction.vocab_size,
        spaceless_vocab_size=extraction.spaceless_vocab_size,
        min_sentences=extraction.min_sentences,
    )
    return run_extraction(
        multilingual.all_sentences(),
        extraction,
        destination,
        resume=True,
        vocabulary=vocabulary,
        pca_sentences=multilingual.sample_per_language(extraction.pca_sample_size, extraction.pca_sample_seed),
        languages=settings.languages,
        corpus_description="",
        device=settings.device,
    )


def _long_texts(settings: BuildSettings, corpus: CorpusSource, destination: Path) -> LongTexts:
    """Step 1c: the long texts and their teacher vectors (one process makes them; the others read its folder)."""
    if is_first_process() and not (destination / "targets.npy").is_file():
        passages = None
        if settings.passages:
            passages = list(iter_sentences(settings.passages))
        teacher = load_teacher(
            settings.extraction.teacher, device=settings.device, precision=settings.extraction.teacher_precision
        )
        run_long_texts(
            list(iter_sentences(corpus)),
            teacher,
            destination,
            count=settings.extraction.long_texts,
            sentences_per_text=settings.extraction.long_text_sentences,
            prompt=settings.extraction.prompt or "",
            passages=passages,
        )
    barrier()
    return LongTexts.open(destination)


def _second_teacher(settings: BuildSettings, extraction: ExtractionStage, destination: Path) -> SecondTeacherTargets:
    """Step 1d: the second teacher's vectors of a sample of the distillation sentences (one process makes them;
    the others read its folder)."""
    extraction_settings = settings.extraction
    if is_first_process() and not (destination / SAMPLE_FILE).is_file():
        teacher = load_teacher(
            str(extraction_settings.second_teacher),
            device=settings.device,
            precision=extraction_settings.teacher_precision,
        )
        run_second_teacher(
            teacher,
            extraction.sentences(),
            extraction_settings.second_teacher_prompt or "",
            extraction_settings.second_teacher_sentences,
            destination,
        )
    barrier()
    return SecondTeacherTargets.open(destination)


def _extra_pairs(settings: BuildSettings) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """``settings.extra_pairs`` read into ``{(pivot, language): pairs}`` (they join the training split only)."""
    source_filter = SourceFilter.of(settings.keep_sources, settings.leave_out_sources)
    return {
        (settings.languages[0], language): read_pairs(path, source_filter)
        for language, path in (settings.extra_pairs or {}).items()
    }


def _refine(
    reduced: SentenceTransformer,
    extraction: ExtractionStage,
    settings: BuildSettings,
    destination: Path,
    pairs: dict[tuple[str, str], list[tuple[str, str]]] | None,
    long_texts: LongTexts | None = None,
    second_targets: SecondTeacherTargets | None = None,
) -> None:
    """Step 3: train the reduced table on the cached teacher targets and/or translation pairs; save the refined
    model with its training record (``training/``) in ``destination``."""
    from st_static.training import refine

    sentences: Sequence[str] | None = None
    targets = None
    if pairs is None or settings.refinement.crosslingual_distillation:
        sentences = extraction.sentences()
        targets = np.asarray(extraction.teacher_embeddings(), dtype=np.float32)
        if second_targets is not None:  # the sample both teachers read, their cosines mixed
            sentences = [sentences[index] for index in second_targets.sample]
            targets = second_targets.mixed_with(targets, settings.extraction.second_teacher_weight)
        if long_texts is not None:
            sentences = [*sentences, *long_texts.texts]
            targets = np.concatenate([targets, long_texts.targets])
    training_only = _extra_pairs(settings) if pairs is not None else None

    def run(output_dir: Path | None) -> SentenceTransformer:
        return refine(
            reduced,
            settings.refinement,
            sentences=sentences,
            teacher_embeddings=targets,
            pairs=pairs,
            training_only_pairs=training_only,
            output_dir=output_dir,
            device=settings.device,
        ).model

    if not is_first_process():  # the other processes train their share; the first one writes
        run(None)
        return
    with staged_folder(destination, replaceable=lambda _: True) as staging:
        write_model(run(staging / TRAINING_FOLDER), staging)


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
