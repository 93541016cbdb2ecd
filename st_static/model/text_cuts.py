"""Cutting a long text at word boundaries, so that the word tokenizer reads it in pieces with the same tokens (texts
over 100,000 characters: :class:`~st_static.model.word_rows.WordRows`)."""

from __future__ import annotations

import re
import unicodedata

# Characters after which a text can be cut without changing its words: separators (never part of a word) that
# no Unicode composition starts with. Whitespace qualifies whatever follows it; the other separators only
# before a character that cannot combine backwards (a starter that is not a mark).
_CUT_AFTER_CATEGORIES = frozenset({"Zs", "Zl", "Zp", "Cc", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po"})
_WHITESPACE = re.compile(r"\s")


def _is_cut_point(text: str, index: int) -> bool:
    """Whether cutting ``text`` before ``index`` leaves the normalised words of both sides unchanged."""
    before, after = text[index - 1], text[index]
    if before.isspace():
        return True
    if unicodedata.category(before) not in _CUT_AFTER_CATEGORIES:
        return False
    return unicodedata.combining(after) == 0 and unicodedata.category(after)[0] not in "MC"


def split_long_text(text: str, max_chars: int) -> list[str]:
    """Cut ``text`` into pieces of at most about ``max_chars`` characters at word boundaries.

    The word tokenizer gives the pieces, one after the other, exactly the tokens it gives the whole text: every
    cut follows whitespace, or a punctuation or control character before a character that cannot compose with
    it under NFC. A piece is longer than ``max_chars`` only where a text has no such boundary for that long
    (then the piece runs to the next whitespace).

    Args:
        text: Any text.
        max_chars: The longest piece wanted; at least 2.

    Returns:
        The pieces, whose concatenation is ``text``; ``[text]`` if it is short enough.

    Raises:
        ValueError: If ``max_chars`` is below 2.
    """
    if max_chars < 2:
        raise ValueError(f"max_chars must be at least 2, got {max_chars}.")
    pieces: list[str] = []
    start = 0
    while len(text) - start > max_chars:
        cut = _find_cut(text, start + max_chars // 2, start + max_chars)
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


def _find_cut(text: str, low: int, high: int) -> int:
    """A cut point in ``(low, high]`` (whitespace first, then other separators), else the next one after ``high``."""
    match = _WHITESPACE.search(text, low, high)
    if match is not None:
        return match.end()
    for index in range(high, low, -1):
        if _is_cut_point(text, index):
            return index
    match = _WHITESPACE.search(text, high)
    return len(text) if match is None else match.end()
