"""``embed_files``: texts on disk streamed to vector shards with flat memory, resumable after any stop, in one
process, in ``workers`` processes, or on Ray."""

from __future__ import annotations

import contextlib
import math
import os
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from tqdm.auto import tqdm

from st_static.collections.encoding import (
    ModelLike,
    load_collection_model,
    model_fingerprint,
    model_name,
    model_reference,
    vector_dim,
)
from st_static.collections.inputs import (
    DEFAULT_COLUMN,
    TABULAR_FORMATS,
    InputError,
    InputFile,
    OptionError,
    count_rows,
    resolve_inputs,
)
from st_static.collections.manifest import (
    MANIFEST_NAME,
    EmbeddingsFolderError,
    Manifest,
    differences,
    is_embeddings_folder,
)
from st_static.collections.readers import RowReader, stream_digest
from st_static.collections.shards import (
    OUTPUT_FORMATS,
    PRECISIONS,
    stored_width,
)
from st_static.collections.workers import (
    FinishedShard,
    InProcessShards,
    ShardEmbedder,
    ShardPool,
    ShardSettings,
    embed_first_int8_shard,
)
from st_static.errors import UnsafeDestinationError
from st_static.files import check_destination, folder_lock
from st_static.files.locks import LOCK_FILE_NAME, OWNER_FILE_NAME

DEFAULT_SHARD_SIZE = 50_000
ENGINES = ("local", "ray")
_SHARD_FILE = re.compile(r"^shard-(\d+)\.(parquet|npy|ids\.npy)$")
_LEFTOVER = re.compile(r"^\.(shard-\d+\..*|manifest\.json)\.tmp-")


@dataclass(frozen=True)
class EmbedResult:
    """What a run did: the folder, the rows and shards it holds, the rows this call embedded and the seconds embedding
    them took (the model's load not included)."""

    folder: Path
    rows: int
    shards: int
    new_rows: int
    seconds: float


