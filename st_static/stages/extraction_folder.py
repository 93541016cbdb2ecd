"""Reading back a finished extraction (or completion) folder, checked whole.

The extraction and the completion stages write the same layout::

    model/                 SentenceTransformer: StaticWordAverage over the raw (teacher-dim) table + Normalize
    targets/sentences.txt  the encoded sentences, one per line
    targets/teacher_embeddings.npy   their teacher sentence embeddings (float32), the distillation targets
    pca_sentences.txt      a uniform corpus sample for fitting the PCA
    stats.json             timings, coverage, memory
"""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from st_static.errors import StStaticError


@dataclass
class ExtractionStage:
    """Paths of a finished extraction folder."""

    folder: Path
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def model_path(self) -> Path:
        return self.folder / "model"

    @property
    def sentences_path(self) -> Path:
        return self.folder / "targets" / "sentences.txt"

    @property
    def targets_path(self) -> Path:
        return self.folder / "targets" / "teacher_embeddings.npy"

    @property
    def pca_sentences_path(self) -> Path:
        return self.folder / "pca_sentences.txt"

    def sentences(self) -> list[str]:
        return self.sentences_path.read_text(encoding="utf-8").split("\n")[:-1]

    def teacher_embeddings(self) -> np.ndarray:
        return np.load(self.targets_path, mmap_mode="r")

    def pca_sentences(self) -> list[str]:
        return self.pca_sentences_path.read_text(encoding="utf-8").split("\n")[:-1]

    @classmethod
    def open(cls, folder: str | os.PathLike[str]) -> ExtractionStage:
        """Open a finished extraction (or completion) folder, checking that its files are whole.

        Raises:
            FileNotFoundError: If it has no ``stats.json`` (not finished).
            StageFolderError: Naming the folder and the file, if a file is unreadable, truncated or empty, or the
                sentences and their embeddings disagree.
        """
        folder = Path(folder)
        stats_path = folder / "stats.json"
        if not stats_path.is_file():
            raise FileNotFoundError(f"{folder} is not a finished extraction folder (no stats.json).")
        stage = cls(folder=folder, stats=_read_stage_file(folder, "stats.json", _read_stats))
        stage.check()
        return stage

    def check(self) -> None:
        """Raise :class:`StageFolderError` unless the targets, their sentences and the PCA sample are whole."""
        embeddings = _read_stage_file(self.folder, "targets/teacher_embeddings.npy", _read_embeddings)
        sentences = _read_stage_file(self.folder, "targets/sentences.txt", _count_lines)
        if sentences != embeddings.shape[0]:
            raise StageFolderError(
                self.folder,
                "targets/sentences.txt",
                f"{sentences} sentences for {embeddings.shape[0]} rows of targets/teacher_embeddings.npy",
            )
        if _read_stage_file(self.folder, "pca_sentences.txt", _count_lines) == 0:
            raise StageFolderError(self.folder, "pca_sentences.txt", "it is empty")
        if not (self.model_path / "modules.json").is_file():
            raise StageFolderError(self.folder, "model/modules.json", "it is missing")


class StageFolderError(StStaticError, ValueError):
    """A finished stage folder of a build's work folder whose files are not whole (truncated, edited, emptied)."""

    def __init__(self, folder: Path, file_name: str, reason: str) -> None:
        super().__init__(
            f"{folder}: the stage folder is corrupt ({file_name}: {reason}); delete it ({folder.name}) and run again: "
            "the build recomputes it."
        )


def _read_stage_file(folder: Path, file_name: str, read: Callable[[Path], Any]) -> Any:
    try:
        return read(folder / file_name)
    except StageFolderError:
        raise
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise StageFolderError(folder, file_name, f"{type(error).__name__}: {error}") from error


def _read_stats(path: Path) -> dict[str, Any]:
    stats = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(stats, dict):
        raise ValueError(f"a JSON {type(stats).__name__}, not an object")
    return stats


def _read_embeddings(path: Path) -> np.ndarray:
    embeddings = np.load(path, mmap_mode="r", allow_pickle=False)
    if embeddings.ndim != 2 or not np.issubdtype(embeddings.dtype, np.floating):
        raise ValueError(f"an array of shape {embeddings.shape} and type {embeddings.dtype}, not a float matrix")
    return embeddings


def _count_lines(path: Path) -> int:
    """Lines of a UTF-8 text file (each ends with a newline), decoded in chunks."""
    decoder, lines = codecs.getincrementaldecoder("utf-8")(), 0
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 24):
            decoder.decode(chunk)
            lines += chunk.count(b"\n")
    decoder.decode(b"", final=True)
    return lines
