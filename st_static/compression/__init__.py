"""Compact and combined tables: quantised storage, vocabulary pruning, ensembles and truncation.

Every function takes a static ``SentenceTransformer`` and returns a new one; save it with
``st_static.model.save_load.save_model``. Quantised and pruned models load with a bare ``SentenceTransformer(path)``;
ensembles need st-static (:func:`st_static.load_model`) unless their block norms are folded into the table
(:func:`fold_block_normalization`), see :mod:`st_static.compression.ensemble`.
"""

from __future__ import annotations

from st_static.compression.ensemble import BlockNormalize, ensemble, fold_block_normalization, union_vocabulary
from st_static.compression.member_loading import read_member
from st_static.compression.members import TokenTable, member_view, read_token_table
from st_static.compression.model_parts import float_pipeline, to_float32
from st_static.compression.pruning import frequency_order, prune_vocabulary, read_frequencies
from st_static.compression.quantization import folder_size, quantize
from st_static.compression.truncation import truncate_dimensions
from st_static.model.storage import STORAGE_FORMATS, CompactStaticWordAverage, QuantizedTable, quantize_table

__all__ = [
    "STORAGE_FORMATS",
    "BlockNormalize",
    "CompactStaticWordAverage",
    "QuantizedTable",
    "TokenTable",
    "ensemble",
    "float_pipeline",
    "fold_block_normalization",
    "folder_size",
    "frequency_order",
    "member_view",
    "prune_vocabulary",
    "quantize",
    "quantize_table",
    "read_frequencies",
    "read_member",
    "read_token_table",
    "to_float32",
    "truncate_dimensions",
    "union_vocabulary",
]
