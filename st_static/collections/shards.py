"""Vector shards: the precision vectors are stored in (sentence-transformers' ``quantize_embeddings``), and one shard
written whole or not at all (Parquet: row names and vectors in one file; ``.npy``: the vectors and their row names,
``SHARD.ids.npy``) or read back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from st_static.collections.inputs import RowBatch
from st_static.files import write_file_atomically

PRECISIONS = ("float32", "float16", "int8", "ubinary")
OUTPUT_FORMATS = ("parquet", "npy")
STORED_DTYPES = {"float32": np.float32, "float16": np.float16, "int8": np.int8, "ubinary": np.uint8}
LINE_IDS_DTYPE = np.dtype([("file", "<i4"), ("line", "<i8")])
"""The row names of an ``.npy`` shard without ``--id-column``: the input's index (``manifest.json``) and line."""


def stored_width(dim: int, precision: str) -> int:
    """Values stored per vector: ``dim``, or ``ceil(dim / 8)`` bytes of packed bits for ``ubinary``."""
    return (dim + 7) // 8 if precision == "ubinary" else dim


CALIBRATION_ROWS = 100
"""Distinct rows the first shard needs for int8 ranges of its own (each dimension's minimum and maximum)."""


def calibration_ranges(vectors: np.ndarray) -> np.ndarray:
    """The int8 ``ranges`` (``(2, dim)``, as ``quantize_embeddings`` takes them) for vectors like ``vectors``.

    With at least :data:`CALIBRATION_ROWS` distinct rows, each dimension's minimum and maximum (what
    ``quantize_embeddings`` computes from calibration embeddings). With fewer (one row, identical rows) those ranges
    would be empty or fit only these rows, and every later row would be clipped to them: then ``[-r, r]`` in every
    dimension, ``r`` the largest row norm (1 for unit vectors), which holds every component of vectors of that norm.
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    if len(np.unique(vectors, axis=0)) >= CALIBRATION_ROWS:
        return np.vstack((vectors.min(axis=0), vectors.max(axis=0))).astype(np.float32)
    largest = float(np.linalg.norm(vectors, axis=1).max()) if len(vectors) else 0.0
    bound = largest if np.isfinite(largest) and largest > 0 else 1.0
    return np.vstack((np.full(vectors.shape[1], -bound), np.full(vectors.shape[1], bound))).astype(np.float32)


def quantize(vectors: np.ndarray, precision: str, ranges: np.ndarray | None = None) -> np.ndarray:
    """``vectors`` (float32) in the stored ``precision`` (int8 needs ``ranges``: :func:`calibration_ranges`)."""
    if precision == "float32":
        return np.ascontiguousarray(vectors, dtype=np.float32)
    if precision == "float16":
        return vectors.astype(np.float16)
    from sentence_transformers.util import quantize_embeddings

    if precision == "int8" and ranges is None:
        raise ValueError("int8 vectors need the calibration ranges of the first shard.")
    return quantize_embeddings(vectors, precision, ranges=ranges)  # type: ignore[return-value]


def dequantize(stored: np.ndarray, precision: str, dim: int, ranges: np.ndarray | None = None) -> np.ndarray:
    """Float32 vectors back from stored ones (int8: the middle of each bucket; ubinary: +-1 per bit), for search."""
    if precision in ("float32", "float16"):
        return stored.astype(np.float32)
    if precision == "ubinary":
        bits = np.unpackbits(stored, axis=1, count=dim)
        return bits.astype(np.float32) * 2.0 - 1.0
    if ranges is None:
        raise ValueError("int8 vectors need the ranges recorded in manifest.json.")
    starts = ranges[0].astype(np.float32)
    steps = (ranges[1] - ranges[0]).astype(np.float32) / 255
    middles = starts + (stored.astype(np.float32) + 128.5) * np.where(steps == 0, 1, steps)
    return np.where(steps == 0, starts, middles).astype(np.float32)  # an empty range holds its one value


def shard_name(index: int, output_format: str) -> str:
    """The file name of shard ``index``: ``shard-000000.parquet`` / ``shard-000000.npy``."""
    return f"shard-{index:06d}.{output_format}"


def ids_name(index: int) -> str:
    """The row names of an ``.npy`` shard: ``shard-000000.ids.npy``."""
    return f"shard-{index:06d}.ids.npy"


@dataclass
class Shard:
    """One shard read back: each row's name (its ``--id-column`` value, else ``FILE:LINE``) and the stored vectors."""

    ids: list[str]
    vectors: np.ndarray


