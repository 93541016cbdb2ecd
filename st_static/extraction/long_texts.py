"""Step 1c: multi-sentence texts and the teacher's vectors of them, extra distillation targets.

The corpus sentences teach how a short sentence's words add up. Searching and clustering documents needs the same
for long texts, where the teacher weighs a few topical words against many function words. A long text here is a
passage of one document (``--passages``, one per line) or else a run of consecutive corpus lines joined with spaces,
cut to the teacher's input length, so the student (which reads every word) sees what the teacher read. Runs of a
shuffled corpus (as ``en.txt`` is) join unrelated sentences; passages keep a document's topic.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from st_static.extraction import teacher_targets
from st_static.files import staged_folder

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

TEXTS_FILE = "texts.txt"
TARGETS_FILE = "targets.npy"
CHUNK = 512
"""Texts per resumable chunk of the teacher pass."""


@dataclass(frozen=True)
class LongTexts:
    """Multi-sentence texts and the teacher's (normalised) sentence vectors of them."""

    texts: list[str]
    targets: np.ndarray

    @classmethod
    def open(cls, folder: str | os.PathLike[str]) -> LongTexts:
        folder = Path(folder)
        texts = (folder / TEXTS_FILE).read_text(encoding="utf-8").split("\n")
        return cls(texts=texts, targets=np.load(folder / TARGETS_FILE))


def make_long_texts(
    sentences: Sequence[str],
    count: int,
    sentences_per_text: int,
    seed: int = 0,
    cut: int | None = None,
) -> list[str]:
    """``count`` runs of ``sentences_per_text`` consecutive sentences, each joined with spaces.

    Args:
        sentences: The corpus, in file order.
        count: How many texts (fewer when the corpus has fewer runs).
        sentences_per_text: Sentences per text (the last run of the corpus may be shorter).
        seed: Chooses the runs.
        cut: Keep at most this many whitespace-separated words of a text (the teacher's reach).

    Raises:
        ValueError: If ``sentences_per_text`` < 2 or the corpus has fewer sentences than one text needs.
    """
    if sentences_per_text < 2:
        raise ValueError(f"A long text joins at least 2 sentences, got {sentences_per_text}.")
    runs = len(sentences) // sentences_per_text
    if runs < 1:
        raise ValueError(f"The corpus has {len(sentences)} sentences, fewer than one long text needs.")
    starts = np.random.default_rng(seed).permutation(runs)[:count] * sentences_per_text
    texts = []
    for start in sorted(int(start) for start in starts):
        words = " ".join(sentences[start : start + sentences_per_text]).split()
        texts.append(" ".join(words[:cut] if cut else words))
    return texts


def pick_passages(passages: Sequence[str], count: int, seed: int = 0, cut: int | None = None) -> list[str]:
    """``count`` of the non-empty ``passages`` (all of them for 0), chosen with ``seed``, each cut to ``cut`` words.

    Raises:
        ValueError: If no passage has text.
    """
    texts = [" ".join(passage.split()) for passage in passages]
    texts = [text for text in texts if text]
    if not texts:
        raise ValueError("The passages file has no text: give one passage per line.")
    if count and count < len(texts):
        chosen = np.sort(np.random.default_rng(seed).permutation(len(texts))[:count])
        texts = [texts[int(index)] for index in chosen]
    return [" ".join(text.split()[:cut]) if cut else text for text in texts]


def encode_long_texts(teacher: SentenceTransformer, texts: list[str], prompt: str, partial: Path) -> np.ndarray:
    """The teacher's normalised vectors of ``texts``, in their order, in a pass that resumes from the chunks of
    :data:`CHUNK` texts kept in ``partial`` (:func:`st_static.extraction.teacher_targets.encode_targets`)."""
    return teacher_targets.encode_targets(
        teacher, texts, prompt, partial, chunk=CHUNK, description="Encoding long texts"
    )


def run_long_texts(
    sentences: Sequence[str],
    teacher: SentenceTransformer,
    destination: str | os.PathLike[str],
    *,
    count: int,
    sentences_per_text: int,
    prompt: str,
    seed: int = 0,
    passages: Sequence[str] | None = None,
) -> LongTexts:
    """Make the long texts (from ``passages`` when given, else runs of ``sentences``), encode them with the teacher
    and publish both in ``destination`` (resumable)."""
    destination = Path(destination)
    if (destination / TARGETS_FILE).is_file():
        return LongTexts.open(destination)
    cut = teacher.max_seq_length // 2 if teacher.max_seq_length else None  # about one word per two tokens
    if passages is not None:
        texts = pick_passages(passages, count, seed=seed, cut=cut)
    else:
        texts = make_long_texts(sentences, count, sentences_per_text, seed=seed, cut=cut)
    order = sorted(range(len(texts)), key=lambda index: len(texts[index]))  # similar lengths batch together
    ordered = [texts[index] for index in order]
    partial = destination.with_name(destination.name + ".partial")
    vectors = encode_long_texts(teacher, ordered, prompt, partial)
    logger.info("Encoded %d long texts.", len(ordered))
    with staged_folder(destination, replaceable=lambda _: True) as staging:
        (staging / TEXTS_FILE).write_text("\n".join(ordered), encoding="utf-8")
        np.save(staging / TARGETS_FILE, vectors)
    for chunk in partial.glob("*"):
        chunk.unlink()
    partial.rmdir()
    return LongTexts(texts=ordered, targets=vectors)
