"""Reading the texts to embed: text files (a line each, read in blocks), JSON Lines, CSV/TSV and Parquet, as one
stream of rows that starts at any recorded :class:`~st_static.collections.inputs.Position` and is cut into batches
of a given size, each row with its file and line; a bad row is an :class:`InputError` naming both."""

from __future__ import annotations

import codecs
import contextlib
import csv
import hashlib
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from st_static.collections.inputs import DEFAULT_COLUMN, InputError, InputFile, Position, RowBatch

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest line read (a longer one is an error, not a read of the whole file into memory)."""
BLOCK_BYTES = 1 << 22
CHUNK_ROWS = 8192


@dataclass
class Chunk:
    """Consecutive rows of one input: texts, ids (or ``None``), each row's line (Parquet: row) number and the byte
    offset (Parquet: row index) after it; the line after row ``i`` is ``lines[i] + 1``."""

    texts: list[str]
    ids: list[str] | None
    lines: np.ndarray
    ends: np.ndarray

    def __len__(self) -> int:
        return len(self.texts)

    def part(self, start: int, stop: int) -> Chunk:
        ids = None if self.ids is None else self.ids[start:stop]
        return Chunk(self.texts[start:stop], ids, self.lines[start:stop], self.ends[start:stop])


class RowReader:
    """The rows of several inputs read as one stream, in batches, from any position.

    Args:
        inputs: The inputs, in order.
        column: The text's column (JSONL key, CSV/TSV header, Parquet column); ``text`` when ``None``. Text files
            have none.
        id_column: A column whose value names each row (kept as a str); ``None``: rows are named by file and line.
        stdin: The binary stream standard input is read from (``sys.stdin.buffer`` when ``None``).
    """

    def __init__(
        self,
        inputs: Sequence[InputFile],
        column: str | None = None,
        id_column: str | None = None,
        stdin: BinaryIO | None = None,
    ) -> None:
        self.inputs = list(inputs)
        self.column = DEFAULT_COLUMN if column is None else column  # "" names a column (pandas' index)
        self.id_column = id_column
        self.stdin = stdin
        self.stream_digests: dict[int, str] = {}
        """The sha256 of each stream input (standard input, a pipe) read to its end, by input index."""

    def batches(self, start: Position, size: int) -> Iterator[RowBatch]:
        """Batches of ``size`` rows (the last one may be shorter) from ``start`` on, across the inputs.

        Raises:
            InputError: At the first row that cannot be read, naming its file and line; the batches before it are
                whole.
        """
        parts: list[tuple[int, Chunk]] = []
        held = 0
        for index in range(start.file, len(self.inputs)):
            first = start if index == start.file else Position(index)
            for chunk in self._chunks(index, first):
                taken = 0
                while taken < len(chunk):
                    step = min(size - held, len(chunk) - taken)
                    parts.append((index, chunk.part(taken, taken + step)))
                    held += step
                    taken += step
                    if held == size:
                        yield _assemble(parts, self.id_column is not None)
                        parts, held = [], 0
        if parts:
            yield _assemble(parts, self.id_column is not None)

    def _chunks(self, index: int, start: Position) -> Iterator[Chunk]:
        item = self.inputs[index]
        rows = 0
        for chunk in self._format_chunks(index, item, start):
            rows += len(chunk)
            yield chunk
        if not rows and start.offset == 0:
            what = "standard input is empty" if item.is_stdin else f"{item.name} has no rows"
            raise InputError(f"{what}: nothing to embed (remove it from the inputs).")

    def _format_chunks(self, index: int, item: InputFile, start: Position) -> Iterator[Chunk]:
        if item.format == "parquet":
            yield from _parquet_chunks(item, start, self.column, self.id_column)
            return
        if item.is_stream:  # read once, from the start, its digest kept (what a rerun compares)
            if start.offset:
                what = "Standard input" if item.is_stdin else f"{item.name} (a pipe)"
                raise InputError(f"{what} cannot be read from the middle; embed a file to resume a run.")
            with open_stream(item, self.stdin) as handle:
                digesting = DigestingReader(handle)
                yield from self._line_chunks(item, digesting, start)  # type: ignore[arg-type]
                self.stream_digests[index] = digesting.hexdigest()
            return
        try:
            with Path(item.name).expanduser().open("rb") as handle:
                yield from self._line_chunks(item, handle, start)
        except OSError as error:
            raise InputError(f"{item.name}: cannot be read ({error.strerror or error}).") from error

    def _line_chunks(self, item: InputFile, handle: BinaryIO, start: Position) -> Iterator[Chunk]:
        if item.format == "text":
            return _text_chunks(item, handle, start)
        if item.format == "jsonl":
            return _chunked(_jsonl_rows(item, handle, start, self.column, self.id_column), self.id_column)
        return _chunked(_csv_rows(item, handle, start, self.column, self.id_column), self.id_column)


class DigestingReader:
    """A binary stream read through, the sha256 of every byte read kept (what identifies a stream read once)."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.digest = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.digest.update(data)
        return data

    def readline(self, size: int = -1) -> bytes:
        data = self.handle.readline(size)
        self.digest.update(data)
        return data

    def hexdigest(self) -> str:
        return self.digest.hexdigest()


