"""The embedding job on Ray: the driver plans the shards (where each starts in the inputs), Ray Data's
``map_batches`` runs them on a pool of actors that each load the model once, read their rows and write their shard,
and the driver records finished shards in order. The shards are the local engine's, so either engine resumes the
other's run. On a cluster, the model, the inputs and the output folder must be at paths every node sees."""

from __future__ import annotations

import contextlib
import socket
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from st_static.collections.encoding import ModelLike, model_reference
from st_static.collections.inputs import InputError, InputFile, OptionError, Position
from st_static.collections.manifest import Manifest
from st_static.collections.readers import RowReader
from st_static.collections.workers import FinishedShard, ShardEmbedder, ShardSettings, embed_first_int8_shard
from st_static.errors import MissingExtraError

CONNECT_SECONDS = 5.0
"""How long the check of ``--address`` waits for the cluster's port (Ray itself retries for minutes)."""
LOCAL_OBJECT_STORE_BYTES = 256 * 1024**2
"""The object store of a local Ray: only plans and shard records go through it (shards are written by the actors)."""


def import_ray() -> ModuleType:
    """The ``ray`` module with Ray Data.

    Raises:
        MissingExtraError: If Ray is not installed (``pip install "st-static[ray]"``).
    """
    try:
        import ray
        import ray.data
    except ImportError as error:
        raise MissingExtraError(
            'The Ray engine (--engine ray) needs Ray Data: pip install "st-static[ray]".'
        ) from error
    return ray


def check_ray(address: str | None) -> None:
    """Check, before any model loads, that Ray Data is installed and that the cluster at ``address`` (``host:port``
    or ``ray://host:port``; ``auto`` and ``local`` are left to Ray) accepts connections.

    Raises:
        MissingExtraError: If Ray is not installed.
        OptionError: If ``address`` is malformed or nothing answers there.
    """
    import_ray()
    if address is None or address in ("auto", "local"):
        return
    host, separator, port = address.removeprefix("ray://").rpartition(":")
    if not separator or not host or not port.isdigit():
        raise OptionError(f"--address {address!r} is not HOST:PORT (or ray://HOST:PORT) of a Ray cluster's head.")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_SECONDS):
            pass
    except (OSError, OverflowError) as error:
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        raise OptionError(
            f"Cannot reach the Ray cluster at {address} ({reason}); check --address (the head node's HOST:PORT), or "
            "leave it out for a local Ray."
        ) from None


@dataclass(frozen=True)
class PlannedShard:
    """A shard to embed: its index, where its rows start in the inputs and how many there are."""

    index: int
    start: Position
    rows: int


def plan_shards(reader: RowReader, start: Position, shard_size: int, first_index: int) -> Iterator[PlannedShard]:
    """The shards from ``start`` on, found by reading the inputs once (rows are read, not embedded)."""
    index = first_index
    for batch in reader.batches(start, shard_size):
        yield PlannedShard(index, start, len(batch))
        start = batch.end
        index += 1


