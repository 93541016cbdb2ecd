"""The whole job in one call: extraction -> PCA/ABTT -> refinement -> a saved, evaluated model.

Every stage writes its own folder under the work directory, named by a hash of the settings it depends on, so
a re-run with the same settings reuses finished stages (and resumes an interrupted teacher pass), while a
changed setting redoes only the stages it affects.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sentence_transformers import SentenceTransformer

from st_static.errors import UnsafeDestinationError
from st_static.extraction.corpus import CorpusError, check_corpus_source, iter_sentences
from st_static.extraction.multilingual import (
    SPACELESS_LANGUAGES,
    MultilingualCorpus,
    build_multilingual_vocabulary,
    read_multilingual_corpus,
)
from st_static.extraction.stages import (
    ExtractionSettings,
    ExtractionStage,
    load_teacher_tokenizer,
    peak_memory_mib,
    run_completion,
    run_extraction,
    run_reduction,
)
from st_static.files import check_destination, content_digest, folder_lock, staged_folder
from st_static.io import holds_st_static_output, load_model, write_model
from st_static.teachers import DEFAULT_TEACHER, resolve_teacher

logger = logging.getLogger(__name__)

Evaluator = Callable[[SentenceTransformer], dict[str, dict[str, Any]]]
"""Scores a model: task name -> result with ``metric`` and ``score`` (x100), as ``st_static.evaluation`` gives."""

DEV_TASKS = ("stsb-en-dev", "stsb-en-test", "sick-dev")


@dataclass
class BuildSettings:
    """Everything that decides what ``build`` produces (the defaults follow the paper where the data allows)."""

    teacher: str = DEFAULT_TEACHER
    corpus: str | None = None
    parallel: list[str] | None = None
    """Translation-pair files for a cross-lingual table (file i pairs ``languages[0]`` with ``languages[i+1]``)."""
    languages: list[str] = field(default_factory=lambda: ["en"])
    spaceless_vocab_size: int = 30_000
    dim: int = 256
    vocab_size: int = 150_000
    min_sentences: int = 2
    sentences_per_word: int = 100
    max_words: int = 64
    pca_sample_size: int = 100_000
    removed_components: int | None = None
    pca_level: str = "sentence"
    prompt: str = ""
    lowercase: bool = True
    wordfreq_weight: float = 0.0
    steps: int = 30_000
    batch_size: int = 128
    learning_rate: float = 1e-3
    temperature: float = 0.05
    eval_steps: int = 500
    patience: int = 5
    validation_size: int = 4096
    matryoshka_dims: list[int] | None = None
    center_teacher: bool = True
    complete_spaceless: bool = True
    crosslingual_distillation: bool = False
    extra_pairs: dict[str, str] | None = None
    """Cross-lingual tables: more translation pairs per language (e.g. ``{"ja": "en-ja-dictionary.tsv"}``, pivot
    first) that join the contrastive training only (vocabulary, extraction and PCA do not see them)."""
    """Cross-lingual tables: also distil the teacher's similarities on the extracted sentences of every language."""
    """Cross-lingual tables with Chinese or Japanese: add the teacher's tokens the parallel corpus missed."""
    seed: int = 0

    def extraction_settings(self) -> ExtractionSettings:
        return ExtractionSettings(
            teacher=self.teacher,
            prompt=self.prompt,
            language=self.languages[0],
            lowercase=self.lowercase,
            vocab_size=self.vocab_size,
            min_sentences=self.min_sentences,
            sentences_per_word=self.sentences_per_word,
            max_words=self.max_words,
            pca_sample_size=self.pca_sample_size,
            wordfreq_weight=self.wordfreq_weight,
            seed=self.seed,
            corpus=", ".join(
                Path(path).name for path in [*([self.corpus] if self.corpus else []), *(self.parallel or [])]
            ),
        )

    @property
    def crosslingual(self) -> bool:
        return bool(self.parallel)


@dataclass
class BuildResult:
    """What ``build`` produced."""

    model: SentenceTransformer
    output: Path
    work_dir: Path
    stage_scores: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    training: dict[str, Any] = field(default_factory=dict)


def _stage_key(*parts: object) -> str:
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