def write_shard(
    folder: Path, index: int, batch: RowBatch, vectors: np.ndarray, output_format: str, input_names: Sequence[str]
) -> None:
    """Write shard ``index`` of ``folder``: each file written whole under a temporary name, then renamed."""
    if output_format == "npy":
        if batch.ids is not None:
            ids = np.array(batch.ids, dtype=str) if batch.ids else np.zeros(0, dtype="<U1")
        else:
            ids = np.empty(len(batch), dtype=LINE_IDS_DTYPE)
            ids["file"], ids["line"] = batch.files, batch.lines
        _write_npy(folder / ids_name(index), ids)
        _write_npy(folder / shard_name(index, "npy"), vectors)  # last: the shard is whole once its vectors are
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns: dict[str, pa.Array] = {}
    if batch.ids is not None:
        columns["id"] = pa.array(batch.ids, type=pa.string())
    else:
        columns["file"] = pa.DictionaryArray.from_arrays(pa.array(batch.files), pa.array(list(input_names)))
        columns["line"] = pa.array(batch.lines)
    columns["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), vectors.shape[1])
    table = pa.table(columns)
    write_file_atomically(
        folder / shard_name(index, "parquet"),
        lambda temporary: pq.write_table(table, temporary, use_dictionary=["file"], compression="zstd"),
    )


def _write_npy(path: Path, array: np.ndarray) -> None:
    def write(temporary: Path) -> None:
        with temporary.open("wb") as handle:
            np.save(handle, array, allow_pickle=False)

    write_file_atomically(path, write)


def shard_problem(shard: Shard, width: int, precision: str) -> str | None:
    """What is wrong with a shard read back for a folder of ``width`` values per vector in ``precision`` (a shard
    copied in from another folder: another dimension or precision, row names that do not match its vectors), or
    ``None``."""
    vectors = shard.vectors
    if vectors.ndim != 2 or vectors.shape[1] != width:
        return f"holds vectors of shape {tuple(vectors.shape)}, where the folder's have {width} values"
    if vectors.dtype != STORED_DTYPES[precision]:
        return f"holds {vectors.dtype} vectors, where the folder stores {precision} ones"
    if len(shard.ids) != len(vectors):
        return f"names {len(shard.ids)} rows for {len(vectors)} vectors"
    return None


def read_shard(folder: Path, index: int, output_format: str, input_names: Sequence[str]) -> Shard:
    """Shard ``index`` of ``folder`` (no pickle is ever loaded)."""
    if output_format == "npy":
        vectors = np.load(folder / shard_name(index, "npy"), allow_pickle=False)
        ids = np.load(folder / ids_name(index), allow_pickle=False)
        if ids.dtype.names:
            return Shard([f"{input_names[file]}:{line}" for file, line in ids.tolist()], vectors)
        return Shard(ids.tolist(), vectors)
    import pyarrow.parquet as pq

    table = pq.read_table(folder / shard_name(index, "parquet"))
    column = table.column("vector").combine_chunks()
    vectors = column.values.to_numpy(zero_copy_only=False).reshape(len(column), -1)
    if "id" in table.column_names:
        return Shard(table.column("id").to_pylist(), vectors)
    files, lines = table.column("file").to_pylist(), table.column("line").to_pylist()
    return Shard([f"{file}:{line}" for file, line in zip(files, lines, strict=True)], vectors)
