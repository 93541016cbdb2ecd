"""Steps 1 and 2 of the method as resumable stages that read and write folders.

``run_extraction`` (vocabulary, sentence selection, teacher pass) writes::

    extraction/
      model/                 SentenceTransformer: StaticWordAverage over the raw (teacher-dim) table + Normalize
      targets/sentences.txt  the encoded sentences, one per line
      targets/teacher_embeddings.npy   their teacher sentence embeddings (float32), the distillation targets
      pca_sentences.txt      a uniform corpus sample for fitting the PCA
      stats.json             timings, coverage, memory

``run_reduction`` (sentence-level PCA + ABTT, or word-level PCA) turns that into a ready model. Every folder is
staged under a temporary name and swapped in when complete (:mod:`st_static.files`); the teacher pass checkpoints
into ``extraction.partial/`` (locked while in use) so an interrupted run resumes there.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import logging
import os
import resource
import shutil
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from tokenizers import Tokenizer

from st_static.distributed import process_device, process_rank
from st_static.errors import StStaticError
from st_static.extraction.corpus import (
    CorpusError,
    CorpusSource,
    check_corpus,
    check_corpus_language,
    corpus_name,
    corpus_paths,
    iter_sentences,
)
from st_static.extraction.extract import extract_word_vectors
from st_static.extraction.selection import select_sentences
from st_static.extraction.teacher_model import load_teacher, load_teacher_tokenizer
from st_static.extraction.vocabulary import (
    Vocabulary,
    build_vocabulary,
    count_teacher_token_sentences,
    count_word_sentences,
)
from st_static.files import check_destination, folder_lock, staged_folder
from st_static.model.inference import encode
from st_static.model.languages import SPACELESS_LANGUAGES
from st_static.model.metadata import ModelMetadata, PCARecord
from st_static.model.save_load import holds_st_static_output, load_model, save_model
from st_static.model.static_word_average import StaticWordAverage
from st_static.model.tokenization import build_word_tokenizer
from st_static.reduction.pca import PCATransform, fit_pca, removed_components_for
from st_static.settings import ExtractionSettings, ReductionSettings, SettingsError
from st_static.teachers import resolve_teacher, teacher_max_seq_length, teacher_record
from st_static.tensors import to_numpy

logger = logging.getLogger(__name__)


@dataclass
class ExtractionStage:
    """Paths of a finished extraction folder."""

    folder: Path
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def model_path(self) -> Path:
        return self.folder / "model"

    @property
    def sentences_path(self) -> Path:
        return self.folder / "targets" / "sentences.txt"

    @property
    def targets_path(self) -> Path:
        return self.folder / "targets" / "teacher_embeddings.npy"

    @property
    def pca_sentences_path(self) -> Path:
        return self.folder / "pca_sentences.txt"

    def sentences(self) -> list[str]:
        return self.sentences_path.read_text(encoding="utf-8").split("\n")[:-1]

    def teacher_embeddings(self) -> np.ndarray:
        return np.load(self.targets_path, mmap_mode="r")

    def pca_sentences(self) -> list[str]:
        return self.pca_sentences_path.read_text(encoding="utf-8").split("\n")[:-1]

    @classmethod
    def open(cls, folder: str | os.PathLike[str]) -> ExtractionStage:
        """Open a finished extraction (or completion) folder, checking that its files are whole.

        Raises:
            FileNotFoundError: If it has no ``stats.json`` (not finished).
            StageFolderError: Naming the folder and the file, if a file is unreadable, truncated or empty, or the
                sentences and their embeddings disagree.
        """
        folder = Path(folder)
        stats_path = folder / "stats.json"
        if not stats_path.is_file():
            raise FileNotFoundError(f"{folder} is not a finished extraction folder (no stats.json).")
        stage = cls(folder=folder, stats=_read_stage_file(folder, "stats.json", _read_stats))
        stage.check()
        return stage

    def check(self) -> None:
        """Raise :class:`StageFolderError` unless the targets, their sentences and the PCA sample are whole."""
        embeddings = _read_stage_file(self.folder, "targets/teacher_embeddings.npy", _read_embeddings)
        sentences = _read_stage_file(self.folder, "targets/sentences.txt", _count_lines)
        if sentences != embeddings.shape[0]:
            raise StageFolderError(
                self.folder,
                "targets/sentences.txt",
                f"{sentences} sentences for {embeddings.shape[0]} rows of targets/teacher_embeddings.npy",
            )
        if _read_stage_file(self.folder, "pca_sentences.txt", _count_lines) == 0:
            raise StageFolderError(self.folder, "pca_sentences.txt", "it is empty")
        if not (self.model_path / "modules.json").is_file():
            raise StageFolderError(self.folder, "model/modules.json", "it is missing")


class StageFolderError(StStaticError, ValueError):
    """A finished stage folder of a build's work folder whose files are not whole (truncated, edited, emptied)."""

    def __init__(self, folder: Path, file_name: str, reason: str) -> None:
        super().__init__(
            f"{folder}: the stage folder is corrupt ({file_name}: {reason}); delete it ({folder.name}) and run again: "
            "the build recomputes it."
        )