def default_work_dir(output: str | os.PathLike[str]) -> Path:
    """``<output>.work`` next to the output folder."""
    output = Path(output).resolve()
    return output.with_name(output.name + ".work")


def build(
    settings: BuildSettings,
    output: str | os.PathLike[str],
    work_dir: str | os.PathLike[str] | None = None,
    evaluate: Evaluator | None = None,
    build_command: str | None = None,
    force: bool = False,
) -> BuildResult:
    """Build a static model from a teacher and a corpus, caching every stage.

    Args:
        settings: What to build.
        output: The final model folder (written atomically; holds the training curve and, when ``evaluate`` is
            given, ``evaluation.json``).
        work_dir: Where stages are cached; defaults to ``<output>.work``.
        evaluate: Scores a model (task name -> result); applied after each stage, the last result is saved
            as the model's ``evaluation.json``.
        build_command: The command line that ran the build, recorded in the model card.
        force: Replace ``output`` even when it is a non-empty folder that is not an st-static model.

    Returns:
        The final model, stage scores and timings.

    Raises:
        CorpusError: If the corpus is missing or unusable (checked before anything heavy runs).
    """
    if settings.corpus is None and not settings.parallel:
        raise CorpusError("A corpus is needed: give a text file with one sentence per line (or --parallel files).")
    for path in [*([settings.corpus] if settings.corpus else []), *(settings.parallel or [])]:
        check_corpus_source(path)
    if settings.crosslingual and len(settings.languages) != len(settings.parallel or []) + 1:
        raise ValueError(
            f"--languages {','.join(settings.languages)} needs {len(settings.languages) - 1} parallel file(s) pairing "
            f"{settings.languages[0]} with each other language, got {len(settings.parallel or [])}."
        )
    for language, path in (settings.extra_pairs or {}).items():
        if language not in settings.languages[1:]:
            raise ValueError(
                f"Extra pairs for {language!r}, which is not one of the paired languages {settings.languages[1:]}."
            )
        check_corpus_source(path)
    if settings.dim < 1:
        raise ValueError(f"dim must be positive, got {settings.dim}.")
    inputs = [*([settings.corpus] if settings.corpus else []), *(settings.parallel or [])]
    inputs += [*(settings.extra_pairs or {}).values(), *([settings.teacher] if os.path.isdir(settings.teacher) else [])]
    output = check_destination(output, replaceable=holds_st_static_output, inputs=inputs, force=force)
    work = Path(work_dir).resolve() if work_dir is not None else default_work_dir(output)
    if work == output or work.is_relative_to(output):
        raise UnsafeDestinationError(f"The work folder {work} must not be inside the output folder {output}.")
    check_destination(work, replaceable=lambda _: True, inputs=inputs, what="work folder")
    work.mkdir(parents=True, exist_ok=True)
    with folder_lock(work) if _is_first_process() else contextlib.nullcontext():
        return _build_stages(settings, output, work, inputs, evaluate, build_command, force)


def _is_first_process() -> bool:
    """Whether this is the process that writes (rank 0 under torchrun, or the only one)."""
    return int(os.environ.get("RANK", "0")) == 0


