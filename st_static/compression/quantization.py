"""Compact storage of a static table: float16, int8 with a per-row or per-column scale, and binary.

Every format is saved in the layout that sentence-transformers' own ``StaticEmbedding.load`` reads and folds
(the model2vec layout): ``embeddings`` (one row per vocabulary word plus one zero row, in the storage dtype),
``mapping`` (int32, token id -> row: case variants share their word's row, dropped pieces share the zero row)
and ``weights`` (float32, a per-token scale). ``StaticEmbedding`` multiplies ``weights`` in and thereby casts
the table to float32 on load, so a bare ``SentenceTransformer(path)`` gives the dequantised vectors and
averages them in float32 (a float16 table averaged in float16 overflows on long texts).

| format | stored per word | scale | how bare sentence-transformers gets the vectors |
| --- | --- | --- | --- |
| ``float32`` | ``dim`` float32 | none | ``embeddings[mapping]`` |
| ``float16`` | ``dim`` float16 | ones (tiny rows: absmax) | ``embeddings[mapping] * weights``, upcast to float32 |
| ``int8-row`` | ``dim`` int8 | per word (``weights``) | ``codes * row_scale``; absmax: the largest entry is 127 |
| ``int8-column`` | ``dim`` int8 | per dimension (+ tiny rows') | ``codes * weights``, then a diagonal ``Dense`` |
| ``binary`` | ``dim`` int8 of +-1 | per word: mean absolute value | ``sign * row_scale`` |

Rows far smaller than the others (the fallback rows of :mod:`st_static.extraction.fallback`, ~1e-3 and ~1e-7 of a
word row) would round to zero in ``float16`` (below its normal range) and ``int8-column`` (below half a step of
the column scale); they are stored scaled up, with their scale in ``weights``.

``binary`` is one byte per entry on disk, the same as ``int8``: safetensors has no packed-bit dtype that
``StaticEmbedding`` could read. It compresses about 8x further under any general-purpose compressor (each byte
is one of two values). ``int8-column`` also writes ``column_scale`` next to the codes (ignored by
sentence-transformers), so that :meth:`StaticWordAverage.load` alone returns the dequantised table and
:func:`st_static.load_model` can drop the ``Dense`` layer once the scale is folded in.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer

from st_static.compression.model_parts import column_scale_dense, float_pipeline, rebuild
from st_static.model.storage import CompactStaticWordAverage, check_storage_format, quantize_table


def quantize(model: SentenceTransformer, storage: str) -> SentenceTransformer:
    """Return a copy of a static model whose table saves in a compact storage format.

    The returned model encodes exactly as the saved folder will after loading, with a bare
    ``SentenceTransformer(path)`` or :func:`st_static.load_model`. A compressed input is dequantised first.
    For ``int8-column`` a diagonal ``Dense`` module (the column scale) is inserted after the table.

    Args:
        model: A static ``SentenceTransformer``.
        storage: One of :data:`STORAGE_FORMATS`.

    Returns:
        The new model; save it with ``st_static.model.save_load.save_model``.
    """
    storage = check_storage_format(storage)
    module, rest = float_pipeline(model)
    quantized = quantize_table(module.word_vectors.detach(), storage)
    metadata = module.metadata
    if storage == "int8-column":
        codes = quantized.codes.to(torch.float32)
        compact = CompactStaticWordAverage(
            module.tokenizer,
            codes if quantized.row_scale is None else codes * quantized.row_scale[:, None],
            metadata=metadata,
            storage=storage,
            column_scale=quantized.column_scale,
            row_scale=quantized.row_scale,
        )
        return rebuild(model, [compact, column_scale_dense(quantized.column_scale), *rest])
    compact = CompactStaticWordAverage(module.tokenizer, quantized.dequantize(), metadata=metadata, storage=storage)
    return rebuild(model, [compact, *rest])


def folder_size(path: str | os.PathLike[str]) -> int:
    """Total bytes of the files under ``path``."""
    return sum(file.stat().st_size for file in Path(path).rglob("*") if file.is_file())
