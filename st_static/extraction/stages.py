"""Steps 1 and 2 of the method as resumable stages that read and write folders.

``run_extraction`` (vocabulary, sentence selection, teacher pass) writes::

    extraction/
      model/                 SentenceTransformer: StaticWordAverage over the raw (teacher-dim) table + Normalize
      targets/sentences.txt  the encoded sentences, one per line
      targets/teacher_embeddings.npy   their teacher sentence embeddings (float32), the distillation targets
      pca_sentences.txt      a uniform corpus sample for fitting the PCA
      stats.json             timings, coverage, memory

``run_reduction`` (sentence-level PCA + ABTT, or word-level PCA) turns that into a ready model. Every folder
is staged under a temporary name and renamed when complete; the teacher pass checkpoints into
``extraction.partial/`` so an interrupted run resumes there.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import shutil
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from tokenizers import Tokenizer

from st_static.extraction.corpus import CorpusError, CorpusSource, check_corpus_source, iter_sentences
from st_static.extraction.extract import TeacherError, check_teacher, extract_word_vectors, process_rank
from st_static.extraction.pca import PCATransform, fit_pca, removed_components_for
from st_static.extraction.selection import select_sentences
from st_static.extraction.vocabulary import (
    Vocabulary,
    build_vocabulary,
    count_teacher_token_sentences,
    count_word_sentences,
)
from st_static.files import check_destination, staged_folder
from st_static.inference import encode
from st_static.io import holds_st_static_output, load_model, save_model
from st_static.static_word_average import StaticWordAverage
from st_static.teachers import resolve_teacher, teacher_repo_id
from st_static.tokenization import build_word_tokenizer

logger = logging.getLogger(__name__)

MIN_CORPUS_SENTENCES = 10


@dataclass
class ExtractionSettings:
    """What the extraction stage does; saved in ``stats.json`` and checked on resume."""

    teacher: str
    prompt: str = ""
    language: str = "en"
    lowercase: bool = True
    vocab_size: int = 150_000
    min_sentences: int = 3
    sentences_per_word: int = 100
    max_words: int = 64
    pca_sample_size: int = 100_000
    wordfreq_weight: float = 0.0
    word_list: list[str] | None = None
    spaceless: bool = False
    """Build the vocabulary from teacher tokens (Chinese, Japanese) instead of words."""
    batch_tokens: int = 1024
    seed: int = 0
    corpus: str = ""


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
        folder = Path(folder)
        stats_path = folder / "stats.json"
        if not stats_path.is_file():
            raise FileNotFoundError(f"{folder} is not a finished extraction folder (no stats.json).")
        return cls(folder=folder, stats=json.loads(stats_path.read_text(encoding="utf-8")))


def peak_memory_mib() -> float:
    """Peak resident memory of this process so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load_teacher_tokenizer(teacher_path: str) -> Tokenizer:
    """The teacher's Rust tokenizer, without loading the model weights."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(teacher_path)
    if not getattr(tokenizer, "is_fast", False):
        raise TeacherError(f"The teacher {teacher_path} has no fast (Rust) tokenizer; character offsets are needed.")
    return tokenizer._tokenizer


def build_vocabulary_from_corpus(
    corpus: CorpusSource, settings: ExtractionSettings, teacher_tokenizer: Any
) -> Vocabulary:
    """Count the corpus and choose the vocabulary (words, or teacher tokens for space-less scripts)."""
    if settings.spaceless:
        counts: Counter[str] = count_teacher_token_sentences(iter_sentences(corpus), teacher_tokenizer)
    else:
        counts = count_word_sentences(iter_sentences(corpus), lowercase=settings.lowercase)
    if not counts:
        raise CorpusError("The corpus has no words (it is empty or holds only punctuation and symbols).")
    return build_vocabulary(
        counts,
        size=settings.vocab_size,
        min_sentences=settings.min_sentences,
        lowercase=settings.lowercase,
        word_list=settings.word_list,
        wordfreq_weight=settings.wordfreq_weight,
        language=settings.language,
    )


def run_extraction(
    corpus: CorpusSource,
    settings: ExtractionSettings,
    output: str | os.PathLike[str],
    resume: bool = False,
    vocabulary: Vocabulary | None = None,
    pca_sentences: Sequence[str] | None = None,
    languages: Sequence[str] | None = None,
) -> ExtractionStage:
    """Step 1: choose the vocabulary, select sentences, run the teacher and average its token vectors.

    Args:
        corpus: A text file (one sentence per line), an iterable of str or a ``datasets`` dataset.
        settings: What to do (teacher, vocabulary size, sentences per word, ...).
        output: The extraction folder to write (see the module docstring).
        resume: Reuse a finished ``output`` folder, or continue the teacher pass from ``output.partial``.
        vocabulary: A ready vocabulary (skips counting the corpus), e.g. the union of several languages.
        pca_sentences: The sentences to fit the PCA on (default: a uniform sample of the corpus), e.g. an
            equal number per language for a cross-lingual table.
        languages: The table's languages, for the metadata (default: ``settings.language``).

    Returns:
        The finished stage.

    Raises:
        CorpusError: If the corpus is missing, empty or too small — before the teacher is loaded.
        TeacherError: If the teacher cannot give token vectors.
    """
    output = Path(output)
    if resume and (output / "stats.json").is_file():
        logger.info("Extraction already finished in %s; reusing it.", output)
        return ExtractionStage.open(output)
    check_corpus_source(corpus)
    corpus_inputs = [corpus] if isinstance(corpus, str | os.PathLike) else []
    check_destination(output, replaceable=holds_st_static_output, inputs=corpus_inputs)
    timings: dict[str, float] = {}
    started = time.perf_counter()

    teacher_path = resolve_teacher(settings.teacher)
    teacher_tokenizer = load_teacher_tokenizer(teacher_path)
    if vocabulary is None:
        vocabulary = build_vocabulary_from_corpus(corpus, settings, teacher_tokenizer)
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
        seed=settings.seed,
    )
    if selection.corpus_size < MIN_CORPUS_SENTENCES:
        raise CorpusError(
            f"The corpus has only {selection.corpus_size} sentences; at least {MIN_CORPUS_SENTENCES} are needed."
        )
    timings["selection"] = time.perf_counter() - stage_started

    stage_started = time.perf_counter()
    teacher = SentenceTransformer(teacher_path, device=None)
    check_teacher(teacher)
    timings["load_teacher"] = time.perf_counter() - stage_started

    partial = output.with_name(output.name + ".partial")
    rank, world_size = process_rank()
    if partial.exists() and not resume and rank == 0:
        shutil.rmtree(partial)
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
        teacher_name=teacher_path,
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
    metadata = {
        "teacher": teacher_repo_id(settings.teacher) or settings.teacher,
        "teacher_dim": int(result.word_vectors.shape[1]),
        "prompt": settings.prompt,
        "languages": list(languages or [settings.language]),
        "corpus": settings.corpus or (str(corpus) if isinstance(corpus, str | os.PathLike) else "iterable"),
        "vocab_size": len(kept_words),
        "stages": ["extraction"],
    }
    module = StaticWordAverage(word_tokenizer, result.word_vectors[seen], metadata=metadata)
    model = SentenceTransformer(modules=[module, Normalize()], device="cpu")

    if rank != 0:  # under torchrun, the first process writes the folder; the others wait for it
        torch.distributed.barrier()
        return ExtractionStage.open(output)
    with staged_folder(output, replaceable=holds_st_static_output, inputs=corpus_inputs) as staging:
        save_model(model, staging / "model")
        (staging / "targets").mkdir()
        _write_lines(staging / "targets" / "sentences.txt", selection.sentences)
        np.save(staging / "targets" / "teacher_embeddings.npy", result.sentence_embeddings)
        _write_lines(staging / "pca_sentences.txt", pca_sentences or selection.pca_sentences)
        (staging / "stats.json").write_text(json.dumps(stats, indent=2), encoding="utf-8")
    shutil.rmtree(partial, ignore_errors=True)
    if world_size > 1:
        torch.distributed.barrier()
    return ExtractionStage(folder=output, stats=stats)


def _write_lines(path: Path, lines: Sequence[str]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(line.replace("\n", " ") + "\n")


def fit_reduction(
    module: StaticWordAverage,
    pca_sentences: Sequence[str],
    dim: int = 256,
    removed_components: int | None = None,
    level: Literal["sentence", "word"] = "sentence",
) -> PCATransform:
    """Step 2: fit the PCA (+ ABTT) on sentence vectors (means of the raw word vectors) or on the word table.

    Args:
        module: The extraction-stage module (raw teacher-dimension table).
        pca_sentences: Sentences embedded with the raw table to fit the sentence-level PCA.
        dim: Output dimension d'.
        removed_components: Leading components dropped; default ``floor(teacher_dim / 100)``.
        level: ``"sentence"`` (the method) or ``"word"`` (for comparison).
    """
    teacher_dim = module.embedding_dim
    if removed_components is None:
        removed_components = removed_components_for(teacher_dim)
    if level == "word":
        vectors = module.word_vectors.detach().numpy()
    else:
        vectors = encode(module, list(pca_sentences), normalize=False)
        vectors = vectors[np.abs(vectors).sum(axis=1) > 0]  # sentences without a known word carry nothing
    return fit_pca(vectors, dim=dim, removed_components=removed_components, level=level)


def run_reduction(
    extraction: ExtractionStage,
    output: str | os.PathLike[str] | None = None,
    dim: int = 256,
    removed_components: int | None = None,
    level: Literal["sentence", "word"] = "sentence",
) -> SentenceTransformer:
    """Apply step 2 to a finished extraction and (optionally) save the reduced model atomically."""
    raw_model = load_model(extraction.model_path)
    raw_module: StaticWordAverage = raw_model[0]
    transform = fit_reduction(raw_module, extraction.pca_sentences(), dim, removed_components, level)
    reduced = transform.apply(raw_module.word_vectors.detach().numpy())
    metadata = dict(raw_module.metadata)
    metadata["stages"] = [*metadata.get("stages", []), "pca"]
    metadata["pca"] = {"level": level, "removed_components": transform.removed_components, "dim": dim}
    module = StaticWordAverage(raw_module.tokenizer, reduced, metadata=metadata)
    model = SentenceTransformer(modules=[module, Normalize()], device="cpu")
    if output is not None:
        save_model(model, output)
    return model


def run_completion(
    extraction: ExtractionStage,
    output: str | os.PathLike[str],
    teacher: str,
    languages: Sequence[str],
    prompt: str = "",
    max_new_tokens: int | None = None,
) -> ExtractionStage:
    """Step 1b (cross-lingual tables with Chinese or Japanese): add the teacher's tokens the corpus missed.

    Writes a folder laid out like the extraction's (its ``model`` holds the completed raw table; sentences,
    targets and the PCA sample are the extraction's), so the later stages read either. See
    :mod:`st_static.extraction.completion`.
    """
    from st_static.extraction.completion import complete_spaceless_vocabulary

    output = Path(output)
    if (output / "stats.json").is_file():
        return ExtractionStage.open(output)
    started = time.perf_counter()
    raw_module: StaticWordAverage = load_model(extraction.model_path)[0]
    teacher_model = SentenceTransformer(resolve_teacher(teacher), device=None)
    check_teacher(teacher_model)
    completed, report = complete_spaceless_vocabulary(
        raw_module, teacher_model, list(languages), prompt=prompt, max_new_tokens=max_new_tokens
    )
    report["seconds"] = time.perf_counter() - started
    stats = {**extraction.stats, "completion": report}
    with staged_folder(output, replaceable=holds_st_static_output) as staging:
        save_model(SentenceTransformer(modules=[completed, Normalize()], device="cpu"), staging / "model")
        shutil.copytree(extraction.folder / "targets", staging / "targets", copy_function=_link_or_copy)
        _link_or_copy(extraction.pca_sentences_path, staging / "pca_sentences.txt")
        (staging / "stats.json").write_text(json.dumps(stats, indent=2), encoding="utf-8")
    return ExtractionStage(folder=output, stats=stats)


def _link_or_copy(source: str | os.PathLike[str], destination: str | os.PathLike[str]) -> None:
    """Hard-link a read-only stage file (copy where links are not possible)."""
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)
