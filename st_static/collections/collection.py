"""A collection in memory, for mining: the vectors of an embeddings folder, or texts read from files and encoded at
once with the fast path (their texts kept for the output)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from st_static.collections.encoding import ModelLike, load_collection_model, text_encoder
from st_static.collections.folder import EmbeddingsFolder
from st_static.collections.inputs import InputFile, OptionError, Position, resolve_inputs
from st_static.collections.manifest import is_embeddings_folder
from st_static.collections.readers import RowReader


@dataclass
class Collection:
    """Row names, float32 vectors, and the texts when they were read (``None`` for an embeddings folder)."""

    ids: list[str]
    vectors: np.ndarray
    texts: list[str] | None = None


def load_collection(
    inputs: Sequence[str | os.PathLike[str]],
    model: ModelLike | None = None,
    column: str | None = None,
    id_column: str | None = None,
    input_format: str | None = None,
) -> Collection:
    """An embeddings folder (``st-static embed``'s output), or text inputs encoded with ``model``.

    Raises:
        OptionError: Texts without a model, or a folder mixed with other inputs.
        InputError, EmbeddingsFolderError: As reading the inputs or the folder raises them.
    """
    folders = [item for item in inputs if Path(item).is_dir() and is_embeddings_folder(Path(item))]
    if folders:
        if len(inputs) > 1:
            raise OptionError("Give one embeddings folder, or text inputs (with --model), not both.")
        ids, vectors = EmbeddingsFolder(folders[0]).load()
        return Collection(ids, vectors)
    if model is None:
        raise OptionError(
            "The inputs are texts: give --model to embed them (or give the folder `st-static embed` wrote)."
        )
    files: list[InputFile] = resolve_inputs(list(inputs), input_format)
    reader = RowReader(files, column, id_column)
    texts: list[str] = []
    ids: list[str] = []
    for batch in reader.batches(Position(), 1 << 20):
        texts.extend(batch.texts)
        if batch.ids is not None:
            ids.extend(batch.ids)
        else:
            ids.extend(f"{files[file].name}:{line}" for file, line in zip(batch.files, batch.lines, strict=True))
    vectors = text_encoder(load_collection_model(model))(texts)
    return Collection(ids, vectors, texts)