def embed_files(
    model: ModelLike,
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    output_dir: str | os.PathLike[str],
    *,
    column: str | None = None,
    id_column: str | None = None,
    input_format: str | None = None,
    output_format: str = "parquet",
    precision: str = "float32",
    truncate_dim: int | None = None,
    shard_size: int = DEFAULT_SHARD_SIZE,
    workers: int = 1,
    engine: str = "local",
    address: str | None = None,
    show_progress_bar: bool = True,
    stdin: BinaryIO | None = None,
) -> EmbedResult:
    """Embed every row of the inputs into vector shards in ``output_dir``, resuming where an earlier run stopped.

    Rows are read in shards of ``shard_size`` (memory stays flat whatever the input size); each shard is written
    whole under a temporary name, then renamed, and ``manifest.json`` records it, so a run stopped at any point
    (Ctrl-C, SIGKILL, a bad row) leaves only whole shards, and the same call again continues after the last one.

    Args:
        model: A static model, or its folder or Hub id.
        inputs: Files (text: a line each; ``.jsonl``; ``.csv``/``.tsv`` with a header; ``.parquet``), globs, or
            ``-`` for standard input (text), read as one collection in order. Standard input and pipes (a FIFO,
            ``<(...)``) are read once: a run over one is not resumed, and a finished one is kept only for the same
            texts (their sha256, recorded).
        output_dir: The folder of shards and ``manifest.json`` (new, empty, or an earlier run of the same call).
        column: The text's column in JSONL, CSV/TSV and Parquet inputs (default ``text``).
        id_column: A column whose values name the rows; without it rows are named by file and line (Parquet: row).
        input_format: ``text``, ``jsonl``, ``csv``, ``tsv`` or ``parquet`` for every input (default: by suffix).
        output_format: ``parquet`` (row names and vectors in each shard) or ``npy`` (``shard-N.npy`` and its row
            names ``shard-N.ids.npy``).
        precision: ``float32``, ``float16``, ``int8`` (calibrated on the first shard when it holds enough distinct
            rows, else on the range every unit vector's components lie in; ranges recorded in the manifest) or
            ``ubinary`` (packed bits), through sentence-transformers' ``quantize_embeddings``.
        truncate_dim: Keep the first dimensions only (as ``model.encode`` with ``truncate_dim``: not renormalised).
        shard_size: Rows per shard.
        workers: Processes that encode (each loads the model once); the output is the same for any number. No more
            are started than there are shards to embed (or, on this machine, CPU cores).
        engine: ``local`` (this machine) or ``ray`` (Ray Data ``map_batches`` over the inputs; ``st-static[ray]``).
        address: The Ray cluster to join (default: start a local Ray).
        show_progress_bar: Show one progress line (texts/s; the ETA where the input size is known).
        stdin: The binary stream read for ``-`` (default: ``sys.stdin.buffer``).

    Returns:
        An :class:`EmbedResult`. Read the vectors back with :class:`st_static.collections.EmbeddingsFolder`.

    Raises:
        InputError: A missing, empty or unreadable input, one named twice, a missing column, a row that is not UTF-8
            or not in its format (naming the file and line); the shards written before it stay valid.
        EmbeddingsFolderError: ``output_dir`` holds a run with other arguments (or inputs changed since).
        UnsafeDestinationError: ``output_dir`` is not a place to write the shards to.
        OptionError: A bad option, or (``engine="ray"``) a cluster that cannot be reached or inputs Ray cannot
            read twice.
    """
    files = resolve_inputs([inputs] if isinstance(inputs, str | os.PathLike) else list(inputs), input_format)
    _check_options(
        files, column, id_column, output_format, precision, truncate_dim, shard_size, workers, engine, address
    )
    _check_distinct(files)
    if engine == "ray":  # before the model loads: a missing Ray or an unreachable cluster fails at once
        from st_static.collections.ray_engine import check_ray

        check_ray(address)
    folder = _check_output(output_dir, files, model)
    loaded = load_collection_model(model)
    dim = vector_dim(loaded)
    if truncate_dim is not None and truncate_dim > dim:
        raise OptionError(f"truncate_dim {truncate_dim} is more than the model's {dim} dimensions.")
    tabular = any(item.format in TABULAR_FORMATS for item in files)
    arguments = {
        "model": {"name": model_name(model), "sha256": model_fingerprint(loaded)},
        "inputs": [_describe_input(item) for item in files],
        "column": (DEFAULT_COLUMN if column is None else column) if tabular else None,
        "id_column": id_column,
        "precision": precision,
        "truncate_dim": truncate_dim,
        "shard_size": shard_size,
        "output_format": output_format,
    }
    dim = truncate_dim or dim
    with folder_lock(folder, remove_if_unused=True):
        manifest = _open_manifest(folder, arguments, dim, precision, files, stdin)
        started = time.perf_counter()
        done = manifest.rows
        if not manifest.complete:
            if manifest.shards and any(item.is_stream for item in files):
                raise EmbeddingsFolderError(
                    f"{folder} holds an unfinished run over standard input or a pipe, which cannot be resumed; embed "
                    "into a new folder (or save the input to a file, which can)."
                )
            _remove_leftovers(folder, manifest.shards)
            settings = ShardSettings(folder, output_format, precision, truncate_dim, tuple(manifest.input_names))
            reader = RowReader(files, column, id_column, stdin)
            total = count_rows(files)
            workers = _usable_workers(workers, total, manifest.rows, shard_size, engine, address)
            with tqdm(
                total=total,
                initial=manifest.rows,
                desc="Embedding",
                unit=" texts",
                unit_scale=True,
                mininterval=1.0,
                disable=not show_progress_bar,
            ) as progress:

                def record(shard: FinishedShard) -> None:
                    manifest.finish_shard(shard.rows, shard.end)
                    manifest.save(folder)
                    progress.update(shard.rows)

                try:
                    if engine == "ray":
                        from st_static.collections.ray_engine import embed_on_ray

                        embed_on_ray(loaded, model, manifest, reader, settings, workers, address, record)
                    else:
                        _embed_locally(loaded, model, manifest, reader, settings, workers, record)
                except BaseException:
                    if not manifest.shards:  # nothing kept: no manifest left to refuse other arguments later
                        (folder / MANIFEST_NAME).unlink(missing_ok=True)
                    raise
            for index, digest in reader.stream_digests.items():  # what identifies a stream in a rerun
                manifest.arguments["inputs"][index]["sha256"] = digest
            manifest.complete = True
            manifest.save(folder)
    return EmbedResult(folder, manifest.rows, manifest.shards, manifest.rows - done, time.perf_counter() - started)


