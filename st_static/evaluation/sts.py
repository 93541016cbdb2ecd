"""Semantic textual similarity: Spearman correlation (x100) between cosine similarity and gold scores."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
from scipy.stats import pearsonr, spearmanr

from st_static.data_files import DataFormatError, ScoredPairs, read_scored_pairs
from st_static.evaluation.encoders import Encoder, cosine_similarities

MIN_STS_PAIRS = 3
"""The fewest pairs an STS file may hold: two pairs correlate at +-100 whatever the model."""
CONSTANT_SIMILARITY = 1e-6
"""Cosines that vary by less than this are equal but for float rounding (a pair's two texts the same)."""


def spearman_cosine(embeddings1: np.ndarray, embeddings2: np.ndarray, gold_scores: np.ndarray) -> float:
    """Spearman's rank correlation x100 between the pairs' cosine similarities and the gold scores.

    A pair with a zero vector (a text without any known word) has similarity 0. ``mteb`` instead uses
    ``1 - paired_cosine_distances``, which gives 1 for two zero vectors and 0.5 for one; both agree otherwise.

    Returns:
        The correlation x100, or NaN when it is undefined (all similarities equal, within
        :data:`CONSTANT_SIMILARITY`, or all gold scores equal).

    Raises:
        ValueError: If the arrays do not describe the same number of pairs.
    """
    embeddings1, embeddings2 = np.asarray(embeddings1), np.asarray(embeddings2)
    gold_scores = np.asarray(gold_scores, dtype=np.float64)
    if not (len(embeddings1) == len(embeddings2) == len(gold_scores)):
        raise ValueError(
            f"Got {len(embeddings1)} and {len(embeddings2)} embeddings for {len(gold_scores)} gold scores."
        )
    if len(gold_scores) < 2:
        raise ValueError("A correlation needs at least two pairs.")
    similarities = cosine_similarities(embeddings1, embeddings2)
    if np.ptp(similarities) < CONSTANT_SIMILARITY or np.ptp(gold_scores) == 0:
        return math.nan
    return 100.0 * float(spearmanr(similarities, gold_scores).statistic)


def read_sts_file(path: str | os.PathLike[str]) -> ScoredPairs:
    """Read an STS file (``sentence1``, ``sentence2``, ``score``) that a Spearman correlation can score.

    Raises:
        DataFormatError: If a score is not a finite number, or the file has fewer than three pairs (two give +-100
            whatever the model), one gold score for every pair, or pairs that every model scores alike (each a text
            with itself, or one pair repeated): the correlation is then undefined or noise.
    """
    pairs = read_scored_pairs(path)
    if len(pairs.scores) < 2:
        raise DataFormatError(f"{path}: only one pair; a Spearman correlation needs at least three.")
    if len(set(pairs.scores)) == 1:
        raise DataFormatError(
            f"{path}: every pair has the gold score {pairs.scores[0]:g}; a Spearman correlation needs two different "
            "scores."
        )
    if len(pairs.scores) < MIN_STS_PAIRS:
        raise DataFormatError(
            f"{path}: only {len(pairs.scores)} pairs; a Spearman correlation of two pairs is +-100 whatever the "
            f"model, so give at least {MIN_STS_PAIRS}."
        )
    kinds = {"itself" if a == b else frozenset((a, b)) for a, b in zip(pairs.sentences1, pairs.sentences2, strict=True)}
    if len(kinds) == 1:
        what = "pairs a text with itself" if kinds == {"itself"} else "holds the same two texts"
        raise DataFormatError(
            f"{path}: every pair {what}, so every model gives every pair the same cosine and the correlation would "
            "measure rounding noise; give pairs of different texts."
        )
    return pairs


def evaluate_sts(encoder: Encoder, pairs: ScoredPairs | str | os.PathLike[str]) -> dict[str, Any]:
    """Embed both sides of scored pairs and correlate cosine similarity with the gold scores.

    Args:
        encoder: A text -> vector function (see :func:`~st_static.evaluation.encoders.model_encoder`).
        pairs: The pairs, or the path of an STS file (``sentence1``, ``sentence2``, ``score``; see
            :func:`read_sts_file`).

    Returns:
        ``{"metric": "spearman_cosine", "score": Spearman x100, "pearson_cosine": Pearson x100, "pairs": n}``.
    """
    if not isinstance(pairs, ScoredPairs):
        pairs = read_sts_file(pairs)
    embeddings = encoder(pairs.sentences1 + pairs.sentences2)
    embeddings1, embeddings2 = embeddings[: len(pairs.sentences1)], embeddings[len(pairs.sentences1) :]
    gold = np.asarray(pairs.scores, dtype=np.float64)
    score = spearman_cosine(embeddings1, embeddings2, gold)
    similarities = cosine_similarities(embeddings1, embeddings2)
    pearson = math.nan if math.isnan(score) else 100.0 * float(pearsonr(similarities, gold).statistic)
    return {"metric": "spearman_cosine", "score": score, "pearson_cosine": pearson, "pairs": len(gold)}
