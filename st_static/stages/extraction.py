"""The extraction stage: the vocabulary, the sentences chosen per word, the teacher pass and its averaged token
vectors, in ``extraction-KEY/`` (layout: :mod:`st_static.stages.extraction_folder`).

Keyed by ``asdict`` of the ``ExtractionSettings`` fields no later stage keys (the teacher's precision resolved), the
languages, the content of the corpus and of every pair file (and, with a source filter, its globs and the
``.source.txt`` files it reads). The teacher pass checkpoints into ``extraction-KEY.partial/`` (locked while in use),
so an interrupted run resumes there; the folder is staged and swapped in when complete (:mod:`st_static.files`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from tokenizers import Tokenizer

from st_static.distributed import process_device, process_rank
from st_static.extraction.corpus import (
    CorpusError,
    CorpusSource,
    check_corpus,
    check_corpus_language,
    corpus_digest,
    corpus_name,
    corpus_paths,
    iter_sentences,
)
from st_static.extraction.extract import extract_word_vectors
from st_static.extraction.multilingual import (
    MultilingualCorpus,
    build_multilingual_vocabulary,
    read_multilingual_corpus,
)
from st_static.extraction.pair_sources import SourceFilter, source_file
from st_static.extraction.selection import select_sentences
from st_static.extraction.teacher_model import load_teacher, load_teacher_tokenizer, teacher_precision
from st_static.extraction.vocabulary import (
    Vocabulary,
    build_vocabulary,
    count_teacher_token_sentences,
    count_word_sentences,
)
from st_static.files import check_destination, content_digest, folder_lock, staged_folder
from st_static.model.languages import SPACELESS_LANGUAGES
from st_static.model.metadata import ModelMetadata
from st_static.model.save_load import holds_st_static_output, save_model
from st_static.model.static_word_average import StaticWordAverage
from st_static.model.tokenization import build_word_tokenizer
from st_static.settings import BuildSettings, ExtractionSettings, SettingsError
from st_static.stages.base import KEYED_ELSEWHERE, Build, FolderStage, peak_memory_mib, stage_key
from st_static.stages.extraction_folder import ExtractionStage
from st_static.teachers import resolve_teacher, teacher_max_seq_length, teacher_record

logger = logging.getLogger(__name__)


class Extraction(FolderStage):
    """Step 1, for one corpus or for several languages sharing one table (their pairs read first)."""

    name = "extraction"

    def key(self, build: Build) -> str:
        settings = build.settings
        inputs = [*([corpus_digest(build.corpus)] if build.corpus is not None else []), *pair_file_digests(settings)]
        return stage_key(
            extraction_key_settings(settings),
            settings.languages,
            inputs,
            *source_filter_key(settings, settings.parallel_files()),
        )

    def run_in(self, build: Build, folder: Path) -> Path:
        settings = build.settings
        if settings.crosslingual:
            build.multilingual = read_multilingual(settings, build.corpus)
        build.extraction = extract(settings, build.corpus, build.multilingual, folder)
        return build.extraction.model_path


def extraction_key_settings(settings: BuildSettings) -> dict[str, Any]:
    """``asdict`` of the ``ExtractionSettings`` fields that key the extraction, with the teacher's precision as it
    will run (``auto`` resolved for the device)."""
    values = asdict(settings.extraction)
    for names in KEYED_ELSEWHERE.values():
        for name in names:
            values.pop(name)
    if values["language_vocab_sizes"] is None:  # keys only when given: older work folders keep their keys
        values.pop("language_vocab_sizes")
    values["teacher_precision"] = teacher_precision(settings.extraction.teacher_precision, settings.device)
    return values


def pair_file_digests(settings: BuildSettings) -> list[str | list[str]]:
    """What keys the extraction stage for the pair files: per paired language, the content digest of its file, or
    the list of its files' digests when it has several (a build with one file per language keeps its old key)."""
    return [
        corpus_digest(paths[0]) if len(paths) == 1 else [corpus_digest(path) for path in paths]
        for paths in settings.parallel_files().values()
    ]