def _embed_locally(
    loaded: ModelLike,
    given: ModelLike,
    manifest: Manifest,
    reader: RowReader,
    settings: ShardSettings,
    workers: int,
    record: Callable[[FinishedShard], None],
) -> None:
    """The local engine: shards in this process, or in a pool of ``workers`` processes, recorded in order."""
    embedder = ShardEmbedder(loaded, settings)
    index = manifest.shards
    with contextlib.ExitStack() as stack:
        shards: ShardPool | InProcessShards
        if workers > 1:
            saved = stack.enter_context(tempfile.TemporaryDirectory(prefix="st-static-model-"))
            shards = ShardPool(model_reference(given, Path(saved)), settings, workers)
        else:
            shards = InProcessShards(embedder)
        stack.callback(shards.close)
        try:
            for batch in reader.batches(manifest.next, manifest.arguments["shard_size"]):
                ranges = manifest.ranges_array()
                if settings.precision == "int8" and ranges is None:
                    embed_first_int8_shard(embedder, manifest, index, batch, settings, record)
                else:
                    for shard in shards.submit(index, batch, ranges):
                        record(shard)
                index += 1
        except InputError:  # the shards before the bad row are kept
            for shard in shards.drain():
                record(shard)
            raise
        for shard in shards.drain():
            record(shard)


def _check_options(
    files: Sequence[InputFile],
    column: str | None,
    id_column: str | None,
    output_format: str,
    precision: str,
    truncate_dim: int | None,
    shard_size: int,
    workers: int,
    engine: str,
    address: str | None,
) -> None:
    if precision not in PRECISIONS:
        raise OptionError(f"Unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}.")
    if output_format not in OUTPUT_FORMATS:
        raise OptionError(f"Unknown output format {output_format!r}; choose one of {', '.join(OUTPUT_FORMATS)}.")
    if engine not in ENGINES:
        raise OptionError(f"Unknown engine {engine!r}; choose one of {', '.join(ENGINES)}.")
    if address is not None and engine != "ray":  # else the run would be local, the cluster silently ignored
        raise OptionError(f"--address {address!r} names a Ray cluster: it needs --engine ray.")
    if engine == "ray" and any(item.is_stream for item in files):
        raise OptionError(
            "--engine ray reads the inputs twice (to plan the shards, then on the workers): standard input or a pipe "
            "can be read once only; save it to a file, or use the local engine."
        )
    for name, value, least in (
        ("shard_size", shard_size, 1),
        ("workers", workers, 1),
        ("truncate_dim", truncate_dim, 1),
    ):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < least):
            raise OptionError(f"{name} must be an int of at least {least}, got {value!r}.")
    text_files = [item.name for item in files if item.format not in TABULAR_FORMATS]
    if text_files and (column is not None or id_column is not None):
        raise InputError(
            f"--column and --id-column name columns of JSONL, CSV/TSV and Parquet inputs; {text_files[0]} is a text "
            "file (a text a line, named by its line number)."
        )


def _check_distinct(files: Sequence[InputFile]) -> None:
    """Refuse a file named twice, under any spelling or link: its rows would be embedded twice, under the same names
    (a pipe named twice would be read empty the second time)."""
    seen: dict[tuple[int, int], str] = {}
    for item in files:
        if item.is_stdin:  # named twice is refused by resolve_inputs
            continue
        try:
            info = os.stat(os.path.expanduser(item.name))
        except OSError:  # reported when it is read
            continue
        key = (info.st_dev, info.st_ino)
        if key in seen:
            also = "" if seen[key] == item.name else f" (also as {seen[key]})"
            raise InputError(
                f"{item.name} is given twice{also}: name each input once (its rows would be embedded twice, under the "
                "same row names)."
            )
        seen[key] = item.name


