"""Measure a model's encoding speed and record it in the saved model, where its card reads it."""

from __future__ import annotations

import gc
import json
import os
import platform
import time
from collections.abc import Sequence
from pathlib import Path

from sentence_transformers import SentenceTransformer

from st_static.files import write_text_atomically
from st_static.model.metadata import ModelMetadata, SpeedRecord
from st_static.model.static_word_average import CONFIG_FILE_NAME, ModelFolderError


def machine_description() -> str:
    """The CPU model and the number of logical cores, e.g. ``AMD EPYC 9B14, 2 logical cores``."""
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return f"{cpu}, {os.cpu_count()} logical cores"


def measure_speed(
    model: SentenceTransformer,
    texts: Sequence[str],
    batch_size: int = 1024,
    repeats: int = 3,
    description: str | None = None,
) -> SpeedRecord:
    """Sentences per second of ``model.encode`` on ``texts``: the best of ``repeats`` runs after a warm-up batch.

    Args:
        model: Any ``SentenceTransformer``.
        texts: The texts to encode (e.g. 20,000 corpus lines).
        batch_size: ``encode``'s batch size.
        repeats: Timed runs; the fastest counts.
        description: What the texts are (e.g. ``"the first 20,000 lines of en.txt"``); default: their number.

    Returns:
        The record's ``sentences_per_second``, ``texts`` (what was encoded, in words) and ``machine``.

    Raises:
        ValueError: If ``texts`` is empty or ``repeats`` is below 1.
    """
    if not texts:
        raise ValueError("Speed needs at least one text to encode.")
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}.")
    texts = list(texts)
    model.encode(texts[:batch_size], batch_size=batch_size)
    timings = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        model.encode(texts, batch_size=batch_size)
        timings.append(time.perf_counter() - start)
    return SpeedRecord(
        sentences_per_second=len(texts) / min(timings),
        texts=f"{description or f'{len(texts):,} texts'} (SentenceTransformer.encode, batch {batch_size}, "
        f"best of {repeats} after a warm-up batch)",
        machine=machine_description(),
    )


def record_speed(folder: str | os.PathLike[str], speed: SpeedRecord) -> None:
    """Store ``speed`` as the metadata's ``speed`` in the saved model's ``st_static_config.json`` (atomically).

    Raises:
        ModelFolderError: If the folder has no readable ``st_static_config.json``, or its metadata holds a known
            key of the wrong type.
    """
    path = Path(folder) / CONFIG_FILE_NAME
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ModelFolderError(f"{folder}: cannot read {CONFIG_FILE_NAME} ({error}).") from error
    if not isinstance(config, dict):
        raise ModelFolderError(f"{folder}: {CONFIG_FILE_NAME} is not a JSON object.")
    metadata = ModelMetadata.from_dict(config.get("metadata"), source=f"{folder}: {CONFIG_FILE_NAME}")
    metadata.speed = speed
    config["metadata"] = metadata.to_dict()
    text = json.dumps(config, indent=2, sort_keys=True)
    write_text_atomically(path, text)
