"""Streaming sentences from a text file, a list of str or a `datasets` dataset, and checking a corpus first."""

from __future__ import annotations

import codecs
import hashlib
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from st_static.errors import StStaticError
from st_static.files import content_digest

logger = logging.getLogger(__name__)

CorpusSource = str | os.PathLike[str] | Iterable[str] | Any
"""A UTF-8 text file (one sentence per line), a list of str, or a ``datasets.Dataset`` with a text column."""

MIN_CORPUS_SENTENCES = 10
"""Fewer sentences than this cannot make a table (PCA, validation and batches need some)."""
SMALL_CORPUS_SENTENCES = 10_000
"""Below this many sentences a build warns that the table will be weak (the method reads ~100k-1M)."""
MAX_BAD_LINE_SHARE = 0.1
"""A text file with more than this share of lines that are not UTF-8 is refused rather than skimmed."""


class CorpusError(StStaticError, ValueError):
    """The corpus cannot be read or is too small for the job."""


@dataclass(frozen=True)
class CorpusReport:
    """What a first pass over the corpus found."""

    sentences: int
    """Non-empty sentences."""
    skipped_lines: int
    """Lines that are not valid UTF-8 (left out)."""


def _utf16_bom(path: Path) -> bool:
    with path.open("rb") as handle:
        start = handle.read(4)
    return start.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or (len(start) == 4 and start[1::2] == b"\0\0")


def _file_lines(path: Path, skipped: list[int]) -> Iterator[str]:
    """The decoded lines of a UTF-8 file; lines with invalid bytes are counted in ``skipped[0]`` and left out."""
    with path.open("rb") as handle:
        for raw in handle:
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError:
                skipped[0] += 1


def iter_sentences(source: CorpusSource, text_column: str = "text") -> Iterator[str]:
    """Yield the sentences of ``source`` with whitespace normalised; empty ones are skipped.

    Args:
        source: A path to a UTF-8 text file with one sentence per line (lines that are not valid UTF-8 are left
            out; :func:`check_corpus` reports them), a ``datasets.Dataset`` (or any iterable of dicts) with a
            ``text_column``, or an iterable of str.
        text_column: The column to read from a dataset.

    Raises:
        CorpusError: If the path does not exist or an item is not a str.
    """
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.is_file():
            raise CorpusError(f"Corpus file {path} does not exist.")
        for line in _file_lines(path, [0]):
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
    """Fail early (before loading a teacher) when a corpus path is missing, empty or UTF-16, or a corpus given in
    memory cannot be read twice (a generator)."""
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.exists():
            raise CorpusError(f"Corpus file {path} does not exist.")
        if not path.is_file():
            raise CorpusError(f"Corpus path {path} is not a file (expected one sentence per line).")
        if path.stat().st_size == 0:
            raise CorpusError(f"Corpus file {path} is empty.")
        if not os.access(path, os.R_OK):
            raise CorpusError(f"Corpus file {path} is not readable (permission denied).")
        if _utf16_bom(path):
            raise CorpusError(
                f"Corpus file {path} looks like UTF-16; convert it to UTF-8 first (e.g. iconv -f UTF-16 -t UTF-8)."
            )
    elif isinstance(source, Iterator):
        raise CorpusError("The corpus is read more than once: give a list, a dataset or a file, not a generator.")


def check_corpus(source: CorpusSource, name: str = "corpus") -> CorpusReport:
    """Read the corpus once before any heavy work: count its sentences and lines that are not UTF-8.

    Raises:
        CorpusError: If it is missing, empty, UTF-16, mostly not UTF-8, or has fewer than
            :data:`MIN_CORPUS_SENTENCES` sentences.
    """
    check_corpus_source(source)
    skipped = [0]
    lines = 0
    sentences = 0
    if isinstance(source, str | os.PathLike):
        for line in _file_lines(Path(source), skipped):
            lines += 1
            sentences += bool(line.strip())
    else:
        sentences = sum(1 for _ in iter_sentences(source))
    total = lines + skipped[0]
    if skipped[0]:
        if skipped[0] > MAX_BAD_LINE_SHARE * total:
            raise CorpusError(
                f"{name}: {skipped[0]:,} of {total:,} lines are not valid UTF-8; convert the file to UTF-8 first "
                "(e.g. iconv -f LATIN1 -t UTF-8)."
            )
        logger.warning("%s: %d of %d lines are not valid UTF-8 and are left out.", name, skipped[0], total)
    if sentences < MIN_CORPUS_SENTENCES:
        raise CorpusError(
            f"{name} has only {sentences} sentence(s); at least {MIN_CORPUS_SENTENCES} are needed "
            f"(and {SMALL_CORPUS_SENTENCES:,} or more for a useful table)."
        )
    if sentences < SMALL_CORPUS_SENTENCES:
        logger.warning(
            "%s has %d sentences: the table will be weak (few words, few sentences per word). Expect STS scores "
            "well below a build on 100k+ sentences.",
            name,
            sentences,
        )
    return CorpusReport(sentences=sentences, skipped_lines=skipped[0])


def corpus_digest(source: CorpusSource) -> str:
    """A key that changes when the corpus content does: the file's bytes, or the sentences given in memory."""
    if isinstance(source, str | os.PathLike):
        return content_digest(source)
    digest = hashlib.sha256()
    count = 0
    for sentence in iter_sentences(source):
        digest.update(sentence.encode("utf-8"))
        digest.update(b"\n")
        count += 1
    return f"{count}:{digest.hexdigest()}"


def corpus_name(source: CorpusSource) -> str:
    """How a model records its corpus: a file's name (never its path), else the kind of object given."""
    if isinstance(source, str | os.PathLike):
        return Path(source).name
    if isinstance(source, Sequence):
        return f"{len(source):,} sentences given in memory"
    return type(source).__name__
