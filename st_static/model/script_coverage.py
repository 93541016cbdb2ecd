"""Which scripts a table's rows cover: per script, how many word, piece and fallback rows hold its letters, and
which letters read a row on their own.

A text whose words the table lacks reads its pieces after a known prefix, or, with no known word, the fallback rows
of its characters (:mod:`st_static.extraction.fallback`, :mod:`st_static.extraction.pieces`). A script none of whose
letters reads a row on its own (no one-letter word, no fallback row) gives such a text nothing but the empty text's
row: :func:`uncovered_scripts` names the table's languages written in one, and the build warns about them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from st_static.model.languages import SCRIPT_RANGES, language_scripts, script_of

if TYPE_CHECKING:
    from st_static.model.static_word_average import StaticWordAverage


@dataclass(frozen=True)
class ScriptRows:
    """The rows of one script in a table."""

    words: int = 0
    """Vocabulary words with a letter of the script."""
    pieces: int = 0
    """Subword-piece rows with a letter of the script."""
    fallback: int = 0
    """Fallback rows (one character each) of the script."""
    letters: int = 0
    """Letters of the script that read a row on their own: one-letter words and fallback characters."""

    @property
    def rows(self) -> int:
        """Every row with a letter of the script."""
        return self.words + self.pieces + self.fallback


_script_of = functools.lru_cache(maxsize=1 << 16)(script_of)  # a table repeats the same few thousand letters


def _scripts(entry: str) -> set[str]:
    return {script for script in map(_script_of, entry) if script is not None}


def script_coverage(
    words: Iterable[str], pieces: Iterable[str] = (), fallback_characters: Iterable[str] = ()
) -> dict[str, ScriptRows]:
    """Count a table's rows per script (:data:`~st_static.model.languages.SCRIPT_RANGES`), in that order.

    Args:
        words: The vocabulary words (one row each).
        pieces: The subword pieces with a row (without ``##``).
        fallback_characters: The characters with a fallback row.

    Returns:
        Every script with at least one row; an entry holding letters of two scripts counts for both.
    """
    counts = {script: {"words": 0, "pieces": 0, "fallback": 0} for script in SCRIPT_RANGES}
    letters: dict[str, set[str]] = {script: set() for script in SCRIPT_RANGES}
    for kind, entries in (("words", words), ("pieces", pieces), ("fallback", fallback_characters)):
        for entry in entries:
            for script in _scripts(entry):
                counts[script][kind] += 1
                if len(entry) == 1 and kind != "pieces":  # a piece reads its row only after a known prefix
                    letters[script].add(entry)
    return {
        script: ScriptRows(**values, letters=len(letters[script]))
        for script, values in counts.items()
        if any(values.values())
    }


def table_script_coverage(module: StaticWordAverage) -> dict[str, ScriptRows]:
    """:func:`script_coverage` of a static table's words, pieces and fallback rows."""
    return script_coverage(module.vocabulary, module.pieces, module.fallback_characters)


def uncovered_scripts(coverage: dict[str, ScriptRows], languages: Sequence[str]) -> dict[str, list[str]]:
    """The scripts of ``languages`` none of whose letters reads a row on its own (no one-letter word, no fallback
    row), each with the languages written in it: a text in one whose words the table lacks reads nothing."""
    uncovered: dict[str, list[str]] = {}
    for language in languages:
        for script in language_scripts(language):
            if script not in coverage or coverage[script].letters == 0:
                uncovered.setdefault(script, []).append(language)
    return uncovered


def coverage_line(coverage: dict[str, ScriptRows]) -> str:
    """``Rows per script: Latin 120,345 words + 2,100 pieces + 310 fallback (305 letters alone); ...``."""
    parts = [
        f"{script} {rows.words:,} words + {rows.pieces:,} pieces + {rows.fallback:,} fallback "
        f"({rows.letters:,} letters alone)"
        for script, rows in coverage.items()
    ]
    return "Rows per script: " + ("; ".join(parts) if parts else "none") + "."