@contextlib.contextmanager
def open_stream(item: InputFile, stdin: BinaryIO | None = None) -> Iterator[BinaryIO]:
    """The binary stream of a stream input: ``stdin`` (default ``sys.stdin.buffer``) for ``-``, else the pipe opened
    (and closed afterwards)."""
    if item.is_stdin:
        yield stdin if stdin is not None else sys.stdin.buffer
        return
    try:
        handle = Path(item.name).expanduser().open("rb")
    except OSError as error:
        raise InputError(f"{item.name}: cannot be read ({error.strerror or error}).") from error
    with handle:
        yield handle


def stream_digest(item: InputFile, stdin: BinaryIO | None = None) -> str:
    """The sha256 of a stream input read to its end (what a rerun compares with the one its run recorded)."""
    digest = hashlib.sha256()
    with open_stream(item, stdin) as handle:
        while block := handle.read(BLOCK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def _assemble(parts: list[tuple[int, Chunk]], with_ids: bool) -> RowBatch:
    texts: list[str] = []
    ids: list[str] | None = [] if with_ids else None
    for _, chunk in parts:
        texts.extend(chunk.texts)
        if ids is not None and chunk.ids is not None:
            ids.extend(chunk.ids)
    files = np.concatenate([np.full(len(chunk), index, dtype=np.int32) for index, chunk in parts])
    lines = np.concatenate([chunk.lines for _, chunk in parts]).astype(np.int64, copy=False)
    last_file, last = parts[-1]
    end = Position(last_file, int(last.ends[-1]), int(last.lines[-1]) + 1)
    return RowBatch(texts, files, lines, ids, end)


def _chunked(rows: Iterator[tuple[str, str | None, int, int]], id_column: str | None) -> Iterator[Chunk]:
    """Rows ``(text, id, line, offset after)`` gathered into chunks."""
    texts: list[str] = []
    ids: list[str] = []
    lines: list[int] = []
    ends: list[int] = []
    for text, row_id, line, end in rows:
        texts.append(text)
        if id_column is not None:
            ids.append(row_id)  # type: ignore[arg-type]
        lines.append(line)
        ends.append(end)
        if len(texts) == CHUNK_ROWS:
            yield Chunk(texts, ids if id_column is not None else None, np.array(lines), np.array(ends))
            texts, ids, lines, ends = [], [], [], []
    if texts:
        yield Chunk(texts, ids if id_column is not None else None, np.array(lines), np.array(ends))


def _not_utf8(item: InputFile, number: int, error: UnicodeDecodeError, column: int) -> InputError:
    return InputError(
        f"{item.name}:{number}: not UTF-8 text ({error.reason} at byte {column} of the line); convert the file "
        "first (e.g. iconv -f LATIN1 -t UTF-8)."
    )


def _nul_bytes(item: InputFile, number: int) -> InputError:
    return InputError(f"{item.name}:{number}: holds NUL bytes, which no text has; is it a binary file?")


def _text_chunks(item: InputFile, handle: BinaryIO, start: Position) -> Iterator[Chunk]:
    """Every line is a text (an empty line too, without its ``\\n`` or ``\\r\\n``), so row ``i`` of a file is its
    line ``i``. Read in blocks of 4 MiB: decoded and split whole, the byte offsets found with numpy."""
    if start.offset:
        handle.seek(start.offset)
    offset, number, pending = start.offset, start.line, b""
    while True:
        block = handle.read(BLOCK_BYTES)
        data = pending + block
        if not data:
            return
        cut = data.rfind(b"\n") + 1 if block else len(data)
        if not cut:
            if len(data) > MAX_LINE_BYTES:
                raise InputError(f"{item.name}:{number}: a line over {MAX_LINE_BYTES >> 20} MiB; is it a text file?")
            pending = data
            continue
        body, pending = data[:cut], data[cut:]
        if not block:  # the last line, without a line end
            body += b"\n"
        chunk, error = _text_chunk(item, body, offset, number)
        if error is not None:  # the good lines before the bad one first, so that their shards are written
            if len(chunk):
                yield chunk
            raise error
        if not block:
            chunk.ends[-1] -= 1
        offset, number = int(chunk.ends[-1]), int(chunk.lines[-1]) + 1
        yield chunk
        if not block:
            return


def _text_chunk(item: InputFile, body: bytes, offset: int, number: int) -> tuple[Chunk, InputError | None]:
    """The lines of ``body`` (whole lines, each ending with ``\n``), starting at ``offset`` with line ``number``;
    with an error for a line that is not text, the lines before it and the error."""
    error: InputError | None = None
    start = 3 if offset == 0 and body.startswith(codecs.BOM_UTF8) else 0  # a leading BOM is dropped
    nul = body.find(b"\0")
    bad = nul
    try:
        text = body[start : nul if nul >= 0 else len(body)].decode("utf-8")
    except UnicodeDecodeError as decode_error:
        bad = decode_error.start + start
        line_start = body.rfind(b"\n", 0, bad) + 1
        error = _not_utf8(item, number + body.count(b"\n", 0, bad), decode_error, bad - line_start + 1)
    if bad >= 0:
        error = error or _nul_bytes(item, number + body.count(b"\n", 0, nul))
        body = body[: body.rfind(b"\n", 0, bad) + 1]
        text = body[start:].decode("utf-8")
    newlines = np.flatnonzero(np.frombuffer(body, dtype=np.uint8) == 10)
    texts = text.split("\n")
    texts.pop()
    if "\r" in text:
        texts = [line[:-1] if line.endswith("\r") else line for line in texts]
    lines = np.arange(number, number + len(texts), dtype=np.int64)
    return Chunk(texts, None, lines, offset + newlines + 1), error


def _raw_lines(item: InputFile, handle: BinaryIO, start: Position, seek: bool = True) -> Iterator[tuple[str, int, int]]:
    """``(line with its ending, line number, offset after it)`` for each line from ``start``, decoded (``seek``:
    move to ``start.offset`` first; else the handle stands there already).

    Raises:
        InputError: For a line that is not UTF-8 text, holds NUL bytes (a binary file) or is over 64 MiB.
    """
    if seek and start.offset:
        handle.seek(start.offset)
    offset, number = start.offset, start.line
    while raw := handle.readline(MAX_LINE_BYTES + 1):
        if len(raw) > MAX_LINE_BYTES:
            raise InputError(f"{item.name}:{number}: a line over {MAX_LINE_BYTES >> 20} MiB; is it a text file?")
        offset += len(raw)
        if number == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        if b"\0" in raw:
            raise _nul_bytes(item, number)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise _not_utf8(item, number, error, error.start + 1) from None
        yield text, number, offset
        number += 1


def _option(name: str, column: str) -> str:
    """The option that names the missing column ``name``: ``--column`` for the text's, else ``--id-column``."""
    return "--column" if name == column else "--id-column"


def _row_id(item: InputFile, number: int, value: Any, column: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise InputError(f"{item.name}:{number}: the id column {column!r} holds {value!r}, not a str or a number.")


def _text_value(item: InputFile, number: int, value: Any, column: str) -> str:
    if isinstance(value, str):
        return value
    what = "null" if value is None else f"a {type(value).__name__}"
    raise InputError(f"{item.name}:{number}: the column {column!r} holds {what}, not a text.")


def _jsonl_rows(
    item: InputFile, handle: BinaryIO, start: Position, column: str, id_column: str | None
) -> Iterator[tuple[str, str | None, int, int]]:
    """One JSON object a line (blank lines skipped): the text is its ``column`` key."""
    for line, number, offset in _raw_lines(item, handle, start):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as error:
            raise InputError(f"{item.name}:{number}: not a JSON object ({error}).") from None
        except RecursionError:
            raise InputError(f"{item.name}:{number}: JSON nested too deep to read (not a row of texts).") from None
        if not isinstance(record, dict):
            raise InputError(f"{item.name}:{number}: expected a JSON object, got a {type(record).__name__}.")
        for name in (column, id_column):
            if name is not None and name not in record:
                keys = ", ".join(map(repr, list(record)[:10])) or "none"
                raise InputError(
                    f"{item.name}:{number}: no key {name!r} (keys: {keys}); choose one with {_option(name, column)}."
                )
        text = _text_value(item, number, record[column], column)
        row_id = _row_id(item, number, record[id_column], id_column) if id_column is not None else None
        yield text, row_id, number, offset


def _csv_rows(
    item: InputFile, handle: BinaryIO, start: Position, column: str, id_column: str | None
) -> Iterator[tuple[str, str | None, int, int]]:
    """A header, then a record a row: CSV quoted as RFC 4180, TSV unquoted (a tab or newline ends a field)."""
    options: dict[str, Any] = (
        {"delimiter": "\t", "quoting": csv.QUOTE_NONE} if item.format == "tsv" else {"strict": True}
    )
    state = {"line": 1, "offset": 0}  # where the next unread line starts

    def lines(begin: Position, seek: bool) -> Iterator[str]:
        for text, number, offset in _raw_lines(item, handle, begin, seek):
            state["line"], state["offset"] = number + 1, offset
            yield text

    try:
        header = next(csv.reader(lines(Position(start.file), False), **options), None)
    except csv.Error as error:
        raise InputError(f"{item.name}:1: unreadable header ({error}).") from None
    if header is None:
        raise InputError(f"{item.name} is empty (expected a header naming the column {column!r}).")
    for name in (column, id_column):
        if name is not None and name not in header:
            raise InputError(
                f"{item.name}: no column {name!r}; the header has {header}. Choose one with {_option(name, column)}."
            )
    text_index = header.index(column)
    id_index = header.index(id_column) if id_column is not None else -1
    if start.offset:  # a resumed run: on from the recorded row (else on from the header)
        state["line"], state["offset"] = start.line, start.offset
    reader = csv.reader(lines(Position(start.file, state["offset"], state["line"]), bool(start.offset)), **options)
    while True:
        number = state["line"]
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise InputError(f"{item.name}:{number}: unreadable row ({error}).") from None
        if not row:
            continue
        if len(row) != len(header):
            hint = "a tab inside a text?" if item.format == "tsv" else "an unclosed quote?"
            raise InputError(f"{item.name}:{number}: {len(row)} fields where the header has {len(header)} ({hint}).")
        yield row[text_index], (row[id_index] if id_column is not None else None), number, state["offset"]


def _parquet_chunks(item: InputFile, start: Position, column: str, id_column: str | None) -> Iterator[Chunk]:
    """The ``column`` of a Parquet file, a record batch a chunk (a row's 'line' is its row number from 1)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(Path(item.name).expanduser())
    except (OSError, pa.ArrowException) as error:
        raise InputError(f"{item.name}: not a readable Parquet file ({error}).") from None
    schema = parquet.schema_arrow
    for name in (column, id_column):
        if name is not None and name not in schema.names:
            raise InputError(
                f"{item.name}: no column {name!r}; it has {schema.names}. Choose one with {_option(name, column)}."
            )
    kind = schema.field(column).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)):
        raise InputError(f"{item.name}: the column {column!r} holds {kind}, not text.")
    groups, row = [], 0  # the row groups to read; the rows before them (then: before the next batch)
    for group in range(parquet.num_row_groups):
        rows = parquet.metadata.row_group(group).num_rows
        if not groups and row + rows <= start.offset:
            row += rows
        else:
            groups.append(group)
    columns = [column] if id_column is None else [column, id_column]
    try:
        for batch in parquet.iter_batches(batch_size=CHUNK_ROWS, row_groups=groups, columns=columns):
            skip = max(0, start.offset - row)
            row += batch.num_rows
            if skip >= batch.num_rows:
                continue
            batch = batch.slice(skip)
            texts = batch.column(0)
            if texts.null_count:
                null = row - batch.num_rows + 1 + int(np.flatnonzero(texts.is_null().to_numpy(zero_copy_only=False))[0])
                raise InputError(f"{item.name}: row {null}: the column {column!r} is null, not a text.")
            numbers = np.arange(row - batch.num_rows + 1, row + 1, dtype=np.int64)
            ids = None
            if id_column is not None:
                ids = [
                    _row_id(item, int(number), value, id_column)
                    for number, value in zip(numbers, batch.column(1).to_pylist(), strict=True)
                ]
            yield Chunk(texts.to_pylist(), ids, numbers, numbers.copy())
    except pa.ArrowException as error:
        raise InputError(f"{item.name}: unreadable after row {row} ({error}).") from None
