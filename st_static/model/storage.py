"""Compact storage of a static table: float16, int8 with a per-row or per-column scale, and binary.

The table module that saves in a compact format (:class:`CompactStaticWordAverage`) and the codes themselves;
:func:`st_static.compression.quantize` makes one from any static model, and :func:`st_static.load_model` gives one back
for a folder saved that way (so a float16 folder, loaded and saved again, stays float16).

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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
import torch
from sentence_transformers.sentence_transformer.modules import StaticEmbedding
from tokenizers import Tokenizer
from transformers import PreTrainedTokenizerFast

from st_static.model.metadata import ModelMetadata
from st_static.model.static_word_average import StaticWordAverage

StorageFormat = Literal["float32", "float16", "int8-row", "int8-column", "binary"]
STORAGE_FORMATS: tuple[str, ...] = get_args(StorageFormat)
INT8_LIMIT = 127
FLOAT16_MAX = float(torch.finfo(torch.float16).max)
FLOAT16_SMALL_ROW = 1 / 16
"""float16 rows whose largest entry is smaller are stored divided by it (their small entries would be subnormal)."""


@dataclass(frozen=True)
class QuantizedTable:
    """A table in a storage format: ``codes`` times the scales gives the vectors back.

    Attributes:
        codes: ``(rows, dim)`` in the storage dtype (float32, float16 or int8).
        row_scale: ``(rows,)`` float32 factor per row, or ``None``.
        column_scale: ``(dim,)`` float32 factor per dimension, or ``None``.
    """

    codes: torch.Tensor
    row_scale: torch.Tensor | None = None
    column_scale: torch.Tensor | None = None

    def dequantize(self) -> torch.Tensor:
        """The float32 table the codes stand for."""
        table = self.codes.to(torch.float32)
        if self.row_scale is not None:
            table = table * self.row_scale[:, None]
        if self.column_scale is not None:
            table = table * self.column_scale[None, :]
        return table


def check_storage_format(storage: str) -> StorageFormat:
    """Return ``storage`` if it names a format, else raise a ``ValueError`` listing the formats."""
    if storage not in STORAGE_FORMATS:
        raise ValueError(f"Unknown storage format {storage!r}; choose one of {', '.join(STORAGE_FORMATS)}.")
    return storage  # type: ignore[return-value]


def _absmax_scale(table: torch.Tensor, dim: int) -> torch.Tensor:
    absmax = table.abs().amax(dim=dim)
    return torch.where(absmax > 0, absmax / INT8_LIMIT, torch.ones_like(absmax))


def quantize_table(word_vectors: torch.Tensor | np.ndarray, storage: str) -> QuantizedTable:
    """Encode a float table in a storage format.

    Args:
        word_vectors: ``(rows, dim)`` float table.
        storage: One of :data:`STORAGE_FORMATS`.

    Returns:
        The codes and scales; :meth:`QuantizedTable.dequantize` gives the stored vectors back.

    Raises:
        ValueError: On an unknown format, a non-finite table, or (float16) values beyond float16's range.
    """
    storage = check_storage_format(storage)
    table = torch.as_tensor(np.asarray(word_vectors) if isinstance(word_vectors, np.ndarray) else word_vectors)
    table = table.detach().to("cpu", torch.float32)
    if table.ndim != 2:
        raise ValueError(f"Expected a 2-D (rows, dim) table, got shape {tuple(table.shape)}.")
    if not torch.isfinite(table).all():
        raise ValueError("The table contains NaN or infinite values.")
    if storage == "float32":
        return QuantizedTable(table.clone())
    if storage == "float16":
        largest = float(table.abs().max()) if table.numel() else 0.0
        if largest > FLOAT16_MAX:
            raise ValueError(f"The table holds values up to {largest:g}, beyond float16's range ({FLOAT16_MAX:g}).")
        row_max = table.abs().amax(dim=1)
        small = (row_max > 0) & (row_max < FLOAT16_SMALL_ROW)
        if not small.any():
            return QuantizedTable(table.to(torch.float16))
        row_scale = torch.where(small, row_max, torch.ones_like(row_max))
        return QuantizedTable((table / row_scale[:, None]).to(torch.float16), row_scale=row_scale)
    if storage == "int8-row":
        scale = _absmax_scale(table, dim=1)
        codes = torch.round(table / scale[:, None]).clamp(-INT8_LIMIT, INT8_LIMIT).to(torch.int8)
        return QuantizedTable(codes, row_scale=scale)
    if storage == "int8-column":
        scale = _absmax_scale(table, dim=0)
        scaled = table / scale[None, :]
        row_max = scaled.abs().amax(dim=1)
        vanishing = (row_max > 0) & (row_max < 1)  # rows that would round to all zeros
        row_scale = torch.where(vanishing, row_max / INT8_LIMIT, torch.ones_like(row_max))
        codes = torch.round(scaled / row_scale[:, None]).clamp(-INT8_LIMIT, INT8_LIMIT).to(torch.int8)
        return QuantizedTable(codes, row_scale=row_scale if vanishing.any() else None, column_scale=scale)
    # binary: sign times the mean absolute value of the row, the scale that minimises the squared error.
    codes = torch.where(table >= 0, 1, -1).to(torch.int8)
    return QuantizedTable(codes, row_scale=table.abs().mean(dim=1))


class CompactStaticWordAverage(StaticWordAverage):
    """A :class:`StaticWordAverage` that saves its table in a compact storage format.

    In memory the table is float32 and holds exactly the vectors a bare ``SentenceTransformer`` gets when it
    loads the saved folder: the dequantised vectors, except for ``int8-column``, where it holds the integer
    codes and the column scale is applied by the ``Dense`` module that follows (as in the saved pipeline).
    Build it with :func:`quantize` rather than directly. Saving re-encodes the current table, so a module
    loaded or trained in float can be compressed again.

    Args:
        tokenizer: The word tokenizer.
        word_vectors: The float table, ``(num_words, dim)``, as described above.
        metadata: What the model records about itself (see ``StaticWordAverage``); ``quantization`` is set to
            ``storage``.
        storage: One of :data:`STORAGE_FORMATS`.
        column_scale: The per-dimension scale of ``int8-column`` (required for it, refused otherwise).
        row_scale: ``int8-column`` only: the per-row scale of rows stored scaled up (``word_vectors`` then holds
            the codes times it); ``None`` for none.
    """

    def __init__(
        self,
        tokenizer: Tokenizer | PreTrainedTokenizerFast,
        word_vectors: np.ndarray | torch.Tensor,
        metadata: ModelMetadata | Mapping[str, Any] | None = None,
        storage: str = "float32",
        column_scale: torch.Tensor | None = None,
        row_scale: torch.Tensor | None = None,
    ) -> None:
        storage = check_storage_format(storage)
        if (storage == "int8-column") != (column_scale is not None):
            raise ValueError("column_scale is required for the int8-column format and only for it.")
        if row_scale is not None and storage != "int8-column":
            raise ValueError("row_scale is for the int8-column format only.")
        super().__init__(tokenizer, word_vectors, metadata=metadata)
        self.storage: StorageFormat = storage
        self.metadata.quantization = storage
        self.column_scale = None if column_scale is None else column_scale.detach().to("cpu", torch.float32)
        self.row_scale = None if row_scale is None else row_scale.detach().to("cpu", torch.float32)
        if self.column_scale is not None and self.column_scale.shape != (self.embedding_dim,):
            raise ValueError(
                f"column_scale has shape {tuple(self.column_scale.shape)}, expected ({self.embedding_dim},)."
            )

    def __repr__(self) -> str:
        return (
            f"StaticWordAverage(num_words={self.num_words}, embedding_dim={self.embedding_dim}, "
            f"lowercase={self.lowercase}, storage={self.storage!r})"
        )

    @property
    def saves_column_scale(self) -> bool:
        return self.column_scale is not None

    def tensors_to_save(self) -> dict[str, torch.Tensor]:
        """The tensors of ``model.safetensors``: ``embeddings``, ``mapping`` and (except float32) ``weights``.

        Raises:
            ValueError: For ``int8-column``, if the table no longer holds integer codes in [-127, 127] (it was
                changed after quantisation: convert back to float with ``to_float32`` and quantise again).
        """
        self.sync_token_rows()
        table = self.word_vectors.detach().to("cpu", torch.float32)
        if self.storage == "int8-column":
            row_scale = self.row_scale
            codes = table if row_scale is None else table / row_scale[:, None]
            rounded = codes.round()
            exact = torch.equal(codes, rounded) if row_scale is None else torch.allclose(codes, rounded, atol=1e-3)
            if not exact or rounded.abs().max() > INT8_LIMIT:
                raise ValueError(
                    "The int8-column table no longer holds integer codes in [-127, 127]; it was changed after "
                    "quantisation. Convert the model with st_static.compression.to_float32 and quantise again."
                )
            quantized = QuantizedTable(rounded.to(torch.int8), row_scale=row_scale)
        else:
            quantized = quantize_table(table, self.storage)
        zero_row = torch.zeros(1, table.shape[1], dtype=quantized.codes.dtype)
        mapping = self.token_rows.to("cpu", torch.int32)
        weights = {"embeddings": torch.cat([quantized.codes, zero_row]).contiguous(), "mapping": mapping.contiguous()}
        if self.storage != "float32":
            # Also what makes StaticEmbedding cast the table to float32 on load.
            row_scale = torch.ones(self.num_words) if quantized.row_scale is None else quantized.row_scale
            token_scale = torch.cat([row_scale, torch.zeros(1)])[mapping.long()]
            weights["weights"] = token_scale.to(torch.float32).contiguous()
        if self.column_scale is not None:
            weights["column_scale"] = self.column_scale.contiguous()
        return weights


# Recorded in modules.json as sentence-transformers' StaticEmbedding, like StaticWordAverage: the files are
# StaticEmbedding's (model2vec layout), so any sentence-transformers install loads them.
CompactStaticWordAverage.__module__ = StaticEmbedding.__module__
CompactStaticWordAverage.__name__ = StaticEmbedding.__name__


RESTORED_ON_LOAD = ("float32", "float16", "int8-row", "binary")
"""Formats a loaded table keeps for its next save (``int8-column`` loads folded into float32, as its ``Dense`` goes)."""


def restore_storage(module: StaticWordAverage) -> StaticWordAverage:
    """The module in the compact format its metadata records (``quantization``), when it is one a load restores.

    The vectors are unchanged: they are the dequantised ones the folder stores, which the next save encodes to the
    same codes. Other modules (float32, ``int8-column`` folded on load, already compact) come back as they are.
    """
    storage = module.metadata.quantization
    if isinstance(module, CompactStaticWordAverage) or storage not in RESTORED_ON_LOAD:
        return module
    if module.folded_column_scale is not None:
        return module
    # The loaded module's state as is (no second pass over its tokenizer and table): what CompactStaticWordAverage's
    # constructor would build from the same tokenizer and vectors, plus its storage attributes.
    compact = CompactStaticWordAverage.__new__(CompactStaticWordAverage)
    compact.__dict__.update(module.__dict__)
    compact.storage = check_storage_format(storage)
    compact.column_scale = None
    compact.row_scale = None
    return compact
