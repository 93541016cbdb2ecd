"""Texts -> a model's vectors, each text encoded once, for the benchmarks that score frozen vectors.

:func:`encode_in_chunks` is the on-disk cache of a slow encoder (a teacher): the texts, shortest first, in chunks of
:data:`CHUNK` saved atomically in ``WORK/NAME-DIGEST/``, so an interrupted pass resumes at its last chunk and a rerun
encodes nothing. :class:`TextVectors` keeps every text's row in memory and, given a ``work`` folder, reads and writes
through that cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import log, to_numpy

CHUNK = 512
"""Texts encoded between two saved chunks."""


def encode(model: Any, texts: Sequence[str], prompt: str | None, batch_size: int, normalize: bool) -> np.ndarray:
    """``model.encode`` of ``texts`` as a float32 array (unit rows when ``normalize``)."""
    vectors = model.encode(
        list(texts), prompt=prompt, batch_size=batch_size, normalize_embeddings=normalize, convert_to_tensor=True
    )
    return to_numpy(vectors).astype(np.float32)


def encode_in_chunks(
    model: Any,
    texts: Sequence[str],
    work: Path,
    label: str,
    *,
    prompt: str | None = None,
    batch_size: int = 32,
    normalize: bool = True,
) -> tuple[np.ndarray, float]:
    """The vectors of ``texts`` (in their order), encoded shortest first in chunks cached in ``work``.

    Args:
        model: What encodes: a loaded model, or a folder that ``SentenceTransformer`` loads on the first chunk to
            encode (so a finished cache never loads it).
        texts: The texts; the cache is keyed by them, ``label``, ``prompt`` and ``normalize``.
        work: The folder that holds the chunks (``NAME-DIGEST/chunk-NNNNN.npy``; NAME: the last part of ``label``,
            else ``texts``).
        label: Names the model in the key (a folder's resolved path, a repo id; may be empty).

    Returns:
        The vectors and the seconds this call spent encoding (0 when every chunk was cached).
    """
    key = json.dumps([label, prompt, normalize, list(texts)], ensure_ascii=False)
    name = Path(label).name or "texts"
    folder = work / f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    folder.mkdir(parents=True, exist_ok=True)
    order = sorted(range(len(texts)), key=lambda index: len(texts[index]))
    parts: list[np.ndarray] = []
    seconds, encoded = 0.0, 0
    for start in range(0, len(order), CHUNK):
        path = folder / f"chunk-{start // CHUNK:05d}.npy"
        if not path.is_file():
            if isinstance(model, str | os.PathLike):
                from sentence_transformers import SentenceTransformer

                model = SentenceTransformer(str(model), device="cpu")
            started = time.perf_counter()
            batch = [texts[index] for index in order[start : start + CHUNK]]
            partial = path.with_suffix(".partial.npy")
            np.save(partial, encode(model, batch, prompt, batch_size, normalize))
            os.replace(partial, path)
            seconds += time.perf_counter() - started
            encoded += len(batch)
            log(f"{name}: {start + len(batch):,}/{len(texts):,} texts ({encoded / seconds:.1f} texts/s)")
        parts.append(np.load(path))
    vectors = np.empty((len(texts), parts[0].shape[1] if parts else 0), dtype=np.float32)
    if parts:
        vectors[order] = np.concatenate(parts)
    return vectors, seconds


class TextVectors:
    """Texts -> rows of a frozen model, each text encoded once; with ``work``, through :func:`encode_in_chunks`."""

    def __init__(
        self,
        model: Any,
        *,
        prompt: str | None = None,
        normalize: bool = True,
        batch_size: int = 1024,
        work: Path | None = None,
        label: str = "",
    ) -> None:
        self.model, self.prompt, self.normalize, self.batch_size = model, prompt, normalize, batch_size
        self.work, self.label = work, label
        self.rows: dict[str, np.ndarray] = {}

    def add(self, texts: Sequence[str]) -> float:
        """Encode the texts not seen yet; return the seconds spent encoding."""
        new = [text for text in dict.fromkeys(texts) if text not in self.rows]
        if not new:
            return 0.0
        if self.work is not None:
            vectors, seconds = encode_in_chunks(
                self.model,
                new,
                self.work,
                self.label,
                prompt=self.prompt,
                batch_size=self.batch_size,
                normalize=self.normalize,
            )
        else:
            started = time.perf_counter()
            vectors = encode(self.model, new, self.prompt, self.batch_size, self.normalize)
            seconds = time.perf_counter() - started
        self.rows.update(zip(new, vectors, strict=True))
        return seconds

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        """The rows of ``texts``, in order (encoding those not seen yet)."""
        self.add(texts)
        return np.stack([self.rows[text] for text in texts])