def _build_stages(
    settings: BuildSettings,
    output: Path,
    work: Path,
    inputs: list[str],
    evaluate: Evaluator | None,
    build_command: str | None,
    force: bool,
) -> BuildResult:
    """The stages of :func:`build`, run while holding the work folder's lock."""
    seconds: dict[str, float] = {}
    stage_scores: dict[str, dict[str, dict[str, Any]]] = {}

    extraction_settings = settings.extraction_settings()
    corpus_digests = [
        content_digest(path) for path in [*([settings.corpus] if settings.corpus else []), *(settings.parallel or [])]
    ]
    extraction_key = _stage_key(
        asdict(extraction_settings), corpus_digests, settings.languages, settings.spaceless_vocab_size
    )
    started = time.perf_counter()
    multilingual = _read_multilingual(settings) if settings.crosslingual else None
    extraction = _extract(settings, extraction_settings, multilingual, work / f"extraction-{extraction_key}")
    seconds["extraction"] = time.perf_counter() - started
    if evaluate is not None:
        stage_scores["extraction"] = evaluate(load_model(extraction.model_path))

    if multilingual is not None and settings.complete_spaceless and SPACELESS_LANGUAGES & set(settings.languages):
        extraction_key = _stage_key(extraction_key, "completion")
        started = time.perf_counter()
        extraction = run_completion(
            extraction, work / f"completion-{extraction_key}", settings.teacher, settings.languages, settings.prompt
        )
        seconds["completion"] = time.perf_counter() - started
        if evaluate is not None:
            stage_scores["completion"] = evaluate(load_model(extraction.model_path))

    reduction_key = _stage_key(extraction_key, settings.dim, settings.removed_components, settings.pca_level)
    reduction_path = work / f"pca-{reduction_key}"
    started = time.perf_counter()
    if (reduction_path / "modules.json").is_file():
        reduced = load_model(reduction_path)
    else:
        reduced = run_reduction(
            extraction, reduction_path, settings.dim, settings.removed_components, settings.pca_level
        )
    seconds["pca"] = time.perf_counter() - started
    if evaluate is not None:
        stage_scores["pca"] = evaluate(reduced)

    training_key = _stage_key(
        reduction_key,
        settings.steps,
        settings.batch_size,
        settings.learning_rate,
        settings.temperature,
        settings.eval_steps,
        settings.patience,
        settings.validation_size,
        settings.matryoshka_dims,
        settings.seed,
        settings.center_teacher,
        *(["crosslingual-distillation"] if settings.crosslingual and settings.crosslingual_distillation else []),
        *([content_digest(path) for path in (settings.extra_pairs or {}).values()] if settings.crosslingual else []),
    )
    refinement = "contrastive" if multilingual is not None else "distillation"
    refined_path = work / f"{refinement}-{training_key}"
    started = time.perf_counter()
    if (refined_path / "modules.json").is_file():
        refined = load_model(refined_path)
        training = json.loads((refined_path / "training" / "training_history.json").read_text(encoding="utf-8"))
    else:
        pairs = multilingual.pairs if multilingual is not None else None
        refined, training = _refine(reduced, extraction, settings, refined_path, pairs, build_command)
    seconds[refinement] = time.perf_counter() - started
    if evaluate is not None:
        stage_scores[refinement] = evaluate(refined)

    _publish(refined_path, output, stage_scores.get(refinement), build_command, inputs, force)
    logger.info("Built %s in %.0f s (peak memory %.0f MiB).", output, sum(seconds.values()), peak_memory_mib())
    return BuildResult(
        model=load_model(output),
        output=output,
        work_dir=work,
        stage_scores=stage_scores,
        seconds=seconds,
        training=training,
    )


def _read_multilingual(settings: BuildSettings) -> MultilingualCorpus:
    monolingual = {settings.languages[0]: list(iter_sentences(settings.corpus))} if settings.corpus else None
    return read_multilingual_corpus(settings.parallel or [], settings.languages, monolingual)


def _extra_pairs(settings: BuildSettings) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """``settings.extra_pairs`` read into ``{(pivot, language): pairs}`` (they join the training split only)."""
    from st_static.data import read_translation_pairs

    extra: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for language, path in (settings.extra_pairs or {}).items():
        pairs = [(" ".join(first.split()), " ".join(second.split())) for first, second in read_translation_pairs(path)]
        extra[(settings.languages[0], language)] = [(first, second) for first, second in pairs if first and second]
    return extra


def _extract(
    settings: BuildSettings,
    extraction_settings: ExtractionSettings,
    multilingual: MultilingualCorpus | None,
    destination: Path,
) -> ExtractionStage:
    """Step 1, for one corpus or for several languages sharing one table."""
    if multilingual is None:
        return run_extraction(settings.corpus, extraction_settings, destination, resume=True)
    if (destination / "stats.json").is_file():
        return ExtractionStage.open(destination)
    vocabulary, _ = build_multilingual_vocabulary(
        multilingual,
        load_teacher_tokenizer(resolve_teacher(settings.teacher)),
        vocab_size=settings.vocab_size,
        spaceless_vocab_size=settings.spaceless_vocab_size,
        min_sentences=settings.min_sentences,
    )
    return run_extraction(
        multilingual.all_sentences(),
        extraction_settings,
        destination,
        resume=True,
        vocabulary=vocabulary,
        pca_sentences=multilingual.sample_per_language(settings.pca_sample_size, settings.seed),
        languages=settings.languages,
    )


