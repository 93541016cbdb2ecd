"""Sentence-level PCA with All-But-The-Top: reduce the table so that *sentence* vectors keep their variance."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from st_static.tensors import to_numpy

logger = logging.getLogger(__name__)


@dataclass
class PCATransform:
    """``E2(w) = components^T (E1(w) - mean)``: centring and projection fitted on sentence (or word) vectors."""

    mean: np.ndarray
    """``(teacher_dim,)`` mean subtracted before projecting."""
    components: np.ndarray
    """``(teacher_dim, dim)`` kept principal directions, by decreasing variance."""
    explained_variance: np.ndarray
    """``(teacher_dim,)`` variance of every principal direction (including the removed ones)."""
    removed_components: int
    level: str

    def apply(self, word_vectors: np.ndarray) -> np.ndarray:
        """Transform a ``(num_words, teacher_dim)`` table into the reduced ``(num_words, dim)`` table."""
        return ((word_vectors.astype(np.float64) - self.mean) @ self.components).astype(np.float32)


def removed_components_for(teacher_dim: int) -> int:
    """ABTT's default: drop the first ``floor(d / 100)`` principal components."""
    return teacher_dim // 100


def fit_pca(
    vectors: np.ndarray,
    dim: int,
    removed_components: int,
    level: Literal["sentence", "word"] = "sentence",
) -> PCATransform:
    """Fit PCA on ``vectors``, drop the first ``removed_components`` directions and keep the next ``dim``.

    Args:
        vectors: ``(n, teacher_dim)``: sentence vectors (means of the extracted word vectors) for the
            sentence-level PCA, or the word table itself for the word-level variant.
        dim: Output dimension d'.
        removed_components: Leading components removed (All-But-The-Top); 0 disables ABTT.
        level: Recorded in the result ("sentence" or "word").

    Raises:
        ValueError: If ``dim + removed_components`` exceeds the input dimension or there are too few vectors.
    """
    vectors = np.asarray(vectors, dtype=np.float64)
    count, teacher_dim = vectors.shape
    if dim < 1 or removed_components < 0:
        raise ValueError(f"dim must be positive and removed_components non-negative, got {dim}, {removed_components}.")
    if dim + removed_components > teacher_dim:
        raise ValueError(
            f"Cannot keep {dim} dimensions after removing {removed_components}: the teacher has only {teacher_dim}."
        )
    if count < dim + removed_components + 1:
        raise ValueError(f"PCA to {dim} dimensions needs more than {dim + removed_components} vectors, got {count}.")
    mean = vectors.mean(axis=0)
    centred = torch.from_numpy(vectors - mean)
    covariance = to_numpy(centred.T @ centred / (count - 1))
    eigenvalues, eigenvectors = np.linalg.eigh(covariance)
    order = np.argsort(eigenvalues)[::-1]
    eigenvalues, eigenvectors = eigenvalues[order], eigenvectors[:, order]
    # Deterministic signs: the largest-magnitude loading of each component is positive.
    signs = np.sign(eigenvectors[np.abs(eigenvectors).argmax(axis=0), np.arange(teacher_dim)])
    eigenvectors = eigenvectors * np.where(signs == 0, 1, signs)
    kept = eigenvectors[:, removed_components : removed_components + dim]
    return PCATransform(
        mean=mean,
        components=kept,
        explained_variance=np.clip(eigenvalues, 0, None),
        removed_components=removed_components,
        level=level,
    )
