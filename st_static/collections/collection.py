"""A collection in memory, for mining: the vectors of an embeddings folder (its texts read back from the inputs it
was embedded from), or texts read from files and encoded with the fast path (their texts kept for the output)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from st_static.collections.encoding import ModelLike, load_collection_model, text_encoder
from st_static.collections.folder import EmbeddingsFolder
from st_static.collections.inputs import (
    STDIN,
    TABULAR_FORMATS,
    InputError,
    InputFile,
    OptionError,
    Position,
    RowBatch,
    count_rows,
    resolve_inputs,
)
from st_static.collections.manifest import is_embeddings_folder
from st_static.collections.readers import RowReader

READ_ROWS = 65_536
"""Rows read (and encoded) at a time: one step of the progress line."""


@dataclass
class Collection:
    """Row names, float32 vectors, and each row's text (``None`` when not read; ``missing_texts`` then says why for
    an embeddings folder whose texts could not be read back)."""

    ids: list[str]
    vectors: np.ndarray
    texts: list[str] | None = None
    missing_texts: str | None = None


def load_collection(
    inputs: Sequence[str | os.PathLike[str]],
    model: ModelLike | None = None,
    column: str | None = None,
    id_column: str | None = None,
    input_format: str | None = None,
    *,
    texts: bool | None = None,
    show_progress_bar: bool = False,
) -> Collection:
    """An embeddings folder (``st-static embed``'s output), or text inputs encoded with ``model``.

    Args:
        inputs: One embeddings folder, or text, JSONL, CSV/TSV, Parquet files (globs, ``-`` for stdin).
        model: The static model that embeds text inputs.
        column: The text's column in JSONL, CSV/TSV and Parquet inputs (default ``text``).
        id_column: A column naming each row (default: file and line).
        input_format: The format of every text input (default: by suffix).
        texts: Keep each row's text: ``None`` (default) keeps the texts of text inputs and reads an embeddings
            folder's back from the inputs its manifest records when they are still there unchanged (else
            ``missing_texts`` says why not); ``True`` the same, but raises where they cannot be read back; ``False``
            keeps none.
        show_progress_bar: One progress line per stage (``Embedding``; ``Loading vectors``, ``Reading texts``).

    Raises:
        OptionError: Texts without a model, a folder mixed with other inputs, or a folder with ``model``, ``column``
            or ``id_column`` (a folder holds its vectors and row names).
        InputError, EmbeddingsFolderError: As reading the inputs or the folder raises them; an InputError too when
            ``texts`` is ``True`` and a folder's inputs are gone or changed since they were embedded, or when
            ``column`` or ``id_column`` is given for a text file (which has no columns).
    """
    folders = [item for item in inputs if Path(item).is_dir() and is_embeddings_folder(Path(item))]
    if folders:
        if len(inputs) > 1:
            raise OptionError("Give one embeddings folder, or text inputs (with --model), not both.")
        options = {"--model": model, "--column": column, "--id-column": id_column}
        given = [name for name, value in options.items() if value is not None]
        if given:
            raise OptionError(
                f"{folders[0]} is an embeddings folder, which holds its vectors and row names as embedded: "
                f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} for text inputs; leave "
                f"{'it' if len(given) == 1 else 'them'} out."
            )
        folder = EmbeddingsFolder(folders[0])
        ids, vectors = folder.load(show_progress_bar=show_progress_bar)
        if texts is False:
            return Collection(ids, vectors)
        try:
            return Collection(ids, vectors, folder_texts(folder, ids, show_progress_bar=show_progress_bar))
        except InputError as error:
            if texts:
                raise
            return Collection(ids, vectors, missing_texts=str(error))
    if model is None:
        raise OptionError(
            "The inputs are texts: give --model to embed them (or give the folder `st-static embed` wrote)."
        )
    files: list[InputFile] = resolve_inputs(list(inputs), input_format)
    text_files = [item.name for item in files if item.format not in TABULAR_FORMATS]
    if text_files and (column is not None or id_column is not None):
        raise InputError(
            f"--column and --id-column name columns of JSONL, CSV/TSV and Parquet inputs; {text_files[0]} is a text "
            "file (a text a line, named by its line number)."
        )
    reader = RowReader(files, column, id_column)
    embed = text_encoder(load_collection_model(model))
    read: list[str] = []
    ids: list[str] = []
    parts: list[np.ndarray] = []
    with _progress(count_rows(files), "Embedding", " texts", show_progress_bar) as progress:
        for batch in reader.batches(Position(), READ_ROWS):
            read.extend(batch.texts)
            ids.extend(batch.ids if batch.ids is not None else _line_ids([item.name for item in files], batch))
            parts.append(embed(batch.texts))
            progress.update(len(batch))
    vectors = np.concatenate(parts) if len(parts) > 1 else parts[0]  # the reader refuses an input without rows
    return Collection(ids, vectors, read if texts is not False else None)


def folder_texts(folder: EmbeddingsFolder, ids: Sequence[str], *, show_progress_bar: bool = False) -> list[str]:
    """The text of each row of an embeddings folder, read back from the inputs its manifest records (their resolved
    paths, the same column), each row checked against the row name the folder holds.

    Raises:
        InputError: If the folder was embedded from standard input, or an input is gone, changed since it was
            embedded (size or modification time), or no longer holds the rows the folder names.
    """
    arguments = folder.manifest.arguments
    files: list[InputFile] = []
    for item in arguments["inputs"]:
        name, path = item.get("name"), item.get("path")
        shown = name if name == path else f"{name} ({path})"
        if path == STDIN or not path or "size" not in item:  # a stream (standard input, a pipe): read once
            what = "standard input" if path in (STDIN, None) else f"the pipe {name}"
            raise InputError(f"{folder.path} was embedded from {what}, whose texts were not kept.")
        try:
            info = Path(path).stat()
        except OSError:
            raise InputError(f"{shown}, which {folder.path} was embedded from, is gone.") from None
        if (info.st_size, info.st_mtime_ns) != (item.get("size"), item.get("mtime")):
            raise InputError(f"{shown} has changed since {folder.path} was embedded from it.")
        files.append(InputFile(str(path), str(item["format"])))
    names = folder.manifest.input_names
    reader = RowReader(files, arguments.get("column"), arguments.get("id_column"))
    read: list[str] = []
    with _progress(len(ids), "Reading texts", " rows", show_progress_bar) as progress:
        for batch in reader.batches(Position(), READ_ROWS):
            named = batch.ids if batch.ids is not None else _line_ids(names, batch)
            if len(read) + len(batch) > len(ids) or named != list(ids[len(read) : len(read) + len(batch)]):
                where = names[int(batch.files[0])] if len(batch) else names[-1]
                raise InputError(f"{where} no longer holds the rows {folder.path} was embedded from.")
            read.extend(batch.texts)
            progress.update(len(batch))
    if len(read) != len(ids):
        raise InputError(f"{names[-1]} no longer holds the rows {folder.path} was embedded from (it has fewer).")
    return read


def _line_ids(names: Sequence[str], batch: RowBatch) -> list[str]:
    """Rows named by input and line, as the shards name them."""
    return [f"{names[file]}:{line}" for file, line in zip(batch.files.tolist(), batch.lines.tolist(), strict=True)]


def _progress(total: int | None, description: str, unit: str, show: bool) -> Any:
    return tqdm(total=total, desc=description, unit=unit, unit_scale=True, mininterval=1.0, disable=not show)
