"""``config.json`` for model2vec: a saved st-static folder also loads in ``model2vec.StaticModel`` (no torch).

model2vec's numpy-only ``StaticModel.from_pretrained(folder)`` reads ``config.json``, ``tokenizer.json`` and the
``embeddings`` tensor of ``model.safetensors`` (with ``mapping`` and per-token ``weights`` when present, as the
compact storage formats write them). It averages the vectors of a text's tokens, leaving out ``[UNK]``; an
st-static table gives every other dropped token the zero row, so that mean points the same way as ours, and
with ``normalize: true`` model2vec returns exactly the saved pipeline's unit vectors. ``max_length: null`` turns
off model2vec's default truncation to 512 tokens (and to 512 times the median token length in characters).

Two kinds of folder cannot give their vectors there, and get no ``config.json`` (model2vec then refuses them):
an ``int8-column`` table, whose per-dimension scale is applied by a ``Dense`` module after the table, and an
ensemble, whose ``BlockNormalize`` normalises each member's block separately.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from st_static.files import write_text_atomically

if TYPE_CHECKING:
    from st_static.model.metadata import ModelMetadata

MODEL2VEC_CONFIG_FILE_NAME = "config.json"


def model2vec_incompatibility(metadata: ModelMetadata, has_column_scale: bool) -> str | None:
    """Why model2vec cannot reproduce a table's vectors, or ``None`` when it can.

    Args:
        metadata: The module's metadata (``ensemble`` marks an ensemble).
        has_column_scale: Whether the saved table holds int8 codes with a per-dimension scale (``int8-column``).
    """
    if metadata.ensemble and not metadata.ensemble.folded:
        return (
            "an ensemble normalises each member's block of the vector separately (BlockNormalize), a step "
            "model2vec does not have"
        )
    if has_column_scale:
        return (
            "an int8-column table applies its per-dimension scale in a Dense module after the table, and "
            "model2vec scales whole rows only; quantise with int8-row for a table that model2vec reads"
        )
    return None


def model2vec_config(embedding_dim: int) -> dict[str, Any]:
    """The ``config.json`` that makes model2vec encode like the saved pipeline (table + ``Normalize``)."""
    return {
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "hidden_dim": embedding_dim,
        "normalize": True,
        "max_length": None,
    }


def write_model2vec_config(
    folder: str | Path, embedding_dim: int, metadata: ModelMetadata, has_column_scale: bool = False
) -> None:
    """Write ``config.json`` for model2vec into a model folder, or remove a stale one if model2vec cannot load it.

    Args:
        folder: The folder the table was saved to.
        embedding_dim: The table's dimension.
        metadata: The module's metadata.
        has_column_scale: Whether the saved table is ``int8-column``.
    """
    path = Path(folder) / MODEL2VEC_CONFIG_FILE_NAME
    if model2vec_incompatibility(metadata, has_column_scale) is not None:
        path.unlink(missing_ok=True)
        return
    write_text_atomically(path, json.dumps(model2vec_config(embedding_dim), indent=2, sort_keys=True))
