"""Texts -> table rows of a word model, as fast as the texts allow and in bounded memory.

:class:`WordRows` gives the rows the model's word tokenizer gives, taking the cheapest exact route for each
text: ASCII texts go through :class:`~st_static.model.ascii_words.AsciiWordRows` (dict look-ups), all others through
the Rust tokenizer (``encode_batch_fast``). On top of the tokenizer it

* replaces lone surrogates (``"\\ud800"``, which the Rust tokenizer refuses with a ``TypeError`` for the whole
  batch) by U+FFFD, a symbol the word rules drop;
* cuts texts longer than ``max_piece_chars`` at word boundaries (:func:`~st_static.model.tokenization.split_long_text`)
  and tokenises at most about ``max_call_chars`` characters per call, so that a 50 MB string costs the memory of
  its rows, not gigabytes of tokenizer bookkeeping. The rows are the same as for the uncut text;
* with fallback rows (:func:`~st_static.model.tokenization.add_fallback_layout`), gives every text the empty-text
  row once: the empty text too (which the tokenizer gives no token), and a cut text once, not once per piece.

:func:`check_texts` checks what a caller hands in (a str or a sequence of str) before any of this.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import chain

import numpy as np
from tokenizers import Tokenizer

from st_static.model.ascii_words import AsciiWordRows
from st_static.model.tokenization import SENTINEL, fallback_layout, has_fallback_pre_tokenizer, split_long_text

DEFAULT_MAX_PIECE_CHARS = 100_000
DEFAULT_MAX_CALL_CHARS = 1_000_000
REPLACEMENT_CHARACTER = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_surrogates(text: str) -> str:
    """``text`` with every lone surrogate code point replaced by U+FFFD (which the word rules drop)."""
    return _SURROGATE.sub(REPLACEMENT_CHARACTER, text)


def check_texts(texts: object) -> list[str]:
    """Return ``texts`` as a list of str, or raise a ``TypeError`` naming the first offending item.

    Args:
        texts: A str or a sequence of str.

    Returns:
        The texts as a list (a single str becomes a one-item list).

    Raises:
        TypeError: If ``texts`` is not a str or a sequence whose items are all str.
    """
    if isinstance(texts, str):
        return [texts]
    if texts is None or isinstance(texts, bytes | dict) or not isinstance(texts, Sequence | np.ndarray):
        raise TypeError(f"Expected a str or a sequence of str, got {type(texts).__name__}.")
    text_list = list(texts)
    for index, text in enumerate(text_list):
        if not isinstance(text, str):
            raise TypeError(
                f"Expected every text to be a str, but item {index} is {type(text).__name__}: {text!r:.80}."
            )
    return text_list


class WordRows:
    """Turns texts into the table rows their words read, exactly as the word tokenizer would.

    Args:
        tokenizer: The model's word tokenizer.
        token_rows: The table row of every token id (``dropped_row`` for dropped tokens).
        dropped_row: The zero row that dropped tokens read.
        max_piece_chars: Texts longer than this are cut at word boundaries before tokenising.
        max_call_chars: About the most characters tokenised in one call (bounds the tokenizer's memory).
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        token_rows: np.ndarray,
        dropped_row: int,
        max_piece_chars: int = DEFAULT_MAX_PIECE_CHARS,
        max_call_chars: int = DEFAULT_MAX_CALL_CHARS,
    ) -> None:
        if max_piece_chars < 2 or max_call_chars < 1:
            raise ValueError(
                f"max_piece_chars must be at least 2 and max_call_chars positive, got {max_piece_chars} and "
                f"{max_call_chars}."
            )
        self.tokenizer = tokenizer
        self.token_rows = np.ascontiguousarray(token_rows, dtype=np.int64)
        self.dropped_row = dropped_row
        self.max_piece_chars = max_piece_chars
        self.max_call_chars = max_call_chars
        self.ascii = AsciiWordRows.from_tokenizer(tokenizer, self.token_rows, dropped_row)
        layout = fallback_layout(tokenizer) if has_fallback_pre_tokenizer(tokenizer) else None
        self.sentinel_token = None if layout is None else tokenizer.token_to_id(SENTINEL)
        """The sentinel's token id, which every text reads once (fallback rows), or ``None``."""

    def rows(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Table rows of ``texts``.

        Args:
            texts: The texts (str only).

        Returns:
            ``(rows, offsets)``: flat int64 rows of all texts in order, and where each text starts in ``rows``.
            Dropped tokens read ``dropped_row``; a word may give fewer dropped rows than the tokenizer has
            tokens (the ASCII route gives one row per word), which changes neither sums nor means without them.
        """
        texts = texts if isinstance(texts, list) else list(texts)
        if len(texts) == 1 and self.ascii is not None and len(texts[0]) <= self.max_piece_chars and texts[0].isascii():
            return np.array(self.ascii.text_rows(texts[0]), dtype=np.int64), np.zeros(1, dtype=np.int64)
        lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        pieces, first_pieces = texts, None
        if len(texts) and lengths.max() > self.max_piece_chars:
            pieces, first_pieces, lengths = self._cut(texts, lengths)
        parts = [self._piece_rows(pieces[start:end]) for start, end in self._calls(lengths)]
        rows = np.concatenate([part[0] for part in parts]) if parts else np.zeros(0, dtype=np.int64)
        counts = np.concatenate([part[1] for part in parts]) if parts else np.zeros(0, dtype=np.int64)
        if first_pieces is not None:
            if self.sentinel_token is not None:  # each piece began with the sentinel: keep the first piece's only
                piece_starts = np.cumsum(counts) - counts
                later = np.ones(len(counts), dtype=bool)
                later[first_pieces] = False
                rows[piece_starts[later & (counts > 0)]] = self.dropped_row
            counts = np.add.reduceat(counts, first_pieces)
        offsets = np.zeros(len(counts), dtype=np.int64)
        np.cumsum(counts[:-1], out=offsets[1:])
        return rows, offsets

    def _cut(self, texts: list[str], lengths: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
        """The texts as pieces of at most about ``max_piece_chars``, the first piece of each text, their lengths."""
        pieces: list[str] = []
        first_pieces = np.zeros(len(texts), dtype=np.int64)
        for index, text in enumerate(texts):
            first_pieces[index] = len(pieces)
            if lengths[index] > self.max_piece_chars:
                pieces.extend(split_long_text(text, self.max_piece_chars))
            else:
                pieces.append(text)
        return pieces, first_pieces, np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))

    def _calls(self, lengths: np.ndarray) -> list[tuple[int, int]]:
        """``(start, end)`` ranges of texts to tokenise together: about ``max_call_chars`` characters each."""
        ends = np.cumsum(lengths)
        if not len(lengths) or ends[-1] <= self.max_call_chars:
            return [(0, len(lengths))] if len(lengths) else []
        calls = []
        start = 0
        while start < len(lengths):
            before = ends[start - 1] if start else 0
            end = max(int(np.searchsorted(ends, before + self.max_call_chars, side="right")), start + 1)
            calls.append((start, end))
            start = end
        return calls

    def _piece_rows(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, counts)`` of texts tokenised together: ASCII ones by look-up, the others by the tokenizer."""
        if self.ascii is None:
            return self._tokenizer_rows(texts)
        is_ascii = [text.isascii() for text in texts]
        if all(is_ascii):
            return self.ascii.rows(texts)
        if not any(is_ascii):
            return self._tokenizer_rows(texts)
        ascii_indices = [index for index, flag in enumerate(is_ascii) if flag]
        other_indices = [index for index, flag in enumerate(is_ascii) if not flag]
        return interleave(
            len(texts),
            [
                (np.array(ascii_indices), *self.ascii.rows([texts[index] for index in ascii_indices])),
                (np.array(other_indices), *self._tokenizer_rows([texts[index] for index in other_indices])),
            ],
        )

    def _tokenizer_rows(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, counts)`` from the Rust tokenizer, with lone surrogates replaced."""
        try:
            encodings = self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)
        except TypeError:  # a str the tokenizer cannot take: lone surrogates (not UTF-8 encodable)
            texts = [replace_surrogates(text) for text in texts]
            encodings = self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)
        token_ids = [encoding.ids for encoding in encodings]
        if self.sentinel_token is not None:  # the empty text, which the tokenizer gives no token
            token_ids = [ids or [self.sentinel_token] for ids in token_ids]
        counts = np.fromiter(map(len, token_ids), dtype=np.int64, count=len(token_ids))
        flat = np.fromiter(chain.from_iterable(token_ids), dtype=np.int64, count=int(counts.sum()))
        return self.token_rows[flat], counts


def interleave(total: int, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Merge the rows of groups of texts back into text order.

    Args:
        total: The number of texts.
        parts: ``(indices, rows, counts)`` per group: the texts' positions, their flat rows and row counts.

    Returns:
        ``(rows, counts)`` of all texts in position order.
    """
    counts = np.zeros(total, dtype=np.int64)
    source_starts = np.zeros(total, dtype=np.int64)
    base = 0
    for indices, part_rows, part_counts in parts:
        counts[indices] = part_counts
        source_starts[indices] = base + np.cumsum(part_counts) - part_counts
        base += len(part_rows)
    target_starts = np.cumsum(counts) - counts
    source = np.concatenate([part_rows for _, part_rows, _ in parts])
    gather = np.repeat(source_starts - target_starts, counts) + np.arange(int(counts.sum()))
    return source[gather], counts
