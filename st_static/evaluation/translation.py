"""Translation retrieval (Tatoeba): nearest neighbour by cosine among the other side, in both directions."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from st_static.data_files import DataFormatError, open_data_file, read_numbered_translation_pairs
from st_static.evaluation.diagnostics import bilingual_diagnostics
from st_static.evaluation.encoders import Encoder, unit_rows

HEADER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")
"""A column name of a bitext file's header (``eng``, ``other``, ``en``, ``de``): one word, no text."""


def read_bitext_file(path: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """Read a bitext retrieval file (Tatoeba, Tux Paint: ``eng``, ``other``) that retrieval can score.

    Raises:
        DataFormatError: If the first line is no header of column names (a pair there would be lost), a row has an
            empty side (naming its line; an empty text matches nothing, so it would count as a miss), or the file
            has fewer than two pairs (one pair always finds itself).
    """
    rows = read_numbered_translation_pairs(path)
    with open_data_file(Path(path)) as handle:  # from memory in a run that reads each file once
        header = handle.readline().decode("utf-8-sig", errors="replace").rstrip("\r\n").split("\t")[:2]
    if not all(HEADER_NAME.fullmatch(name) for name in header):
        raise DataFormatError(
            f"{path}:1: {chr(9).join(header)!r} is no header (column names such as eng<TAB>other): a bitext file "
            "starts with one, and a pair on the first line would be read as the header and lost. Add the header."
        )
    for line_number, pair in rows:
        for side, text in enumerate(pair, start=1):
            if not text.strip():
                raise DataFormatError(
                    f"{path}:{line_number}: column {side} is empty; every row of a bitext file pairs two texts."
                )
    if len(rows) < 2:
        raise DataFormatError(f"{path}: only one pair; retrieval needs at least two (one pair always finds itself).")
    return [pair for _, pair in rows]


def retrieval_accuracy(
    queries: np.ndarray,
    candidates: np.ndarray,
    query_texts: Sequence[str] | None = None,
    candidate_texts: Sequence[str] | None = None,
) -> float:
    """Percentage of queries whose nearest candidate by cosine is the one on the same row.

    Ties go to the lowest row (``argmax``), so a file that repeats a pair (Tux Paint repeats short texts) would
    cap the accuracy: given the texts, a query also counts as found when its nearest candidate is the same text as
    its own row's, or the candidate of a row whose query is the same text as its own (a translation of it). A zero
    vector (a text without a known word) matches nothing: a zero query finds no candidate and a zero candidate is
    nobody's nearest, so the row order gives them no credit.

    Raises:
        ValueError: If the two sides do not have the same number of rows.
    """
    if len(queries) != len(candidates):
        raise ValueError(f"Got {len(queries)} queries for {len(candidates)} candidates; rows must align.")
    if len(queries) == 0:
        raise ValueError("No translation pairs.")
    query_units = unit_rows(np.asarray(queries, dtype=np.float32))
    candidate_units = unit_rows(np.asarray(candidates, dtype=np.float32))
    similarities = query_units @ candidate_units.T
    similarities[:, ~np.any(candidate_units, axis=1)] = -np.inf
    nearest = similarities.argmax(axis=1)
    found = nearest == np.arange(len(queries))
    for texts in (query_texts, candidate_texts):
        if texts is not None:
            found |= np.array([texts[row] == texts[index] for index, row in enumerate(nearest)], dtype=bool)
    found &= np.any(query_units, axis=1)
    return 100.0 * float(np.mean(found))


def evaluate_translation_retrieval(
    encoder: Encoder,
    pairs: list[tuple[str, str]] | str | os.PathLike[str],
    diagnostics: bool = True,
) -> dict[str, Any]:
    """Translation retrieval accuracy of aligned pairs (row i of one side translates row i of the other).

    Args:
        encoder: A text -> vector function.
        pairs: ``(source, target)`` pairs, or a file whose first two columns are them (Tatoeba: ``eng``, ``other``;
            read by :func:`read_bitext_file`).
        diagnostics: Add alignment, uniformity and the language-identity silhouette of the two sides.

    Returns:
        ``{"metric": "accuracy", "score": mean of both directions, "accuracy_1_to_2": ..., "accuracy_2_to_1": ...,
        "pairs": n}``, plus the diagnostics of :func:`~st_static.evaluation.diagnostics.bilingual_diagnostics`.
        Side 1 is the first column (English in the Tatoeba files).
    """
    if not isinstance(pairs, list):
        pairs = read_bitext_file(Path(pairs))
    first = [pair[0] for pair in pairs]
    second = [pair[1] for pair in pairs]
    embeddings = encoder(first + second)
    embeddings1, embeddings2 = embeddings[: len(first)], embeddings[len(first) :]
    forward = retrieval_accuracy(embeddings1, embeddings2, first, second)
    backward = retrieval_accuracy(embeddings2, embeddings1, second, first)
    result: dict[str, Any] = {
        "metric": "accuracy",
        "score": (forward + backward) / 2,
        "accuracy_1_to_2": forward,
        "accuracy_2_to_1": backward,
        "pairs": len(pairs),
    }
    if diagnostics:
        result.update(bilingual_diagnostics(embeddings1, embeddings2))
    return result
