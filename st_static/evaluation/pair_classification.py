"""Paraphrase pair classification (MSRP): average precision of cosine similarity as the paraphrase score."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from sklearn.metrics import average_precision_score

from st_static.data_files import DataFormatError, ScoredPairs, read_scored_pairs
from st_static.evaluation.encoders import Encoder, cosine_similarities


def cosine_average_precision(embeddings1: np.ndarray, embeddings2: np.ndarray, labels: np.ndarray) -> float:
    """Average precision x100 of ranking the pairs by cosine similarity, with 1 = positive (paraphrase).

    Raises:
        ValueError: If the sizes differ, a label is not 0/1, or there is no positive pair.
    """
    labels = np.asarray(labels)
    if not (len(embeddings1) == len(embeddings2) == len(labels)):
        raise ValueError(f"Got {len(embeddings1)} and {len(embeddings2)} embeddings for {len(labels)} labels.")
    if not np.isin(labels, (0, 1)).all():
        raise ValueError(f"Labels must be 0 or 1, got {sorted(set(labels.tolist()) - {0, 1})[:5]}.")
    if not labels.any():
        raise ValueError("Average precision needs at least one positive (label 1) pair.")
    similarities = cosine_similarities(np.asarray(embeddings1), np.asarray(embeddings2))
    return 100.0 * float(average_precision_score(labels.astype(int), similarities))


def read_paraphrase_file(path: str | os.PathLike[str]) -> ScoredPairs:
    """Read a paraphrase file (``sentence1``, ``sentence2``, ``label`` 0/1) with at least one positive pair.

    Raises:
        DataFormatError: If a label is not 0 or 1, or no pair is a paraphrase (average precision is then undefined).
    """
    pairs = read_scored_pairs(path, score_column="label")
    bad = [label for label in pairs.scores if label not in (0.0, 1.0)]
    if bad:
        raise DataFormatError(f"{path}: labels must be 0 or 1, got {bad[0]:g}.")
    if not any(pairs.scores):
        raise DataFormatError(
            f"{path}: none of the {len(pairs.scores)} pairs has label 1; average precision needs a positive pair."
        )
    return pairs


def evaluate_pair_classification(encoder: Encoder, pairs: ScoredPairs | str | os.PathLike[str]) -> dict[str, Any]:
    """Average precision of cosine similarity on labelled pairs (``sentence1``, ``sentence2``, ``label``).

    Returns:
        ``{"metric": "cosine_ap", "score": AP x100, "pairs": n, "positives": p}``.

    Raises:
        DataFormatError: If the file does not pass :func:`read_paraphrase_file`.
    """
    if not isinstance(pairs, ScoredPairs):
        pairs = read_paraphrase_file(pairs)
    labels = np.asarray(pairs.scores)
    if not np.isin(labels, (0.0, 1.0)).all():
        raise DataFormatError("pairs: labels must be 0 or 1.")
    embeddings = encoder(pairs.sentences1 + pairs.sentences2)
    count = len(pairs.sentences1)
    score = cosine_average_precision(embeddings[:count], embeddings[count:], labels.astype(int))
    return {"metric": "cosine_ap", "score": score, "pairs": count, "positives": int(labels.sum())}