def _read_stage_file(folder: Path, file_name: str, read: Callable[[Path], Any]) -> Any:
    try:
        return read(folder / file_name)
    except StageFolderError:
        raise
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise StageFolderError(folder, file_name, f"{type(error).__name__}: {error}") from error


def _read_stats(path: Path) -> dict[str, Any]:
    stats = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(stats, dict):
        raise ValueError(f"a JSON {type(stats).__name__}, not an object")
    return stats


def _read_embeddings(path: Path) -> np.ndarray:
    embeddings = np.load(path, mmap_mode="r", allow_pickle=False)
    if embeddings.ndim != 2 or not np.issubdtype(embeddings.dtype, np.floating):
        raise ValueError(f"an array of shape {embeddings.shape} and type {embeddings.dtype}, not a float matrix")
    return embeddings


def _count_lines(path: Path) -> int:
    """Lines of a UTF-8 text file (each ends with a newline), decoded in chunks."""
    decoder, lines = codecs.getincrementaldecoder("utf-8")(), 0
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 24):
            decoder.decode(chunk)
            lines += chunk.count(b"\n")
    decoder.decode(b"", final=True)
    return lines


def peak_memory_mib() -> float:
    """Peak resident memory of this process so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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
        size=settings.spaceless_vocab_size if spaceless else settings.vocab_size,
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
        stage = _extract(
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


def _extract(
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


def fit_reduction(module: StaticWordAverage, pca_sentences: Sequence[str], settings: ReductionSettings) -> PCATransform:
    """Step 2: fit the PCA (+ ABTT) on sentence vectors (means of the raw word vectors) or on the word table.

    Args:
        module: The extraction-stage module (raw teacher-dimension table).
        pca_sentences: Sentences embedded with the raw table to fit the sentence-level PCA.
        settings: Output dimension, removed components (default ``floor(teacher_dim / 100)``) and level.
    """
    removed_components = settings.removed_components
    if removed_components is None:
        removed_components = removed_components_for(module.embedding_dim)
    if settings.pca_level == "word":
        vectors = to_numpy(module.word_vectors)
    else:
        vectors = encode(module, list(pca_sentences), normalize=False)
        vectors = vectors[np.abs(vectors).sum(axis=1) > 0]  # sentences without a known word carry nothing
    return fit_pca(vectors, dim=settings.dim, removed_components=removed_components, level=settings.pca_level)


def run_reduction(
    extraction: ExtractionStage, output: str | os.PathLike[str] | None, settings: ReductionSettings
) -> SentenceTransformer:
    """Apply step 2 to a finished extraction and (with ``output``) save the reduced model atomically."""
    raw_module: StaticWordAverage = load_model(extraction.model_path)[0]
    transform = fit_reduction(raw_module, extraction.pca_sentences(), settings)
    reduced = transform.apply(to_numpy(raw_module.word_vectors))
    pca = PCARecord(level=settings.pca_level, removed_components=transform.removed_components, dim=settings.dim)
    module = StaticWordAverage(raw_module.tokenizer, reduced, metadata=raw_module.metadata.with_stage("pca", pca=pca))
    model = SentenceTransformer(modules=[module, Normalize()], device="cpu")
    if output is not None:
        save_model(model, output)
    return model


def run_completion(
    extraction: ExtractionStage,
    output: str | os.PathLike[str],
    settings: ExtractionSettings,
    languages: Sequence[str],
    device: str | None = None,
) -> ExtractionStage:
    """Step 1b: add words the corpus missed (:mod:`st_static.extraction.completion`).

    A cross-lingual table with Chinese or Japanese gets the teacher's tokens of those scripts
    (``settings.complete_spaceless``); a one-language table gets the language's most frequent words
    (``settings.complete_words``). Writes a folder laid out like the extraction's (its ``model`` holds the completed
    raw table; sentences, targets and the PCA sample are the extraction's), so the later stages read either.
    """
    from st_static.extraction.completion import complete_spaceless_vocabulary, complete_vocabulary, frequent_words

    output = Path(output)
    if (output / "stats.json").is_file():
        return ExtractionStage.open(output)
    started = time.perf_counter()
    settings = settings.with_teacher_prompt()  # prompt None: the teacher's own, as in the extraction
    raw_module: StaticWordAverage = load_model(extraction.model_path)[0]
    teacher = load_teacher(settings.teacher, device=process_device(device), precision=settings.teacher_precision)
    if len(languages) > 1:
        completed, report = complete_spaceless_vocabulary(raw_module, teacher, list(languages), prompt=settings.prompt)
    else:
        candidates = frequent_words(languages[0], settings.complete_words)
        completed, report = complete_vocabulary(
            raw_module, teacher, candidates, prompt=settings.prompt, skip_when_too_few=True
        )
    report["seconds"] = time.perf_counter() - started
    stats = {**extraction.stats, "completion": report}
    with staged_folder(output, replaceable=holds_st_static_output) as staging:
        save_model(SentenceTransformer(modules=[completed, Normalize()], device="cpu"), staging / "model")
        shutil.copytree(extraction.folder / "targets", staging / "targets", copy_function=_link_or_copy)
        _link_or_copy(extraction.pca_sentences_path, staging / "pca_sentences.txt")
        (staging / "stats.json").write_text(json.dumps(stats, indent=2), encoding="utf-8")
    return ExtractionStage(folder=output, stats=stats)


def run_fallback(
    model_path: str | os.PathLike[str],
    output: str | os.PathLike[str],
    settings: ExtractionSettings,
    device: str | None = None,
) -> Path:
    """The last step: the finished table with fallback rows (:mod:`st_static.extraction.fallback`), saved in
    ``output`` (with ``report.json``); a finished folder is reused.

    Returns:
        The saved model's folder (``output / "model"``).
    """
    from st_static.extraction.fallback import add_fallback_rows

    output = Path(output)
    if (output / "report.json").is_file():
        return output / "model"
    started = time.perf_counter()
    settings = settings.with_teacher_prompt()
    model = load_model(model_path)
    teacher = load_teacher(settings.teacher, device=process_device(device), precision=settings.teacher_precision)
    completed, report = add_fallback_rows(model, teacher, prompt=settings.prompt)
    report["seconds"] = time.perf_counter() - started
    with staged_folder(output, replaceable=holds_st_static_output) as staging:
        save_model(completed, staging / "model")
        (staging / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return output / "model"


def run_pieces(
    model_path: str | os.PathLike[str], output: str | os.PathLike[str], settings: ExtractionSettings
) -> Path:
    """The table with subword-piece rows (:mod:`st_static.extraction.pieces`), saved in ``output`` (with
    ``report.json``); a finished folder is reused. Reads the teacher's tokenizer only (its continuation tokens).

    Returns:
        The saved model's folder (``output / "model"``).
    """
    from st_static.extraction.pieces import add_piece_rows

    output = Path(output)
    if (output / "report.json").is_file():
        return output / "model"
    started = time.perf_counter()
    model = load_model(model_path)
    with_pieces, report = add_piece_rows(model, load_teacher_tokenizer(settings.teacher))
    report["seconds"] = time.perf_counter() - started
    with staged_folder(output, replaceable=holds_st_static_output) as staging:
        save_model(with_pieces, staging / "model")
        (staging / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return output / "model"


def _link_or_copy(source: str | os.PathLike[str], destination: str | os.PathLike[str]) -> None:
    """Hard-link a read-only stage file (copy where links are not possible)."""
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)
