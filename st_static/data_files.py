"""Readers for the data formats st-static uses (UTF-8 TSV with a header, one record per line, no quoting)."""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import math
import os
import stat
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from st_static.errors import StStaticError
from st_static.files import write_text_atomically


class DataFormatError(StStaticError, ValueError):
    """A data file does not have the expected columns or values."""


_READ_FILES: ContextVar[dict[tuple[str, int, int], bytes] | None] = ContextVar("st_static_read_files", default=None)
"""The bytes of the files read within :func:`each_file_read_once`, by (real path, size, modification time)."""


@contextlib.contextmanager
def each_file_read_once() -> Iterator[None]:
    """Within this block (or a call of the function it decorates), :func:`open_data_file` reads each regular file
    from disk once and serves it again from memory (keyed on real path, size and modification time: a file changed
    meanwhile is read anew); the bytes are dropped at its end."""
    token = _READ_FILES.set({})
    try:
        yield
    finally:
        _READ_FILES.reset(token)


def forget_read_files() -> None:
    """Drop the bytes :func:`each_file_read_once` keeps so far (once what was read from them is parsed and passed on,
    so a long run does not hold them)."""
    files = _READ_FILES.get()
    if files is not None:
        files.clear()


def open_data_file(path: Path) -> BinaryIO:
    """``path`` opened for reading bytes; within :func:`each_file_read_once`, from memory after its first read.

    Raises:
        OSError: As ``open`` does (e.g. ``FileNotFoundError``).
    """
    files = _READ_FILES.get()
    if files is None:
        return path.open("rb")
    status = path.stat()
    if not stat.S_ISREG(status.st_mode):  # a device or fifo is not kept (nor read whole)
        return path.open("rb")
    key = (os.path.realpath(path), status.st_size, status.st_mtime_ns)
    if key not in files:
        files[key] = path.read_bytes()
    return io.BytesIO(files[key])


@dataclass(frozen=True)
class ScoredPairs:
    """Sentence pairs with a gold score (STS) or label (paraphrase)."""

    sentences1: list[str]
    sentences2: list[str]
    scores: list[float]


def unreadable_row(
    path: Path, line_number: int, error: csv.Error, kind: type[DataFormatError] = DataFormatError
) -> DataFormatError:
    """The ``kind`` error for a row the ``csv`` module refuses (a field over its 128 KiB limit), naming its line."""
    if "field limit" in str(error):
        return kind(
            f"{path}:{line_number}: a field is longer than {csv.field_size_limit():,} characters (is a tab or a line "
            "break missing?)."
        )
    return kind(f"{path}:{line_number}: unreadable row ({error}).")


def read_tsv(path: str | os.PathLike[str], columns: tuple[str, ...]) -> list[list[str]]:
    """Read the named columns of a header-first TSV file (quoting off, as the data README prescribes).

    Raises:
        FileNotFoundError: If the file does not exist.
        DataFormatError: If a column is missing, a row has too few fields or a field is over 128 KiB.
    """
    return [values for _, values in read_numbered_tsv(path, columns)]


def read_numbered_tsv(path: str | os.PathLike[str], columns: tuple[str, ...]) -> list[tuple[int, list[str]]]:
    """:func:`read_tsv` with each row's line number: ``(line number, [values of columns])``, empty lines skipped."""
    return _read_numbered_rows(Path(path), lambda header: columns)


def _read_numbered_rows(
    path: Path, choose: Callable[[list[str] | None], tuple[str, ...]]
) -> list[tuple[int, list[str]]]:
    """:func:`read_numbered_tsv` of the columns ``choose`` names given the header (``None`` for an empty file)."""
    with open_data_file(path) as handle:
        reader = csv.reader(_utf8_lines(handle, path), delimiter="\t", quoting=csv.QUOTE_NONE)
        try:
            header = next(reader, None)
            columns = choose(header)
            if header is None:
                raise DataFormatError(f"{path}: the file is empty (expected a header with {', '.join(columns)}).")
            missing = [column for column in columns if column not in header]
            if missing:
                raise DataFormatError(f"{path}: missing column(s) {', '.join(missing)}; the header is {header}.")
            indices = [header.index(column) for column in columns]
            rows = []
            for row in reader:
                if not row:
                    continue
                if len(row) <= max(indices):
                    raise DataFormatError(
                        f"{path}:{reader.line_num}: expected {len(header)} tab-separated fields, got {len(row)}."
                    )
                rows.append((reader.line_num, [row[index] for index in indices]))
        except csv.Error as error:
            raise unreadable_row(path, reader.line_num, error) from error
    return rows


