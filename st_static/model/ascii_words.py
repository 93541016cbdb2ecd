"""Table rows of ASCII texts by dictionary look-ups: the word tokenizer's rules without the Rust pipeline.

For ASCII text the word tokenizer of :mod:`st_static.model.tokenization` reduces to byte operations: NFC and NFKC
change nothing, lowercasing is ASCII lowercasing, a word is a run of ``[A-Za-z0-9]``, and WordPiece gives a word the
row of its longest known prefix (its continuation pieces read no row) unless the word is too long or its
remainder cannot be covered by continuation pieces. :class:`AsciiWordRows` does that with three bytes
operations per batch and one dict look-up per word, several times faster than the Rust tokenizer, which keeps
per-character alignments and an ``Encoding`` object per text. :meth:`AsciiWordRows.from_tokenizer` builds it
only for tokenizers whose configuration it reproduces; ``tests/test_serving.py`` checks it against the
tokenizer on random ASCII text and corpus lines.

With fallback rows (:func:`~st_static.model.tokenization.add_fallback_layout`) a text also reads the row of each
ASCII punctuation or symbol character that has one, and the empty-text row once (also the empty text, which the
tokenizer gives no token: a saved folder gives it that row through its ``Dense`` module,
:mod:`st_static.model.empty_text`). The rows of a text come in another order than the tokenizer's (the empty-text
row, the words, then the symbols), which changes no sum beyond float rounding.
"""

from __future__ import annotations

import json
import string
import unicodedata
from collections.abc import Sequence
from itertools import repeat

import numpy as np
from tokenizers import Tokenizer

from st_static.model.tokenization import (
    CONTINUATION_PREFIX,
    SENTINEL,
    fallback_layout,
    has_fallback_pre_tokenizer,
    is_word_tokenizer,
)

ASCII_WORD_CHARS = string.ascii_letters + string.digits
_TEXT_END_BYTE = b"\x80"  # ends each text of a batch: never in ASCII text, never in a word
_MISSING = -1
_TEXT_END = -2
_CACHE_LIMIT = 1 << 16
_NORMALIZERS_WITHOUT_ASCII_EFFECT = frozenset({"NFC", "NFD", "NFKC", "NFKD"})
_SYMBOL_CATEGORIES = frozenset("PS")


def _byte_table(lowercase: bool) -> bytes:
    """A ``bytes.translate`` table: letters and digits kept (lowercased), the text end kept, all else a space."""
    table = bytearray(b" " * 256)
    for char in ASCII_WORD_CHARS:
        table[ord(char)] = ord(char.lower() if lowercase else char)
    table[ord(_TEXT_END_BYTE)] = ord(_TEXT_END_BYTE)
    return bytes(table)


