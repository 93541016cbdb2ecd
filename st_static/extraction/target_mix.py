"""Distillation targets from two teachers: a second teacher's vectors of the extraction's sentences, mixed with the
first's so that the student learns a weighted mean of both teachers' similarities.

The similarity distillation loss compares cosine similarities only, so a target vector may be any vector whose
cosines are the ones to learn. Each teacher's block is centred and L2-normalised, scaled by the square root of its
weight and concatenated: the cosine of two such vectors is exactly the weighted mean of the teachers' cosines
(weights summing to 1). One teacher can then give the table its word vectors (MiniLM: sentence similarity) and the
other add its topics (nomic-embed-text: clustering, sentiment) to what the table learns.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tqdm.auto import tqdm

from st_static.files import staged_folder, write_file_atomically, write_text_atomically

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


def encode_targets(
    teacher: SentenceTransformer,
    sentences: Sequence[str],
    prompt: str,
    partial: Path,
    batch_tokens: int = 1024,
    max_batch_size: int = 128,
) -> np.ndarray:
    """The teacher's normalised sentence vectors of ``sentences``, in their order.

    Batches are planned as the extraction's teacher pass plans them (similar token counts, at most ``batch_tokens``
    padded token slots: small batches run fastest on a CPU), and the pass runs in chunks of :data:`CHUNK` sentences
    kept in ``partial``, so an interrupted pass resumes.
    """
    import torch

    from st_static.extraction.extract import plan_batches, teacher_token_counts
    from st_static.tensors import to_numpy

    partial.mkdir(parents=True, exist_ok=True)
    fingerprint = {"sentences": len(sentences), "first": sentences[0] if sentences else "", "prompt": prompt}
    marker = partial / "fingerprint.json"
    if marker.is_file() and json.loads(marker.read_text(encoding="utf-8")) != fingerprint:
        for stale in partial.glob("chunk-*.npy"):
            stale.unlink()
    write_text_atomically(marker, json.dumps(fingerprint))
    counts = teacher_token_counts(teacher, list(sentences), prompt)
    order = np.argsort(counts, kind="stable")  # a chunk holds sentences of similar length
    dim = teacher.get_embedding_dimension() or 0
    vectors = np.zeros((len(sentences), dim), dtype=np.float32)
    teacher.eval()
    progress = tqdm(total=len(sentences), desc="Encoding with the second teacher", unit=" sentences", mininterval=2.0)
    for start in range(0, len(sentences), CHUNK):
        indices = order[start : start + CHUNK]
        path = partial / f"chunk-{start // CHUNK:06d}.npy"
        if path.is_file():
            vectors[indices] = np.load(path)
            progress.update(len(indices))
            continue
        texts = [sentences[index] for index in indices]
        chunk = np.zeros((len(texts), dim), dtype=np.float32)
        with torch.inference_mode():
            for batch in plan_batches(texts, batch_tokens, max_batch_size, counts[indices]):
                features = teacher.preprocess(batch.texts, prompt=prompt or None)
                features = {
                    key: value.to(teacher.device) if torch.is_tensor(value) else value
                    for key, value in features.items()
                }
                chunk[batch.indices] = to_numpy(teacher.forward(features)["sentence_embedding"], dtype=torch.float32)
                progress.update(len(batch.texts))
        chunk /= np.maximum(np.linalg.norm(chunk, axis=1, keepdims=True), 1e-12)
        write_file_atomically(path, lambda temporary, chunk=chunk: _save_array(temporary, chunk))
        vectors[indices] = chunk
    progress.close()
    return vectors


def _save_array(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as handle:  # (np.save given a path would add ".npy" to it)
        np.save(handle, array)