def _utf8_lines(handle: BinaryIO, path: Path) -> Iterator[str]:
    """The lines of the binary ``handle`` decoded as UTF-8, line endings kept (as ``newline=""`` reads them).

    Raises:
        DataFormatError: Naming the first line that is not UTF-8 text (invalid bytes, or NUL bytes: binary data).
    """
    for number, raw in enumerate(handle, start=1):
        if number == 1 and raw.startswith(codecs.BOM_UTF8):  # a leading BOM is dropped
            raw = raw[len(codecs.BOM_UTF8) :]
        if b"\0" in raw:
            raise DataFormatError(f"{path}:{number}: holds NUL bytes, which no text has; is it a binary file?")
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise DataFormatError(
                f"{path}:{number}: not UTF-8 text ({error.reason} at byte {error.start}); a data file is UTF-8 "
                "text (convert it first, e.g. iconv -f LATIN1 -t UTF-8)."
            ) from None


def first_lines(path: str | os.PathLike[str], count: int, skip: int = 0) -> list[str]:
    """The first ``count`` non-empty lines of a UTF-8 text file after its first ``skip`` lines, stripped
    (undecodable bytes read as U+FFFD)."""
    lines: list[str] = []
    with Path(path).open(encoding="utf-8", errors="replace") as handle:
        for index, line in enumerate(handle):
            if index >= skip and line.strip():
                lines.append(line.strip())
                if len(lines) == count:
                    break
    return lines


def read_scored_pairs(path: str | os.PathLike[str], score_column: str = "score") -> ScoredPairs:
    """Read ``sentence1``, ``sentence2`` and a numeric score column (STS score or paraphrase label).

    Raises:
        DataFormatError: If the file has no rows, or a score is not a finite number (naming its line).
    """
    rows = read_numbered_tsv(path, ("sentence1", "sentence2", score_column))
    scores = []
    for line_number, row in rows:
        try:
            score = float(row[2])
        except ValueError as error:
            raise DataFormatError(f"{path}:{line_number}: {score_column} {row[2]!r} is not a number.") from error
        if not math.isfinite(score):
            raise DataFormatError(f"{path}:{line_number}: {score_column} {row[2]!r} is not a finite number.")
        scores.append(score)
    if not rows:
        raise DataFormatError(f"{path}: no rows.")
    return ScoredPairs([row[0] for _, row in rows], [row[1] for _, row in rows], scores)


def read_translation_pairs(path: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """Read translation pairs: the first two columns of a parallel file (``en``/``other``, ``eng``/``other``)."""
    return [pair for _, pair in read_numbered_translation_pairs(path)]


def read_numbered_translation_pairs(path: str | os.PathLike[str]) -> list[tuple[int, tuple[str, str]]]:
    """:func:`read_translation_pairs` with each pair's line number: ``(line number, (first, second))``.

    Raises:
        DataFormatError: If the header has fewer than two columns, a row has one field, or there are no rows.
    """
    path = Path(path)
    rows = _read_numbered_rows(path, lambda header: _first_two_columns(path, header))
    if not rows:
        raise DataFormatError(f"{path}: no rows.")
    return [(line_number, (row[0], row[1])) for line_number, row in rows]


def _first_two_columns(path: Path, header: list[str] | None) -> tuple[str, str]:
    """The first two columns of a parallel file's ``header`` (``None``: an empty file).

    Raises:
        DataFormatError: If the header has fewer than two columns.
    """
    header = header or [""]  # an empty file or first line: no column
    if len(header) < 2:
        raise DataFormatError(f"{path}: expected at least two tab-separated columns, got header {header}.")
    return header[0], header[1]


def comparable_text(text: str) -> str:
    """``text`` lowercased with everything but letters, marks and digits removed: how exclusion compares texts."""
    return "".join(char for char in text.lower() if char.isalnum() or unicodedata.category(char)[0] == "M")


def excluded_texts(files: Iterable[str | os.PathLike[str]]) -> set[str]:
    """Every text of the pair files ``files`` (both columns; an STS file's two sentences), as :func:`comparable_text`
    compares them: what :func:`write_translation_pairs` leaves out."""
    excluded = {comparable_text(text) for file in files for pair in read_translation_pairs(file) for text in pair}
    excluded.discard("")
    return excluded


def write_translation_pairs(
    path: str | os.PathLike[str],
    pairs: Iterable[tuple[str, str]],
    exclude: Iterable[str | os.PathLike[str]] = (),
) -> int:
    """Write ``(pivot, other)`` pairs as a translation-pair TSV (header ``en``/``other``), atomically, leaving out
    every pair either side of which is a text of an ``exclude`` pair file (e.g. an evaluation set's Tatoeba file),
    compared by :func:`comparable_text`; tabs and line breaks inside a text become spaces.

    Returns:
        The number of pairs written.

    Raises:
        DataFormatError: If no pair is left to write (nothing is written then).
    """
    excluded = excluded_texts(exclude)
    kept = [
        (" ".join(first.split()), " ".join(other.split()))
        for first, other in pairs
        if comparable_text(first) not in excluded and comparable_text(other) not in excluded
    ]
    kept = [(first, other) for first, other in kept if first and other]
    if not kept:
        raise DataFormatError(f"{path}: no pairs to write.")
    write_text_atomically(Path(path), "en\tother\n" + "".join(f"{first}\t{other}\n" for first, other in kept))
    return len(kept)
