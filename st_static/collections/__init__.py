"""Collections of texts on disk: streamed to vector shards (``embed_files``, ``st-static embed``), resumably, in one
process, several or on Ray, read back (``EmbeddingsFolder``) and mined for neighbours and near-duplicates.

The public names are imported on first use, so importing the package loads neither torch nor pyarrow.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_PUBLIC = {
    "embed_files": "st_static.collections.job",
    "EmbedResult": "st_static.collections.job",
    "EmbeddingsFolder": "st_static.collections.folder",
    "FastEncoder": "st_static.collections.encoding",
    "Collection": "st_static.collections.collection",
    "load_collection": "st_static.collections.collection",
    "nearest_neighbours": "st_static.collections.mining",
    "near_duplicate_pairs": "st_static.collections.mining",
    "duplicate_groups": "st_static.collections.mining",
    "InputError": "st_static.collections.inputs",
    "EmbeddingsFolderError": "st_static.collections.manifest",
}

if TYPE_CHECKING:
    from st_static.collections.collection import Collection, load_collection
    from st_static.collections.encoding import FastEncoder
    from st_static.collections.folder import EmbeddingsFolder
    from st_static.collections.inputs import InputError
    from st_static.collections.job import EmbedResult, embed_files
    from st_static.collections.manifest import EmbeddingsFolderError
    from st_static.collections.mining import duplicate_groups, near_duplicate_pairs, nearest_neighbours


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'st_static.collections' has no attribute {name!r}")


__all__ = [
    "Collection",
    "EmbedResult",
    "EmbeddingsFolder",
    "EmbeddingsFolderError",
    "FastEncoder",
    "InputError",
    "duplicate_groups",
    "embed_files",
    "load_collection",
    "near_duplicate_pairs",
    "nearest_neighbours",
]
