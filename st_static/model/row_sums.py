"""Per-text sums of table rows: numpy for one text, single-threaded ``embedding_bag`` for a batch.

Both avoid what dominates small static-model calls: one text's rows are summed in numpy (a few microseconds,
half of torch's per-call dispatch), and a batch in one ``embedding_bag`` on one thread. The sum reads memory,
not compute: on two cores a second thread gains little when idle and, when other processes hold the cores,
stalls each call in OpenMP barriers (measured in ``benchmarks/results/2026-11-23-serving-profile.md``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from st_static.tensors import to_numpy

SMALL_TEXT_ROWS = 4096  # one text up to this many rows is summed in numpy
NORM_EPSILON = 1e-12  # torch.nn.functional.normalize's default


def text_vector(
    table: np.ndarray, rows: np.ndarray, dropped_row: int, normalize: bool, words_end: int | None = None
) -> np.ndarray:
    """One text's vector from its rows, in numpy: the L2-normalised sum, or the mean (zeros without a row).

    Args:
        table: The ``(rows, dim)`` float32 table.
        rows: The text's row ids.
        dropped_row: The row that contributes nothing (``EmbeddingBag``'s ``padding_idx``): a zero row of ``table``.
        normalize: L2-normalise; otherwise divide by the number of rows that are not ``dropped_row``.
        words_end: With ``normalize=False``: divide by the rows below it only (the words and pieces, not the tiny
            fallback rows after them) when the text has any; ``None``: by every row that is not ``dropped_row``.

    Returns:
        A ``(dim,)`` float32 vector.
    """
    if normalize:  # the dropped row is a zero row: summing it changes nothing, and skipping the mask saves time
        vector = table.take(rows, axis=0).sum(axis=0) if len(rows) else np.zeros(table.shape[1], table.dtype)
        vector /= max(math.sqrt(float(np.dot(vector, vector))), NORM_EPSILON)
        return vector
    kept = rows[rows != dropped_row]
    vector = table[kept].sum(axis=0)
    words = 0 if words_end is None else int((kept < words_end).sum())
    if words or len(kept):
        vector /= words or len(kept)
    return vector


def sum_rows(weight: torch.Tensor, rows: np.ndarray, offsets: np.ndarray, dropped_row: int) -> np.ndarray:
    """The sum of each text's rows of ``weight``, leaving out ``dropped_row``, as float32 numpy.

    Args:
        weight: The ``(rows, dim)`` table (not tracked by autograd: pass ``weight.detach()``).
        rows: Flat int64 row ids of all texts.
        offsets: Where each text starts in ``rows``.
        dropped_row: The row that contributes nothing (``EmbeddingBag``'s ``padding_idx``).

    Returns:
        ``(len(offsets), dim)`` float32 sums; zeros for a text without rows.
    """
    with torch.inference_mode(), one_thread():
        sums = torch.nn.functional.embedding_bag(
            torch.from_numpy(rows).to(weight.device),
            weight,
            torch.from_numpy(offsets).to(weight.device),
            mode="sum",
            padding_idx=dropped_row,
        )
    return to_numpy(sums)


def mean_counts(rows: np.ndarray, offsets: np.ndarray, dropped_row: int, words_end: int) -> np.ndarray:
    """What each text's plain mean divides by: its word and piece rows (those below ``words_end``), or, for a text
    with none, every row that is not ``dropped_row``; as float32."""
    words = known_counts(rows, offsets, dropped_row, below=words_end)
    return np.where(words > 0, words, known_counts(rows, offsets, dropped_row))


def known_counts(rows: np.ndarray, offsets: np.ndarray, dropped_row: int, below: int | None = None) -> np.ndarray:
    """How many rows of each text are not ``dropped_row`` (and, with ``below``, are below it), as float32."""
    counted = rows != dropped_row if below is None else (rows != dropped_row) & (rows < below)
    known = np.concatenate([[0], np.cumsum(counted)])
    ends = np.append(offsets[1:], len(rows))
    return (known[ends] - known[offsets]).astype(np.float32)


def normalize_rows(vectors: np.ndarray) -> None:
    """L2-normalise the rows of a float32 matrix in place with ``torch.nn.functional.normalize`` (one thread).

    The same operation as the ``Normalize`` module of the saved pipeline, so that a batch's vectors equal
    ``SentenceTransformer.encode``'s bit for bit when both normalise the same means.
    """
    with torch.inference_mode(), one_thread():
        tensor = torch.from_numpy(vectors)
        tensor.copy_(torch.nn.functional.normalize(tensor, p=2, dim=1))


@contextmanager
def one_thread() -> Iterator[None]:
    """Run torch's intra-op work of the block on the calling thread only, then restore the setting."""
    threads = torch.get_num_threads()
    if threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
