"""An ensemble member by name: a st-static table loaded with its checks, or any other static model as a token table.

Apart from :mod:`st_static.compression.members` because it loads st-static folders (``st_static.model.save_load``,
which imports the ensemble's ``BlockNormalize``).
"""

from __future__ import annotations

from pathlib import Path

from sentence_transformers import SentenceTransformer

from st_static.compression.members import (
    WORDLLAMA_PREFIX,
    TokenTable,
    is_st_static_folder,
    local_folder,
    read_token_table,
)
from st_static.model.save_load import load_model


def read_member(name: str) -> SentenceTransformer | TokenTable:
    """An ensemble member by name: a st-static table (loaded with checks) or a foreign :class:`TokenTable`."""
    if not name.startswith(WORDLLAMA_PREFIX):
        folder = local_folder(name)
        if is_st_static_folder(folder):
            return load_model(str(folder) if Path(name).is_dir() else name)
    return read_token_table(name)