class RayShardEmbedder:
    """A Ray Data actor: loads the model once, then reads, embeds and writes the planned shards it is given."""

    def __init__(
        self,
        model: str,
        settings: ShardSettings,
        inputs: list[InputFile],
        column: str | None,
        id_column: str | None,
        ranges: np.ndarray | None,
    ) -> None:
        self.embedder = ShardEmbedder(model, settings)
        self.reader = RowReader(inputs, column, id_column)
        self.ranges = ranges

    def __call__(self, planned: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        done: dict[str, list[int]] = {"index": [], "rows": [], "file": [], "offset": [], "line": []}
        for index, file, offset, line, rows in zip(
            *(planned[key].tolist() for key in ("index", "file", "offset", "line", "rows")), strict=True
        ):
            batch = next(self.reader.batches(Position(file, offset, line), rows))
            if len(batch) != rows:
                raise InputError(f"Shard {index}: expected {rows} rows, read {len(batch)}; did an input change?")
            shard = self.embedder.write(index, batch, self.embedder.vectors(batch, self.ranges))
            for key, value in zip(done, (index, shard.rows, *shard.end.to_dict().values()), strict=True):
                done[key].append(value)
        return {key: np.asarray(values, dtype=np.int64) for key, values in done.items()}


def embed_on_ray(
    loaded: ModelLike,
    given: ModelLike,
    manifest: Manifest,
    reader: RowReader,
    settings: ShardSettings,
    workers: int,
    address: str | None,
    record: Callable[[FinishedShard], None],
) -> None:
    """Embed the shards after the manifest's last finished one on Ray (a local Ray with ``workers`` CPUs, or the
    cluster at ``address``), recording them in order.

    Raises:
        MissingExtraError: If Ray is not installed.
        OptionError: For a model in memory on a cluster (give its folder, which every node must see).
        InputError: For a bad row, after the shards before it are written.
    """
    ray = import_ray()
    if address is not None and not isinstance(given, str | Path):
        raise OptionError("On a Ray cluster (--address), give the model as a folder every node sees, or a Hub id.")
    shard_size = manifest.arguments["shard_size"]
    planned: list[PlannedShard] = []
    bad_row: InputError | None = None
    try:
        for shard in plan_shards(reader, manifest.next, shard_size, manifest.shards):
            planned.append(shard)
    except InputError as error:  # embed the shards before the bad row, then report it
        bad_row = error
    if planned and settings.precision == "int8" and manifest.ranges is None:
        first = planned.pop(0)
        batch = next(reader.batches(first.start, first.rows))
        embed_first_int8_shard(ShardEmbedder(loaded, settings), manifest, first.index, batch, settings, record)
    with contextlib.ExitStack() as stack:
        if planned:
            saved = stack.enter_context(tempfile.TemporaryDirectory(prefix="st-static-model-"))
            arguments = {
                "model": model_reference(given, Path(saved)),
                "settings": settings,
                "inputs": reader.inputs,
                "column": reader.column,
                "id_column": reader.id_column,
                "ranges": manifest.ranges_array(),
            }
            stack.enter_context(_ray_session(ray, address, workers))
            for shard in _run(ray, planned, arguments, workers):
                record(shard)
    if bad_row is not None:
        raise bad_row


@contextlib.contextmanager
def _ray_session(ray: ModuleType, address: str | None, workers: int) -> Iterator[None]:
    """Ray as it is when already started; else a local Ray with ``workers`` CPUs, or the cluster at ``address``,
    shut down afterwards."""
    if ray.is_initialized():
        yield
        return
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if address is None:
        options.update(num_cpus=workers, object_store_memory=LOCAL_OBJECT_STORE_BYTES)
    try:
        ray.init(address=address, **options)
    except (ConnectionError, TimeoutError) as error:
        raise OptionError(f"Cannot connect to the Ray cluster at {address or 'a local Ray'} ({error}).") from None
    try:
        yield
    finally:
        ray.shutdown()


def _run(
    ray: ModuleType, planned: list[PlannedShard], arguments: dict[str, Any], workers: int
) -> Iterator[FinishedShard]:
    """Run the planned shards with ``map_batches`` on ``workers`` actors; yield them in order as they finish."""
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    items = [{"index": shard.index, "rows": shard.rows, **shard.start.to_dict()} for shard in planned]
    dataset = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
        RayShardEmbedder,
        batch_size=1,
        compute=ray.data.ActorPoolStrategy(size=workers),
        num_cpus=1,
        fn_constructor_kwargs=arguments,
    )
    finished: dict[int, FinishedShard] = {}
    expected = planned[0].index
    for row in dataset.iter_rows():
        end = Position(int(row["file"]), int(row["offset"]), int(row["line"]))
        finished[int(row["index"])] = FinishedShard(int(row["index"]), int(row["rows"]), end)
        while expected in finished:
            yield finished.pop(expected)
            expected += 1