def source_filter_key(settings: BuildSettings, files: dict[str, list[str]]) -> list[Any]:
    """The key parts of a source filter (none without one): its globs and the ``.source.txt`` files it reads."""
    if not (settings.keep_sources or settings.leave_out_sources):
        return []
    return [
        {
            "keep_sources": settings.keep_sources,
            "leave_out_sources": settings.leave_out_sources,
            "source_files": source_file_digests([path for paths in files.values() for path in paths]),
        }
    ]


def source_file_digests(paths: Sequence[str | os.PathLike[str]]) -> list[str | None]:
    """The content digest of each file's aligned ``.source.txt`` (``None`` where it has none), for stage keys."""
    return [content_digest(source) if source.is_file() else None for source in map(source_file, paths)]


def read_multilingual(settings: BuildSettings, corpus: CorpusSource | None) -> MultilingualCorpus:
    """The pairs (and monolingual sentences) of a cross-lingual build."""
    monolingual = {settings.languages[0]: list(iter_sentences(corpus))} if corpus is not None else None
    return read_multilingual_corpus(
        settings.parallel_files(),
        settings.languages,
        monolingual,
        SourceFilter.of(settings.keep_sources, settings.leave_out_sources),
    )


def extract(
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
        language_vocab_sizes=extraction.language_vocab_sizes,
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


def check_prompt_length(settings: ExtractionSettings, teacher_tokenizer: Tokenizer) -> None:
    """Refuse a prompt that leaves the teacher less than half of its ``max_seq_length`` for the sentence.

    The teacher reads ``prompt + sentence`` cut at its ``max_seq_length``: a long prompt leaves too little of each
    sentence (or nothing), and the words cut off get no vectors. Checked only when the teacher's folder gives its
    length (:func:`~st_static.teachers.teacher_max_seq_length`).

    Raises:
        SettingsError: Saying how many tokens the prompt takes and the teacher's length.
    """
    limit = teacher_max_seq_length(settings.teacher)
    if not settings.prompt or limit is None:
        return
    tokenizer = Tokenizer.from_str(teacher_tokenizer.to_str())  # a copy without the file's padding and truncation
    tokenizer.no_padding()
    tokenizer.no_truncation()
    special = len(tokenizer.encode("").ids)  # [CLS] and [SEP], or <s> and </s>
    prompt_tokens = len(tokenizer.encode(settings.prompt, add_special_tokens=False).ids)
    left = limit - special - prompt_tokens
    if left < limit / 2:
        raise SettingsError(
            f"--prompt takes {prompt_tokens} of the teacher's {limit} tokens per text (its max_seq_length), leaving "
            f"{max(left, 0)} for the sentence; a prompt may take at most half. Use a shorter prompt."
        )


def build_vocabulary_from_corpus(
    corpus: CorpusSource, settings: ExtractionSettings, teacher_tokenizer: Tokenizer, language: str = "en"
) -> Vocabulary:
    """Count the corpus and choose the vocabulary (words, or teacher tokens for a language without spaces)."""
    spaceless = language in SPACELESS_LANGUAGES
    if spaceless:
        counts: Counter[str] = count_teacher_token_sentences(iter_sentences(corpus), teacher_tokenizer)
    else:
        counts = count_word_sentences(iter_sentences(corpus), lowercase=settings.lowercase)
    if not counts:
        raise CorpusError("The corpus has no words (it is empty or holds only punctuation and symbols).")
    return build_vocabulary(
        counts,
        size=settings.vocabulary_size(language),
        min_sentences=settings.min_sentences,
        lowercase=settings.lowercase and not spaceless,
        wordfreq_weight=settings.wordfreq_weight,
        language=language,
    )


def run_extraction(
    corpus: CorpusSource,
    settings: ExtractionSettings,
    output: str | os.PathLike[str],
    *,
    resume: bool = False,
    vocabulary: Vocabulary | None = None,
    pca_sentences: Sequence[str] | None = None,
    languages: Sequence[str] = ("en",),
    corpus_description: str | None = None,
    device: str | None = None,
) -> ExtractionStage:
    """Step 1: choose the vocabulary, select sentences, run the teacher and average its token vectors.

    Args:
        corpus: A text file (one sentence per line), a list of str or a ``datasets`` dataset.
        settings: What to do (teacher, vocabulary size, sentences per word, ...).
        output: The extraction folder to write (see the module docstring).
        resume: Reuse a finished ``output`` folder, or continue the teacher pass from ``output.partial``.
        vocabulary: A ready vocabulary (skips counting the corpus), e.g. the union of several languages.
        pca_sentences: The sentences to fit the PCA on (default: a uniform sample of the corpus), e.g. an
            equal number per language for a cross-lingual table.
        languages: The table's languages (the first one decides the vocabulary rules of a corpus).
        corpus_description: How the metadata names the corpus (default: the file's name).
        device: The teacher's device (default: CUDA when there is a GPU; each torchrun process its own).

    Returns:
        The finished stage.

    Raises:
        CorpusError: If the corpus is missing, empty or too small — before the teacher is loaded.
        TeacherError: If the teacher cannot be found or cannot give token vectors.
    """
    output = Path(output)
    settings = settings.with_teacher_prompt()
    if resume and (output / "stats.json").is_file():
        logger.info("Extraction already finished in %s; reusing it.", output)
        return ExtractionStage.open(output)
    corpus_inputs: list[Any] = list(corpus_paths(corpus))
    if os.path.isdir(settings.teacher):
        corpus_inputs.append(settings.teacher)
    check_destination(output, replaceable=holds_st_static_output, inputs=corpus_inputs)
    check_corpus(corpus)
    if vocabulary is None:  # the corpus is in languages[0]
        check_corpus_language(corpus, languages[0], corpus_name(corpus))
    teacher_tokenizer = load_teacher_tokenizer(settings.teacher)
    check_prompt_length(settings, teacher_tokenizer)
    rank, world_size = process_rank()
    partial = output.with_name(output.name + ".partial")
    with folder_lock(partial) if rank == 0 else contextlib.nullcontext():
        stage = _compute_extraction(
            corpus, settings, output, partial, teacher_tokenizer, resume, vocabulary, pca_sentences, languages, device
        )
        if rank == 0:
            stage.module.metadata.corpus = corpus_description or corpus_name(corpus)
            _publish_extraction(stage, output, corpus_inputs)
    if rank == 0:
        shutil.rmtree(partial, ignore_errors=True)
    if world_size > 1:
        torch.distributed.barrier()  # the other processes wait for the first to write the folder
    return ExtractionStage.open(output)


@dataclass
class _PendingExtraction:
    """An extraction computed in memory, not yet written."""

    stats: dict[str, Any]
    module: StaticWordAverage
    sentences: list[str]
    teacher_embeddings: np.ndarray
    pca_sentences: Sequence[str]


def _compute_extraction(
    corpus: CorpusSource,
    settings: ExtractionSettings,
    output: Path,
    partial: Path,
    teacher_tokenizer: Tokenizer,
    resume: bool,
    vocabulary: Vocabulary | None,
    pca_sentences: Sequence[str] | None,
    languages: Sequence[str],
    device: str | None,
) -> _PendingExtraction:
    timings: dict[str, float] = {}
    started = time.perf_counter()
    if vocabulary is None:
        vocabulary = build_vocabulary_from_corpus(corpus, settings, teacher_tokenizer, languages[0])
    word_tokenizer = build_word_tokenizer(
        vocabulary.words, teacher_tokenizer=teacher_tokenizer, lowercase=vocabulary.lowercase
    )
    timings["vocabulary"] = time.perf_counter() - started

    stage_started = time.perf_counter()
    selection = select_sentences(
        iter_sentences(corpus),
        word_tokenizer,
        sentences_per_word=settings.sentences_per_word,
        max_words=settings.max_words,
        pca_sample_size=0 if pca_sentences is not None else settings.pca_sample_size,
        seed=settings.pca_sample_seed,
    )
    timings["selection"] = time.perf_counter() - stage_started

    stage_started = time.perf_counter()
    teacher = load_teacher(settings.teacher, device=process_device(device), precision=settings.teacher_precision)
    timings["load_teacher"] = time.perf_counter() - stage_started

    rank, world_size = process_rank()
    if partial.exists() and not resume and rank == 0:
        for entry in partial.iterdir():
            if entry.is_dir():
                shutil.rmtree(entry)
    if world_size > 1:
        torch.distributed.barrier()
    stage_started = time.perf_counter()
    result = extract_word_vectors(
        teacher,
        selection.sentences,
        word_tokenizer,
        prompt=settings.prompt,
        batch_tokens=settings.batch_tokens,
        checkpoint_dir=partial / "checkpoints",
        resume=resume,
        teacher_name=resolve_teacher(settings.teacher),
    )
    timings["teacher_pass"] = time.perf_counter() - stage_started

    # Words whose sentences were all cut off by truncation (or never credited) cannot keep a row.
    seen = result.occurrences > 0
    kept_words = [word for word, keep in zip(vocabulary.words, seen, strict=True) if keep]
    if len(kept_words) < len(vocabulary.words):
        logger.warning("%d words got no token vectors and are left out.", len(vocabulary.words) - len(kept_words))
        word_tokenizer = build_word_tokenizer(
            kept_words, teacher_tokenizer=teacher_tokenizer, lowercase=vocabulary.lowercase
        )
    occurrences = result.occurrences[seen]
    stats: dict[str, Any] = {
        "settings": asdict(settings),
        "corpus_sentences": selection.corpus_size,
        "vocabulary": vocabulary.report(),
        "words_kept": len(kept_words),
        "words_with_at_least": {str(k): int((occurrences >= k).sum()) for k in (1, 10, 100)},
        "selected_sentences_per_word_at_least": {
            str(k): int((selection.selected_per_word >= k).sum()) for k in (1, 10, 100)
        },
        **result.stats,
        "seconds": timings,
        "peak_memory_mib": peak_memory_mib(),
    }
    metadata = ModelMetadata(
        teacher=teacher_record(settings.teacher),
        teacher_dim=int(result.word_vectors.shape[1]),
        prompt=settings.prompt,
        languages=list(languages),
        vocab_size=len(kept_words),
        sentences_per_word=settings.sentences_per_word,
        stages=["extraction"],
    )
    module = StaticWordAverage(word_tokenizer, result.word_vectors[seen], metadata=metadata)
    return _PendingExtraction(
        stats=stats,
        module=module,
        sentences=selection.sentences,
        teacher_embeddings=result.sentence_embeddings,
        pca_sentences=pca_sentences if pca_sentences is not None else selection.pca_sentences,
    )


def _publish_extraction(pending: _PendingExtraction, output: Path, inputs: list[Any]) -> None:
    model = SentenceTransformer(modules=[pending.module, Normalize()], device="cpu")
    with staged_folder(output, replaceable=holds_st_static_output, inputs=inputs) as staging:
        save_model(model, staging / "model")
        (staging / "targets").mkdir()
        _write_lines(staging / "targets" / "sentences.txt", pending.sentences)
        np.save(staging / "targets" / "teacher_embeddings.npy", pending.teacher_embeddings)
        _write_lines(staging / "pca_sentences.txt", pending.pca_sentences)
        (staging / "stats.json").write_text(json.dumps(pending.stats, indent=2), encoding="utf-8")


def _write_lines(path: Path, lines: Sequence[str]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(line.replace("\n", " ") + "\n")