def _check_output(output_dir: str | os.PathLike[str], files: Sequence[InputFile], model: ModelLike) -> Path:
    """The output folder, checked before any work: new, empty, or an earlier embeddings run."""
    from st_static.model.save_load import model_folder_inputs

    given = Path(output_dir).expanduser()
    if (
        given.is_dir()
        and not given.is_symlink()
        and any(entry.name not in (LOCK_FILE_NAME, OWNER_FILE_NAME) for entry in given.iterdir())
        and not is_embeddings_folder(given)
    ):
        raise UnsafeDestinationError(
            f"{given} is a folder with other files in it (no st-static {MANIFEST_NAME}); give a new or empty folder."
        )
    inputs: list[str | Path] = [item.name for item in files if not item.is_stream]
    if isinstance(model, str | os.PathLike):
        inputs.extend(model_folder_inputs(model))
    return check_destination(given, replaceable=lambda _: True, inputs=inputs, what="output folder")


def _describe_input(item: InputFile) -> dict[str, object]:
    """What identifies an input in the manifest: its resolved path, size and modification time; a stream (standard
    input, a pipe) its path only, and once read to its end the sha256 of what it gave (``sha256``)."""
    if item.is_stdin:
        return {"name": item.name, "path": "-", "format": item.format}
    if item.is_stream:  # /dev/fd/N of a process substitution resolves to no path
        return {"name": item.name, "path": os.path.abspath(os.path.expanduser(item.name)), "format": item.format}
    path = Path(item.name).expanduser().resolve()
    try:
        info = path.stat()
    except OSError as error:
        raise InputError(f"{item.name}: cannot be read ({error.strerror or error}).") from None
    return {
        "name": item.name,
        "path": str(path),
        "format": item.format,
        "size": info.st_size,
        "mtime": info.st_mtime_ns,
    }


def _open_manifest(
    folder: Path,
    arguments: dict[str, object],
    dim: int,
    precision: str,
    files: Sequence[InputFile],
    stdin: BinaryIO | None,
) -> Manifest:
    """The folder's manifest, checked against this run's arguments, or a new one (saved at once; one without a
    finished shard holds nothing to keep, so a new run replaces it). A finished run over a stream (standard input,
    a pipe) is checked by reading the stream again: the same texts, the sha256 recorded."""
    if (folder / MANIFEST_NAME).exists() and ((manifest := Manifest.load(folder)).shards or manifest.complete):
        if manifest.complete and any(item.is_stream for item in files):
            arguments = {**arguments, "inputs": [dict(item) for item in arguments["inputs"]]}  # type: ignore[union-attr]
            for index, item in enumerate(files):
                if item.is_stream:
                    arguments["inputs"][index]["sha256"] = stream_digest(item, stdin)  # type: ignore[index]
        changed = differences(manifest.arguments, arguments)  # type: ignore[arg-type]
        if changed:
            raise EmbeddingsFolderError(
                f"{folder} holds embeddings made with other arguments ({'; '.join(changed)}). Rerun with the same "
                "arguments to resume it, or embed into a new folder (or delete this one)."
            )
        return manifest
    manifest = Manifest(arguments=dict(arguments), dim=dim, width=stored_width(dim, precision))
    manifest.save(folder)
    return manifest


def _usable_workers(
    workers: int, total: int | None, done: int, shard_size: int, engine: str, address: str | None
) -> int:
    """``workers``, at most one a shard left to embed (when the inputs' size is known) and, on this machine, one a
    CPU core: each worker loads the model, and one without a shard only costs its load."""
    if total is not None:
        workers = min(workers, max(1, math.ceil(max(total - done, 0) / shard_size)))
    if engine == "local" or address is None:
        workers = min(workers, os.cpu_count() or 1)
    return max(1, workers)


def _remove_leftovers(folder: Path, finished: int) -> None:
    """Remove what a stopped run left past its finished shards: temporary files, shards it had not recorded."""
    for entry in folder.iterdir():
        match = _SHARD_FILE.match(entry.name)
        if _LEFTOVER.match(entry.name) or (match and int(match.group(1)) >= finished):
            with contextlib.suppress(OSError):
                entry.unlink()
