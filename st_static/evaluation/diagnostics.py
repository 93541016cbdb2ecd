"""Geometry of bilingual embeddings: alignment and uniformity (Wang & Isola, 2020), language-identity silhouette.

References:
    - Wang & Isola, 2020. Understanding Contrastive Representation Learning through Alignment and Uniformity on
      the Hypersphere. ICML.
    - The language-bias paper on multilingual embeddings, section 5.1 (both measures on parallel pairs).
    - Wada et al., 2025. Static Word Embeddings for Sentence Semantic Representation, section 5.2 (silhouette of
      languages).
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import silhouette_score

from st_static.evaluation.encoders import unit_rows


def alignment(embeddings1: np.ndarray, embeddings2: np.ndarray) -> float:
    """Mean squared Euclidean distance between the unit vectors of aligned pairs (lower = closer translations)."""
    if len(embeddings1) != len(embeddings2) or len(embeddings1) == 0:
        raise ValueError(f"Alignment needs aligned, non-empty sides, got {len(embeddings1)} and {len(embeddings2)}.")
    difference = unit_rows(np.asarray(embeddings1, np.float64)) - unit_rows(np.asarray(embeddings2, np.float64))
    return float(np.mean(np.sum(difference**2, axis=1)))


def uniformity(embeddings: np.ndarray, t: float = 2.0, max_samples: int = 4000, seed: int = 0) -> float:
    """``log E exp(-t ||x - z||^2)`` over distinct pairs of unit vectors (lower = more evenly spread).

    Args:
        embeddings: ``(n, d)`` vectors (normalised here).
        t: The temperature of the Gaussian potential (2 in Wang & Isola).
        max_samples: Above this many vectors, a fixed random subset of this size is used (the cost is quadratic).
        seed: Seed of that subset.

    Raises:
        ValueError: With fewer than two embeddings.
    """
    unit = unit_rows(np.asarray(embeddings, np.float64))
    if len(unit) > max_samples:
        unit = unit[np.sort(np.random.default_rng(seed).choice(len(unit), max_samples, replace=False))]
    count = len(unit)
    if count < 2:
        raise ValueError("Uniformity needs at least two embeddings.")
    squared_norms = np.sum(unit**2, axis=1)
    squared_distances = np.maximum(squared_norms[:, None] + squared_norms[None, :] - 2 * unit @ unit.T, 0.0)
    upper = np.triu_indices(count, k=1)
    values = -t * squared_distances[upper]
    peak = values.max()
    return float(peak + np.log(np.mean(np.exp(values - peak))))


def language_silhouette(embeddings1: np.ndarray, embeddings2: np.ndarray, metric: str = "cosine") -> float:
    """Silhouette score of the language labels of two sets of vectors (near 0: mixed; near 1: separated).

    Zero vectors are left out (cosine distance is undefined for them).

    Raises:
        ValueError: If either side has fewer than two non-zero vectors.
    """
    embeddings1, embeddings2 = np.asarray(embeddings1), np.asarray(embeddings2)
    kept1 = embeddings1[np.linalg.norm(embeddings1, axis=1) > 0]
    kept2 = embeddings2[np.linalg.norm(embeddings2, axis=1) > 0]
    if len(kept1) < 2 or len(kept2) < 2:
        raise ValueError("The silhouette needs at least two non-zero vectors per language.")
    vectors = np.concatenate([kept1, kept2]).astype(np.float64)
    labels = np.concatenate([np.zeros(len(kept1), dtype=int), np.ones(len(kept2), dtype=int)])
    return float(silhouette_score(vectors, labels, metric=metric))


def bilingual_diagnostics(embeddings1: np.ndarray, embeddings2: np.ndarray) -> dict[str, float]:
    """Alignment of the pairs, uniformity of both sides together and the language silhouette.

    Returns:
        ``{"alignment": ..., "uniformity": ..., "language_silhouette": ...}`` (silhouette NaN if undefined).
    """
    try:
        silhouette = language_silhouette(embeddings1, embeddings2)
    except ValueError:
        silhouette = float("nan")
    return {
        "alignment": alignment(embeddings1, embeddings2),
        "uniformity": uniformity(np.concatenate([embeddings1, embeddings2])),
        "language_silhouette": silhouette,
    }
