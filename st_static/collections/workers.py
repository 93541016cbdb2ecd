"""Embedding shards: one shard's work (encode, store, write) in any process, and a pool of processes on one machine
that each load the model once and give the finished shards back in order."""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.pool import AsyncResult
from pathlib import Path

import numpy as np

from st_static.collections.inputs import Position, RowBatch
from st_static.collections.manifest import Manifest
from st_static.collections.shards import calibration_ranges, quantize, write_shard


@dataclass(frozen=True)
class ShardSettings:
    """What each process needs to turn a batch of rows into a shard file."""

    folder: Path
    output_format: str
    precision: str
    truncate_dim: int | None
    input_names: tuple[str, ...]


@dataclass(frozen=True)
class FinishedShard:
    """A shard written: its index, its rows and the input position after them."""

    index: int
    rows: int
    end: Position


class ShardEmbedder:
    """Encodes batches of rows and writes them as shards (the model loaded once, where the embedder lives)."""

    def __init__(self, model: object, settings: ShardSettings) -> None:
        from st_static.collections.encoding import load_collection_model, text_encoder

        self.settings = settings
        self.model = load_collection_model(model)  # type: ignore[arg-type]
        self.embed = text_encoder(self.model, settings.truncate_dim)

    def __call__(self, index: int, batch: RowBatch, ranges: np.ndarray | None) -> FinishedShard:
        return self.write(index, batch, self.vectors(batch, ranges))

    def vectors(self, batch: RowBatch, ranges: np.ndarray | None) -> np.ndarray:
        """The batch's vectors in the stored precision."""
        return quantize(self.embed(batch.texts), self.settings.precision, ranges)

    def write(self, index: int, batch: RowBatch, vectors: np.ndarray) -> FinishedShard:
        """Write shard ``index`` (whole, or not at all)."""
        settings = self.settings
        write_shard(settings.folder, index, batch, vectors, settings.output_format, settings.input_names)
        return FinishedShard(index, len(batch), batch.end)


class InProcessShards:
    """Shards encoded in this process, each written by a thread while the next one is encoded (the writers of
    Parquet and numpy release the GIL); finished shards come back in order."""

    def __init__(self, embedder: ShardEmbedder) -> None:
        self.embedder = embedder
        self.writer = ThreadPoolExecutor(1, thread_name_prefix="st-static-shard-writer")
        self.pending: deque[Future[FinishedShard]] = deque()

    def submit(self, index: int, batch: RowBatch, ranges: np.ndarray | None) -> Iterator[FinishedShard]:
        """Encode shard ``index``, then yield the shard written meanwhile and start writing this one."""
        vectors = self.embedder.vectors(batch, ranges)
        yield from self.drain()
        self.pending.append(self.writer.submit(self.embedder.write, index, batch, vectors))

    def drain(self) -> Iterator[FinishedShard]:
        """The shard being written, once written."""
        while self.pending:
            yield self.pending.popleft().result()

    def close(self) -> None:
        """Wait for the writer thread (a shard file is renamed into place whole, or not at all)."""
        self.writer.shutdown(wait=True, cancel_futures=True)


_process_embedder: ShardEmbedder | BaseException | None = None


def _start_worker(model_reference: str, settings: ShardSettings) -> None:
    """Load the model once in a worker; a failure is kept and raised by the worker's first shard (a pool whose
    initializer raised would start new workers for ever)."""
    global _process_embedder
    import torch

    torch.set_num_threads(1)  # one core per worker: N workers use N cores
    try:
        _process_embedder = ShardEmbedder(model_reference, settings)
    except Exception as error:
        _process_embedder = error


def _embed_in_worker(index: int, batch: RowBatch, ranges: np.ndarray | None) -> FinishedShard:
    if isinstance(_process_embedder, BaseException):
        raise _process_embedder
    if _process_embedder is None:
        raise RuntimeError("The worker process has no model (its initializer did not run).")
    return _process_embedder(index, batch, ranges)


class ShardPool:
    """``workers`` processes (started fresh, not forked) that each load the model from ``model_reference`` once.

    :meth:`submit` queues a shard; :meth:`finished` hands back finished shards in order, holding at most
    ``workers + 1`` shards in flight so that memory stays flat.
    """

    def __init__(self, model_reference: str, settings: ShardSettings, workers: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.workers = workers
        self.pool = context.Pool(workers, initializer=_start_worker, initargs=(model_reference, settings))
        self.pending: deque[AsyncResult[FinishedShard]] = deque()

    def submit(self, index: int, batch: RowBatch, ranges: np.ndarray | None) -> Iterator[FinishedShard]:
        """Queue shard ``index``; yield the shards that had to finish first to make room (in order)."""
        self.pending.append(self.pool.apply_async(_embed_in_worker, (index, batch, ranges)))
        while len(self.pending) > self.workers:
            yield self.pending.popleft().get()

    def drain(self) -> Iterator[FinishedShard]:
        """Every queued shard, in order, as it finishes."""
        while self.pending:
            yield self.pending.popleft().get()

    def close(self) -> None:
        """Stop the processes (at once: a shard being written is under a temporary name until it is whole)."""
        self.pool.terminate()
        self.pool.join()


def embed_first_int8_shard(
    embedder: ShardEmbedder,
    manifest: Manifest,
    index: int,
    batch: RowBatch,
    settings: ShardSettings,
    record: Callable[[FinishedShard], None],
) -> None:
    """int8: the first shard's vectors give the calibration ranges (recorded before any shard uses them)."""
    floats = embedder.embed(batch.texts)
    ranges = calibration_ranges(floats)
    manifest.ranges = ranges.tolist()
    manifest.save(settings.folder)
    vectors = quantize(floats, "int8", ranges)
    write_shard(settings.folder, index, batch, vectors, settings.output_format, settings.input_names)
    record(FinishedShard(index, len(batch), batch.end))
