"""The inputs of an embedding run: the files (or standard input) and their formats, where reading stands
(:class:`Position`), a batch of rows, and the error that names a bad input's file and line."""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from st_static.errors import StStaticError

STDIN = "-"
INPUT_FORMATS = ("text", "jsonl", "csv", "tsv", "parquet")
SUFFIX_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv", ".parquet": "parquet"}
"""Formats read from a file's suffix; any other suffix is a text file (a line each)."""
TABULAR_FORMATS = ("jsonl", "csv", "tsv", "parquet")
DEFAULT_COLUMN = "text"


class InputError(StStaticError, ValueError):
    """An input to embed is missing, unreadable or not in its format (the message names the file and line)."""


class OptionError(StStaticError, ValueError):
    """An option of an embedding or mining run has a value it cannot take."""


@dataclass(frozen=True)
class InputFile:
    """One input: its name as given (``-`` for standard input), its format, and whether it is a stream that can be
    read once only (a pipe: a FIFO, a process substitution ``<(...)``, a device), as standard input is."""

    name: str
    format: str
    pipe: bool = False

    @property
    def is_stdin(self) -> bool:
        return self.name == STDIN

    @property
    def is_stream(self) -> bool:
        """Standard input or a pipe: read once, from the start, never counted, never resumed."""
        return self.is_stdin or self.pipe


@dataclass(frozen=True)
class Position:
    """Where reading stands: the input's index, the byte offset in it (the row index in a Parquet file) and the line
    (Parquet: row) number of the next row, counted from 1."""

    file: int = 0
    offset: int = 0
    line: int = 1

    def to_dict(self) -> dict[str, int]:
        return {"file": self.file, "offset": self.offset, "line": self.line}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Position:
        return cls(int(values["file"]), int(values["offset"]), int(values["line"]))


@dataclass
class RowBatch:
    """Consecutive rows: their texts, the index of each row's input, each row's line (Parquet: row) number, the ids
    of ``--id-column`` (else ``None``), and the position after the last row."""

    texts: list[str]
    files: np.ndarray
    lines: np.ndarray
    ids: list[str] | None
    end: Position

    def __len__(self) -> int:
        return len(self.texts)


def input_format(name: str, given: str | None) -> str:
    """The format of the input ``name``: ``given``, else its suffix's (:data:`SUFFIX_FORMATS`), else text."""
    if given is not None:
        if given not in INPUT_FORMATS:
            raise InputError(f"Unknown input format {given!r}; choose one of {', '.join(INPUT_FORMATS)}.")
        return given
    return SUFFIX_FORMATS.get(Path(name).suffix.lower(), "text")


def resolve_inputs(patterns: Sequence[str | os.PathLike[str]], given_format: str | None = None) -> list[InputFile]:
    """The input files that ``patterns`` name, in order: paths, globs (their matches sorted) and ``-`` (stdin).

    Raises:
        InputError: If there is no pattern, a path is missing, a folder or an empty file, a glob matches no file,
            standard input is named twice, or a Parquet input is a stream (Parquet is read by seeking).
    """
    if not patterns:
        raise InputError("No input given: name text, JSONL, CSV/TSV or Parquet files, a glob, or - for stdin.")
    names: list[str] = []
    for pattern in map(str, patterns):
        if pattern == STDIN:
            if STDIN in names:
                raise InputError("Standard input (-) can be read once only.")
            names.append(pattern)
        elif glob.has_magic(pattern) and not Path(pattern).exists():
            matches = sorted(match for match in glob.glob(os.path.expanduser(pattern)) if Path(match).is_file())
            if not matches:
                raise InputError(f"{pattern} matches no file.")
            names.extend(matches)
        else:
            path = Path(pattern).expanduser()
            if not path.exists():
                raise InputError(f"{pattern}: no such file.")
            if path.is_dir():
                raise InputError(f"{pattern} is a folder; name its files (a glob such as '{pattern}/*.txt').")
            names.append(pattern)
    files = [_input_file(name, input_format(name, given_format)) for name in names]
    for item in files:
        if item.is_stream and item.format == "parquet":
            what = "standard input" if item.is_stdin else f"{item.name} is a pipe, and"
            raise InputError(f"{what} cannot be read as Parquet, which needs a file to seek in; save it to a file.")
    return files


def _input_file(name: str, format_: str) -> InputFile:
    """``name`` as an input: a stream when it is not a regular file (a FIFO, ``/dev/fd/N``, a device).

    Raises:
        InputError: If it is a regular file of 0 bytes (nothing to embed), or cannot be looked at.
    """
    if name == STDIN:
        return InputFile(name, format_)
    try:
        info = os.stat(os.path.expanduser(name))
    except OSError as error:
        raise InputError(f"{name}: cannot be read ({error.strerror or error}).") from None
    if not stat.S_ISREG(info.st_mode):
        return InputFile(name, format_, pipe=True)
    if info.st_size == 0:
        raise InputError(f"{name} has no rows (an empty file): nothing to embed (remove it from the inputs).")
    return InputFile(name, format_)


def count_rows(inputs: Sequence[InputFile]) -> int | None:
    """About how many rows the inputs hold (exact for text and Parquet files; lines for JSONL and CSV/TSV), or
    ``None`` when one is standard input or another stream. Reads the line files once (fast: a byte count of
    newlines)."""
    total = 0
    for item in inputs:
        if item.is_stream:  # read once only, when it is embedded
            return None
        path = Path(item.name).expanduser()
        if item.format == "parquet":
            try:
                import pyarrow.parquet as pq

                total += pq.ParquetFile(path).metadata.num_rows
            except Exception:  # an unreadable file is reported, with its name, when it is read
                return None
            continue
        lines, last = 0, b"\n"
        with path.open("rb") as handle:
            while block := handle.read(1 << 22):
                lines += block.count(b"\n")
                last = block[-1:]
        lines += last != b"\n"
        total += lines - (item.format in ("csv", "tsv"))
    return total