class AsciiWordRows:
    """Maps ASCII texts to table rows exactly as a word tokenizer does, with dict look-ups.

    Texts are read as bytes: one ``bytes.translate`` turns every character that is not an ASCII letter or
    digit into a space (and lowercases), ``bytes.split`` cuts the words, and one dict look-up per word gives
    its row.

    Args:
        word_rows: Table row of every vocabulary key made of ASCII letters and digits (the keys WordPiece can
            match at the start of an ASCII word), including keys whose row is ``dropped_row``.
        continuations: The ASCII continuation pieces (without the ``##`` prefix) and their rows (``dropped_row``
            for a piece that reads none; subword pieces, :func:`~st_static.model.tokenization.add_piece_layout`,
            read their own).
        lowercase: Lowercase the text first.
        max_word_chars: Longer words are dropped (WordPiece's ``max_input_chars_per_word``).
        dropped_row: The row of dropped tokens (the zero row).
        symbol_rows: The row of each ASCII punctuation or symbol character that reads one (fallback rows).
        sentinel_row: The empty-text row every text reads once (fallback rows), or ``None``.
    """

    def __init__(
        self,
        word_rows: dict[str, int],
        continuations: dict[str, int],
        lowercase: bool,
        max_word_chars: int,
        dropped_row: int,
        symbol_rows: dict[str, int] | None = None,
        sentinel_row: int | None = None,
    ) -> None:
        self.word_rows = {word.encode("ascii"): row for word, row in word_rows.items() if len(word) <= max_word_chars}
        self.continuations = {piece.encode("ascii"): row for piece, row in continuations.items()}
        self.single_continuations = frozenset(piece[0] for piece in self.continuations if len(piece) == 1)
        self.pieces_read_rows = any(row != dropped_row for row in self.continuations.values())
        self.longest_continuation = max(map(len, self.continuations), default=0)
        self.longest_word = max(map(len, self.word_rows), default=0)
        self.lowercase = lowercase
        self.max_word_chars = max_word_chars
        self.dropped_row = dropped_row
        self._table = _byte_table(lowercase)
        self._lookup = {**self.word_rows, _TEXT_END_BYTE: _TEXT_END}
        self._unknown_words: dict[bytes, tuple[int, ...]] = {}
        self.symbol_rows = dict(symbol_rows or {})
        self.sentinel_row = sentinel_row
        self._byte_rows = np.full(256, _MISSING, dtype=np.int64)
        for symbol, row in self.symbol_rows.items():
            self._byte_rows[ord(symbol)] = row
        kept = {ord(symbol) for symbol in self.symbol_rows} | {_TEXT_END_BYTE[0]}
        self._non_symbols = bytes(code for code in range(256) if code not in kept)  # deleted to count symbols

    @classmethod
    def from_tokenizer(cls, tokenizer: Tokenizer, token_rows: np.ndarray, dropped_row: int) -> AsciiWordRows | None:
        """The look-up for a word tokenizer, or ``None`` if its configuration is not one this class reproduces.

        Args:
            tokenizer: A word tokenizer (:func:`~st_static.model.tokenization.build_word_tokenizer`).
            token_rows: The table row of every token id (``dropped_row`` for dropped tokens).
            dropped_row: The row of dropped tokens.
        """
        if not is_word_tokenizer(tokenizer) or tokenizer.get_added_tokens_decoder():
            return None
        if tokenizer.truncation is not None or tokenizer.padding is not None or tokenizer.post_processor is not None:
            return None
        symbols = has_fallback_pre_tokenizer(tokenizer)
        layout = fallback_layout(tokenizer)
        if layout is not None and not symbols:
            return None  # a sentinel the pre-tokeniser removes: not a layout this class reproduces
        model = tokenizer.model
        if model.continuing_subword_prefix != CONTINUATION_PREFIX:
            return None
        lowercase = _lowercases_ascii(tokenizer)
        if lowercase is None:
            return None
        word_rows: dict[str, int] = {}
        continuations: dict[str, int] = {}
        symbol_rows: dict[str, int] = {}
        vocab = tokenizer.get_vocab(with_added_tokens=False)
        for token, token_id in vocab.items():
            if token.startswith(CONTINUATION_PREFIX):
                piece = token[len(CONTINUATION_PREFIX) :]
                if _is_ascii_word(piece):
                    continuations[piece] = int(token_rows[token_id])
            elif _is_ascii_word(token):
                word_rows[token] = int(token_rows[token_id])
            elif symbols and _is_ascii_symbol(token) and token_rows[token_id] != dropped_row:
                symbol_rows[token] = int(token_rows[token_id])
        sentinel_row = None if layout is None else int(token_rows[vocab[SENTINEL]])
        return cls(
            word_rows,
            continuations,
            lowercase,
            model.max_input_chars_per_word,
            dropped_row,
            symbol_rows=symbol_rows,
            sentinel_row=sentinel_row,
        )

    def rows(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Table rows of the words of ASCII texts.

        Args:
            texts: ASCII texts (``str.isascii()``).

        Returns:
            ``(rows, counts)``: one row per word of all texts, in order (``dropped_row`` for a dropped word),
            and the number of rows of each text. With fallback rows a text's rows are the empty-text row, its
            words' rows, then its symbols' rows.
        """
        joined = ("\x80".join(texts) + "\x80").encode("latin-1")
        tokens = joined.translate(self._table).replace(_TEXT_END_BYTE, b" \x80 ").split()
        ids = np.fromiter(map(self._lookup.get, tokens, repeat(_MISSING)), dtype=np.int64, count=len(tokens))
        missing = np.flatnonzero(ids == _MISSING).tolist()
        unknown = [self.unknown_word_rows(tokens[index]) for index in missing]
        for index, rows in zip(missing, unknown, strict=True):
            ids[index] = rows[0]
        if any(len(rows) > 1 for rows in unknown):  # words that read pieces after their prefix: insert those rows
            positions = [index + 1 for index, rows in zip(missing, unknown, strict=True) for _ in rows[1:]]
            ids = np.insert(ids, positions, [row for rows in unknown for row in rows[1:]])
        is_end = ids == _TEXT_END
        counts = np.diff(np.flatnonzero(is_end), prepend=-1) - 1
        if self.sentinel_row is None and not self.symbol_rows:
            return ids[~is_end], counts
        parts = [(ids[~is_end], counts)]
        if self.sentinel_row is not None:
            parts.insert(0, (np.full(len(texts), self.sentinel_row, dtype=np.int64), np.ones(len(texts), np.int64)))
        if self.symbol_rows:
            codes = np.frombuffer(joined.translate(None, self._non_symbols), dtype=np.uint8)
            is_end = codes == _TEXT_END_BYTE[0]
            parts.append((self._byte_rows[codes[~is_end]], np.diff(np.flatnonzero(is_end), prepend=-1) - 1))
        return concatenate_per_text(parts)

    def text_rows(self, text: str) -> list[int]:
        """The rows of one ASCII text's words (what :meth:`rows` gives for one text, with less overhead)."""
        data = text.encode("ascii")
        words = data.translate(self._table).split()
        get = self.word_rows.get
        rows = [get(word, _MISSING) for word in words]
        if _MISSING in rows:
            rows = [
                known
                for word, row in zip(words, rows, strict=True)
                for known in (self.unknown_word_rows(word) if row == _MISSING else (row,))
            ]
        if self.symbol_rows:
            rows += [self.symbol_rows[chr(code)] for code in data.translate(None, self._non_symbols)]
        if self.sentinel_row is not None:
            rows.insert(0, self.sentinel_row)
        return rows

    def unknown_word_rows(self, word: bytes) -> tuple[int, ...]:
        """The rows WordPiece gives a word that is not a vocabulary key: its longest known prefix's, then those of the
        continuation pieces that read one (subword pieces), or ``(dropped_row,)``; at least one row."""
        rows = self._unknown_words.get(word)
        if rows is None:
            rows = self._word_piece_rows(word)
            if len(self._unknown_words) >= _CACHE_LIMIT:
                self._unknown_words.clear()
            self._unknown_words[word] = rows
        return rows

    def _word_piece_rows(self, word: bytes) -> tuple[int, ...]:
        if len(word) > self.max_word_chars:
            return (self.dropped_row,)
        for end in range(min(len(word) - 1, self.longest_word), 0, -1):
            row = self.word_rows.get(word[:end])
            if row is not None:
                pieces = self._piece_rows(word[end:])
                if pieces is None:
                    return (self.dropped_row,)
                rows = tuple(known for known in (row, *pieces) if known != self.dropped_row)
                return rows or (self.dropped_row,)
        return (self.dropped_row,)

    def _piece_rows(self, rest: bytes) -> list[int] | None:
        """The rows of the pieces WordPiece's greedy longest match cuts ``rest`` into, or ``None`` if it gets stuck."""
        if not self.pieces_read_rows and set(rest) <= self.single_continuations:
            return []  # every character has its own piece: the greedy match never gets stuck, and reads nothing
        rows = []
        start = 0
        while start < len(rest):
            for end in range(min(len(rest), start + self.longest_continuation), start, -1):
                row = self.continuations.get(rest[start:end])
                if row is not None:
                    rows.append(row)
                    start = end
                    break
            else:
                return None
        return rows


def _is_ascii_word(token: str) -> bool:
    return bool(token) and token.isascii() and token.isalnum()


def _is_ascii_symbol(token: str) -> bool:
    """An ASCII punctuation or symbol character: a token of its own under the fallback pre-tokeniser."""
    return len(token) == 1 and token.isascii() and unicodedata.category(token)[0] in _SYMBOL_CATEGORIES


def concatenate_per_text(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Join several row lists of the same texts text by text: each text's rows of ``parts[0]``, then of ``parts[1]``...

    Args:
        parts: ``(rows, counts)`` per part: flat rows of all texts and the number of rows of each text.

    Returns:
        ``(rows, counts)`` of the joined lists.
    """
    counts = np.sum([part_counts for _, part_counts in parts], axis=0)
    starts = np.cumsum(counts) - counts
    rows = np.empty(int(counts.sum()), dtype=np.int64)
    before = np.zeros_like(counts)
    for part_rows, part_counts in parts:
        part_starts = np.cumsum(part_counts) - part_counts
        rows[np.repeat(starts + before - part_starts, part_counts) + np.arange(len(part_rows))] = part_rows
        before += part_counts
    return rows, counts


def _lowercases_ascii(tokenizer: Tokenizer) -> bool | None:
    """Whether the normaliser lowercases ASCII text; ``None`` if it does anything else to ASCII text."""
    if tokenizer.normalizer is None:
        return False
    normalizer = json.loads(tokenizer.normalizer.__getstate__())
    members = normalizer["normalizers"] if normalizer.get("type") == "Sequence" else [normalizer]
    lowercase = False
    for member in members:
        if member.get("type") == "Lowercase":
            lowercase = True
        elif member == {"type": "Prepend", "prepend": SENTINEL}:
            continue  # the fallback sentinel: its row is added by AsciiWordRows itself
        elif member.get("type") not in _NORMALIZERS_WITHOUT_ASCII_EFFECT:
            return None
    return lowercase
