"""An embeddings folder read back: its manifest, its finished shards in order, or every vector at once."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from st_static.collections.manifest import MANIFEST_NAME, EmbeddingsFolderError, Manifest
from st_static.collections.shards import Shard, dequantize, read_shard, shard_problem


class EmbeddingsFolder:
    """The output of :func:`st_static.embed_files` (``st-static embed``).

    Example:
        >>> folder = EmbeddingsFolder("vectors")
        >>> ids, vectors = folder.load()  # float32, whatever the stored precision
        >>> for shard in folder.shards():  # or shard by shard, as stored
        ...     print(len(shard.ids), shard.vectors.dtype)
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.manifest = Manifest.load(self.path)

    @property
    def rows(self) -> int:
        """Rows in the finished shards."""
        return self.manifest.rows

    @property
    def dim(self) -> int:
        return self.manifest.dim

    @property
    def precision(self) -> str:
        return self.manifest.precision

    @property
    def complete(self) -> bool:
        return self.manifest.complete

    def shards(self) -> Iterator[Shard]:
        """The finished shards in order, as stored (row names, then vectors in the stored precision)."""
        rows = 0
        for index in range(self.manifest.shards):
            try:
                shard = read_shard(self.path, index, self.manifest.output_format, self.manifest.input_names)
            except (OSError, ValueError) as error:
                raise EmbeddingsFolderError(f"{self.path}: shard {index} cannot be read ({error}).") from error
            rows += len(shard.ids)
            problem = shard_problem(shard, self.manifest.width, self.precision)
            if problem is None and rows > self.rows:
                problem = f"takes the rows past the {self.rows:,} that {MANIFEST_NAME} records"
            if problem is not None:
                raise EmbeddingsFolderError(
                    f"{self.path}: shard {index} {problem} (copied in from another folder?); embed again into a new "
                    "folder."
                )
            yield shard
        if rows != self.rows:
            raise EmbeddingsFolderError(
                f"{self.path}: the shards hold {rows:,} rows where {MANIFEST_NAME} records {self.rows:,} (a shard "
                "replaced?); embed again into a new folder."
            )

    def load(self, require_complete: bool = True, *, show_progress_bar: bool = False) -> tuple[list[str], np.ndarray]:
        """Every row's name and float32 vector (int8 and ubinary vectors turned back into floats, for search); with
        ``show_progress_bar``, one ``Loading vectors`` progress line.

        Raises:
            EmbeddingsFolderError: If the run is unfinished (unless ``require_complete`` is false) or a shard is
                unreadable.
        """
        if require_complete and not self.complete:
            raise EmbeddingsFolderError(
                f"{self.path} is unfinished ({self.rows:,} rows so far): run the same embed command again to finish it."
            )
        ids: list[str] = []
        vectors = np.empty((self.rows, self.dim), dtype=np.float32)
        start = 0
        ranges = self.manifest.ranges_array()
        with tqdm(
            total=self.rows,
            desc="Loading vectors",
            unit=" rows",
            unit_scale=True,
            mininterval=1.0,
            disable=not show_progress_bar,
        ) as progress:
            for shard in self.shards():
                vectors[start : start + len(shard.ids)] = dequantize(shard.vectors, self.precision, self.dim, ranges)
                ids.extend(shard.ids)
                start += len(shard.ids)
                progress.update(len(shard.ids))
        return ids, vectors
