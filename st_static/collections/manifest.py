"""``manifest.json``, the index of an embeddings folder: the arguments that decide its vectors, the inputs, how the
vectors are stored, and how far the run got (finished shards, the input position after them), rewritten atomically
after each shard so that a rerun resumes there and a rerun with other arguments is refused."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from st_static.collections.inputs import Position
from st_static.errors import StStaticError
from st_static.files import write_json_atomically

MANIFEST_NAME = "manifest.json"
FORMAT = "st-static-embeddings"
FORMAT_VERSION = 1


class EmbeddingsFolderError(StStaticError, ValueError):
    """An embeddings folder is corrupt, unfinished where it must be finished, or was made with other arguments."""


def is_embeddings_folder(folder: Path) -> bool:
    """Whether ``folder`` holds an st-static embeddings run (its ``manifest.json`` names the format)."""
    try:
        document = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(document, dict) and document.get("format") == FORMAT


@dataclass
class Manifest:
    """An embeddings folder's index.

    Attributes:
        arguments: What decides the vectors and their layout (model, inputs, columns, precision, truncation, shard
            size, output format); a rerun must give the same.
        dim: Vector dimension; ``width``: values stored per vector (``ubinary``: bytes).
        ranges: The int8 calibration ranges (``(2, dim)``, from the first shard), else ``None``.
        shards: Finished shards, ``0 .. shards - 1``; ``rows``: the rows they hold; ``next``: the input position
            after them; ``complete``: the inputs are done.
    """

    arguments: dict[str, Any]
    dim: int
    width: int
    ranges: list[list[float]] | None = None
    shards: int = 0
    rows: int = 0
    next: Position = field(default_factory=Position)
    complete: bool = False

    @property
    def precision(self) -> str:
        return self.arguments["precision"]

    @property
    def output_format(self) -> str:
        return self.arguments["output_format"]

    @property
    def input_names(self) -> list[str]:
        return [item["name"] for item in self.arguments["inputs"]]

    def ranges_array(self) -> np.ndarray | None:
        return None if self.ranges is None else np.asarray(self.ranges, dtype=np.float32)

    def finish_shard(self, rows: int, end: Position) -> None:
        self.shards += 1
        self.rows += rows
        self.next = end

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "arguments": self.arguments,
            "vectors": {"dim": self.dim, "width": self.width, "precision": self.precision, "ranges": self.ranges},
            "progress": {
                "shards": self.shards,
                "rows": self.rows,
                "next": self.next.to_dict(),
                "complete": self.complete,
            },
        }

    def save(self, folder: Path) -> None:
        write_json_atomically(folder / MANIFEST_NAME, self.to_dict())

    @classmethod
    def load(cls, folder: Path) -> Manifest:
        """Read ``folder``'s manifest.

        Raises:
            EmbeddingsFolderError: If it is missing, not an embeddings manifest, newer than this st-static reads,
                or corrupt.
        """
        path = folder / MANIFEST_NAME
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise EmbeddingsFolderError(f"{folder} is not an embeddings folder (no {MANIFEST_NAME}).") from None
        except (OSError, ValueError, RecursionError) as error:
            raise EmbeddingsFolderError(f"{path} cannot be read ({error}).") from None
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise EmbeddingsFolderError(f"{path} is not the manifest of st-static embeddings.")
        if document.get("version") != FORMAT_VERSION:
            raise EmbeddingsFolderError(
                f"{path} has format version {document.get('version')}; this st-static reads {FORMAT_VERSION} "
                "(upgrade st-static)."
            )
        try:
            vectors, progress = document["vectors"], document["progress"]
            return cls(
                arguments=dict(document["arguments"]),
                dim=int(vectors["dim"]),
                width=int(vectors["width"]),
                ranges=vectors["ranges"],
                shards=int(progress["shards"]),
                rows=int(progress["rows"]),
                next=Position.from_dict(progress["next"]),
                complete=bool(progress["complete"]),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise EmbeddingsFolderError(f"{path} is corrupt (bad or missing {error}).") from None


def differences(recorded: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """What differs between two runs' arguments, one phrase each (``precision: float16 there, int8 now``).

    The model is compared by its fingerprint and the inputs by their resolved paths and contents, never by how they
    were spelt (``tiny``, ``./tiny``, an absolute path, another working folder)."""
    found = []
    for key in sorted(set(recorded) | set(current)):
        before, now = recorded.get(key), current.get(key)
        if before == now:
            continue
        if key == "inputs" and isinstance(before, list) and isinstance(now, list):
            found.extend(_input_differences(before, now))
        elif key == "model":
            if _model_sha256(before) is None or _model_sha256(before) != _model_sha256(now):
                found.append(f"model: {_model_name(before)} there, {_model_name(now)} now (or its weights changed)")
        else:
            found.append(f"{key}: {before!r} there, {now!r} now")
    return found


def _model_sha256(model: Any) -> str | None:
    return model.get("sha256") if isinstance(model, dict) else None


def _model_name(model: Any) -> str:
    return str(model.get("name")) if isinstance(model, dict) else repr(model)


def _input_differences(before: list[dict[str, Any]], now: list[dict[str, Any]]) -> list[str]:
    if [item.get("path") for item in before] != [item.get("path") for item in now]:
        return [f"inputs: {[item.get('name') for item in before]} there, {[item.get('name') for item in now]} now"]
    found = []
    for old, new in zip(before, now, strict=True):
        changed = [key for key in sorted((set(old) | set(new)) - {"name"}) if old.get(key) != new.get(key)]
        if changed == ["sha256"]:  # a stream (standard input, a pipe): compared by its digest
            what = "standard input" if new.get("path") == "-" else f"the pipe {new.get('name')}"
            found.append(
                f"{what} gives other texts than the run read"
                + ("" if old.get("sha256") else " (or the same: the run recorded no digest of them)")
            )
        elif changed:
            found.append(f"input {new.get('name')}: its {', '.join(changed)} changed since the run started")
    return found