def _refine(
    reduced: SentenceTransformer,
    extraction: ExtractionStage,
    settings: BuildSettings,
    destination: Path,
    pairs: dict[tuple[str, str], list[tuple[str, str]]] | None,
    build_command: str | None = None,
) -> tuple[SentenceTransformer, dict[str, Any]]:
    """Step 3: similarity distillation on the cached teacher targets, or contrastive training on translation
    pairs; saves the refined model with its training record."""
    from st_static.training import refine_by_distillation, refine_by_translation

    with staged_folder(destination, replaceable=lambda _: True) as staging:
        common = {
            "max_steps": settings.steps,
            "batch_size": settings.batch_size,
            "learning_rate": settings.learning_rate,
            "temperature": settings.temperature,
            "validation_size": settings.validation_size,
            "eval_steps": settings.eval_steps,
            "patience": settings.patience,
            "matryoshka_dims": settings.matryoshka_dims,
            "seed": settings.seed,
            "output_dir": staging / "training",
        }
        if pairs is not None:
            distillation = None
            if settings.crosslingual_distillation:
                targets = np.asarray(extraction.teacher_embeddings(), dtype=np.float32)
                distillation = (extraction.sentences(), targets)
            result = refine_by_translation(
                reduced,
                pairs,
                distillation=distillation,
                center_teacher=settings.center_teacher,
                training_only_pairs=_extra_pairs(settings),
                **common,
            )
        else:
            targets = np.asarray(extraction.teacher_embeddings(), dtype=np.float32)
            result = refine_by_distillation(
                reduced, extraction.sentences(), targets, center_teacher=settings.center_teacher, **common
            )
        if build_command:
            result.model[0].metadata["build_command"] = build_command
        if settings.extra_pairs and pairs is not None:
            result.model[0].metadata["extra_pairs"] = [Path(path).name for path in settings.extra_pairs.values()]
        write_model(result.model, staging)
    training = json.loads((destination / "training" / "training_history.json").read_text(encoding="utf-8"))
    return load_model(destination), training


def _publish(
    source: Path,
    output: Path,
    results: dict[str, dict[str, Any]] | None,
    build_command: str | None,
    inputs: list[str],
    force: bool,
) -> None:
    """Copy the finished model folder to ``output`` atomically, with its evaluation file and a fresh card."""
    from st_static.evaluation.report import evaluation_document, write_json
    from st_static.model_card import write_model_card

    with staged_folder(output, replaceable=holds_st_static_output, inputs=inputs, force=force) as staging:
        shutil.copytree(source, staging, dirs_exist_ok=True)
        if results is not None:
            write_json(evaluation_document(output.name, results), staging / "evaluation.json")
        write_model_card(staging, build_command=build_command)


def dev_set_evaluator(
    data_dir: str | os.PathLike[str], tasks: tuple[str, ...] | None = DEV_TASKS, prompt: str | None = None
) -> Evaluator:
    """An evaluator over the data files in ``data_dir`` (only ``tasks`` if given; all known files otherwise)."""
    from st_static.evaluation import evaluate_tasks, find_tasks, model_encoder

    found = find_tasks(data_dir)
    selected = [task for task in found if tasks is None or task.name in tasks]
    if not selected:
        raise FileNotFoundError(f"None of the evaluation files {tasks} is in {data_dir}.")

    def evaluate(model: SentenceTransformer) -> dict[str, dict[str, Any]]:
        return evaluate_tasks(model_encoder(model, prompt=prompt), selected)

    return evaluate


def describe_scores(stage_scores: dict[str, dict[str, dict[str, Any]]]) -> str:
    """A markdown table of scores (x100) per stage (rows) and task (columns)."""
    tasks: list[str] = []
    for results in stage_scores.values():
        tasks.extend(task for task in results if task not in tasks)
    lines = ["| stage | " + " | ".join(tasks) + " |", "|---" * (len(tasks) + 1) + "|"]
    for stage, results in stage_scores.items():
        cells = [f"{results[task]['score']:.2f}" if task in results else "-" for task in tasks]
        lines.append(f"| {stage} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
