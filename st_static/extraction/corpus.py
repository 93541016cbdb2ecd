"""Streaming sentences from a text file, an iterable of str or a `datasets` dataset."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

CorpusSource = str | os.PathLike[str] | Iterable[str] | Any


class CorpusError(ValueError):
    """The corpus cannot be read or is too small for the job."""


def iter_sentences(source: CorpusSource, text_column: str = "text") -> Iterator[str]:
    """Yield the sentences of ``source`` with whitespace normalised; empty ones are skipped.

    Args:
        source: A path to a UTF-8 text file with one sentence per line, a ``datasets.Dataset`` (or any
            iterable of dicts) with a ``text_column``, or an iterable of str.
        text_column: The column to read from a dataset.

    Raises:
        CorpusError: If the path does not exist or an item is not a str.
    """
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.is_file():
            raise CorpusError(f"Corpus file {path} does not exist.")
        with path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                sentence = " ".join(line.split())
                if sentence:
                    yield sentence
        return
    column_names = getattr(source, "column_names", None)
    if column_names is not None and text_column not in column_names:
        raise CorpusError(f"The dataset has no {text_column!r} column (columns: {column_names}).")
    for index, item in enumerate(source):
        text = item[text_column] if isinstance(item, dict) else item
        if not isinstance(text, str):
            raise CorpusError(f"Corpus item {index} is {type(text).__name__}, not str.")
        sentence = " ".join(text.split())
        if sentence:
            yield sentence


def check_corpus_source(source: CorpusSource) -> None:
    """Fail early (before loading a teacher) when a corpus path is missing or empty."""
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.exists():
            raise CorpusError(f"Corpus file {path} does not exist.")
        if not path.is_file():
            raise CorpusError(f"Corpus path {path} is not a file (expected one sentence per line).")
        if path.stat().st_size == 0:
            raise CorpusError(f"Corpus file {path} is empty.")
