"""Distillation targets from two teachers: a second teacher's vectors of the extraction's sentences, beside the
first's, so that the student learns from both teachers' similarities.

Each teacher's block is centred and L2-normalised and the blocks are concatenated. Two ways to mix them
(``second_teacher_mix``):

- ``distributions`` (:meth:`SecondTeacherTargets.side_by_side`): the similarity distillation loss reads the blocks
  apart (``teacher_dims``) and learns the weighted mean of each teacher's in-batch neighbour distribution, so each
  teacher keeps its own nearest neighbours.
- ``cosines`` (:meth:`SecondTeacherTargets.mixed_with`): each block is scaled by the square root of its weight, so
  that the cosine of two target vectors is exactly the weighted mean of the teachers' cosines (weights summing to
  1), and the loss learns that one similarity.

One teacher can then give the table its word vectors and the other add what it knows better (MiniLM: sentence
similarity; nomic-embed-text: topics, clustering, sentiment).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from st_static.extraction import teacher_targets
from st_static.files import staged_folder

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

TARGETS_FILE = "targets.npy"
SAMPLE_FILE = "sample.npy"
CHUNK = 4096
"""Sentences per resumable chunk of the second teacher's pass."""


@dataclass(frozen=True)
class SecondTeacherTargets:
    """Which distillation sentences the second teacher read (``sample``: their indices) and its vectors of them."""

    sample: np.ndarray
    vectors: np.ndarray

    @classmethod
    def open(cls, folder: str | os.PathLike[str]) -> SecondTeacherTargets:
        folder = Path(folder)
        return cls(sample=np.load(folder / SAMPLE_FILE), vectors=np.load(folder / TARGETS_FILE))

    def mixed_with(self, first: np.ndarray, weight: float) -> np.ndarray:
        """Targets mixing the first teacher's vectors of every distillation sentence (``first``) with these, for
        the sampled sentences: ``weight`` is the second teacher's share."""
        return mix_targets([np.asarray(first[self.sample]), self.vectors], [1.0 - weight, weight])

    def side_by_side(self, first: np.ndarray, weight: float) -> tuple[np.ndarray, dict[str, list[Any]]]:
        """Both teachers' targets of the sampled sentences side by side (each block centred and normalised), and
        the arguments that make the similarity distillation loss mix their distributions: the blocks' widths and
        weights (``weight`` is the second teacher's share)."""
        dims = [first.shape[1], self.vectors.shape[1]]
        targets = mix_targets([np.asarray(first[self.sample]), self.vectors], [0.5, 0.5])
        return targets, {"teacher_dims": dims, "teacher_weights": [1.0 - weight, weight]}


def sample_sentences(count: int, size: int, seed: int = 0) -> np.ndarray:
    """Sorted indices of ``size`` of ``count`` sentences (all of them when ``size >= count``), chosen with ``seed``."""
    return np.sort(np.random.default_rng(seed).permutation(count)[:size])


def run_second_teacher(
    teacher: SentenceTransformer,
    sentences: Sequence[str],
    prompt: str,
    size: int,
    destination: str | os.PathLike[str],
) -> SecondTeacherTargets:
    """Encode a sample of ``size`` of the distillation ``sentences`` with the second teacher and publish the
    sample and the vectors in ``destination`` (resumable; a finished folder is read back)."""
    destination = Path(destination)
    if (destination / SAMPLE_FILE).is_file() and (destination / TARGETS_FILE).is_file():
        return SecondTeacherTargets.open(destination)
    sample = sample_sentences(len(sentences), size)
    partial = destination.with_name(destination.name + ".partial")
    vectors = encode_targets(teacher, [sentences[index] for index in sample], prompt, partial)
    with staged_folder(destination, replaceable=lambda _: True) as staging:
        np.save(staging / TARGETS_FILE, vectors)
        np.save(staging / SAMPLE_FILE, sample)
    for chunk in partial.glob("*"):
        chunk.unlink()
    partial.rmdir()
    logger.info("The second teacher encoded %d distillation sentences.", len(sample))
    return SecondTeacherTargets(sample=sample, vectors=vectors)


def mix_targets(blocks: Sequence[np.ndarray], weights: Sequence[float]) -> np.ndarray:
    """One float32 vector per row whose cosines are the ``weights``-weighted mean of each block's centred cosines.

    Args:
        blocks: One ``(n, d_i)`` array per teacher, the same ``n`` rows (sentences) in each.
        weights: One non-negative weight per block; they are scaled to sum to 1.

    Raises:
        ValueError: If the blocks disagree in rows, the weights in number, or a weight is negative or all are 0.
    """
    if len(blocks) != len(weights) or not blocks:
        raise ValueError(f"Give one weight per teacher block: {len(blocks)} blocks, {len(weights)} weights.")
    rows = {len(block) for block in blocks}
    if len(rows) != 1:
        raise ValueError(f"The teachers' targets cover different sentences: {sorted(rows)} rows.")
    weight_array = np.asarray(weights, dtype=np.float64)
    if not np.all(np.isfinite(weight_array)) or np.any(weight_array < 0) or weight_array.sum() <= 0:
        raise ValueError(f"Teacher weights must be finite, non-negative and not all 0, got {list(weights)}.")
    weight_array = weight_array / weight_array.sum()
    parts = []
    for block, weight in zip(blocks, weight_array, strict=True):
        if weight == 0:
            continue
        centred = np.asarray(block, dtype=np.float32) - np.asarray(block, dtype=np.float64).mean(0).astype(np.float32)
        norms = np.linalg.norm(centred, axis=1, keepdims=True)
        parts.append(centred / np.maximum(norms, 1e-12) * np.float32(np.sqrt(weight)))
    return np.concatenate(parts, axis=1).astype(np.float32)


def encode_targets(teacher: SentenceTransformer, sentences: Sequence[str], prompt: str, partial: Path) -> np.ndarray:
    """The second teacher's normalised vectors of ``sentences``, in their order, in a pass that resumes from the
    chunks of :data:`CHUNK` sentences kept in ``partial`` (see :mod:`st_static.extraction.teacher_targets`)."""
    return teacher_targets.encode_targets(
        teacher, sentences, prompt, partial, chunk=CHUNK, description="Encoding with the second teacher"
    )
