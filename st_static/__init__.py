"""st-static: static word embeddings distilled from any Sentence Transformer.

The public names are imported on first use, so ``import st_static`` (and the ``st-static`` command's ``--help``)
does not load torch.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

try:
    __version__ = version("st-static")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

_PUBLIC = {
    "StaticWordAverage": "st_static.model.static_word_average",
    "ModelFolderError": "st_static.errors",
    "StStaticError": "st_static.errors",
    "encode": "st_static.model.inference",
    "load_model": "st_static.model.save_load",
    "save_model": "st_static.model.save_load",
    "distill": "st_static.pipeline.distill_api",
    "add_fallback_rows": "st_static.extraction.fallback",
    "add_piece_rows": "st_static.extraction.pieces",
    "extend": "st_static.pipeline.extend_api",
    "BuildSettings": "st_static.settings",
    "embed_files": "st_static.collections.job",
}

if TYPE_CHECKING:
    from st_static.collections.job import embed_files
    from st_static.errors import ModelFolderError, StStaticError
    from st_static.extraction.fallback import add_fallback_rows
    from st_static.extraction.pieces import add_piece_rows
    from st_static.model.inference import encode
    from st_static.model.save_load import load_model, save_model
    from st_static.model.static_word_average import StaticWordAverage
    from st_static.pipeline.distill_api import distill
    from st_static.pipeline.extend_api import extend
    from st_static.settings import BuildSettings


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'st_static' has no attribute {name!r}")


__all__ = [
    "BuildSettings",
    "ModelFolderError",
    "StStaticError",
    "StaticWordAverage",
    "__version__",
    "add_fallback_rows",
    "add_piece_rows",
    "distill",
    "embed_files",
    "encode",
    "extend",
    "load_model",
    "save_model",
]
