"""Ensemble members from any static model: st-static tables, model2vec folders, ``StaticEmbedding`` folders, WordLlama.

An ensemble (:mod:`st_static.compression.ensemble`) is one table over a union of keys: words, subword pieces
(``##`` continuations), single symbols and the empty text. Each member fills its block of a key with what it
reads for that key *on its own*: the sum of its token rows for the key, through its own tokenizer. A text's
block ``i`` is then the sum of member ``i``'s token rows over the text divided by the ensemble's count of keys;
the count cancels in the block's norm, so the normalised block is member ``i``'s own embedding wherever the
member cuts the text at the ensemble's key boundaries (whole words, symbols; a subword member reads words alone as
it reads them in a text, see :class:`TokenTable`).

A member is a :class:`MemberReader`: :class:`StaticTableReader` for a st-static table, :class:`TokenTable` for a
foreign one (:func:`read_token_table`: model2vec, ``StaticEmbedding``, ``wordllama:CONFIG:DIM``;
:mod:`st_static.compression.token_tables`, whose names are importable from here too).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from torch import nn

from st_static.compression.token_tables import (
    METASPACE,
    MODEL2VEC_TYPE,
    PEER_LICENSES,
    WORDLLAMA_PREFIX,
    TokenTable,
    is_st_static_folder,
    is_symbol_key,
    is_word_key,
    local_folder,
    read_token_table,
    read_wordllama,
)
from st_static.model.static_word_average import StaticWordAverage
from st_static.tensors import to_numpy

__all__ = [
    "METASPACE",
    "MODEL2VEC_TYPE",
    "PEER_LICENSES",
    "WORDLLAMA_PREFIX",
    "MemberReader",
    "StaticTableReader",
    "TokenTable",
    "cosine_agreement",
    "is_st_static_folder",
    "is_symbol_key",
    "is_word_key",
    "local_folder",
    "member_reader",
    "member_view",
    "read_token_table",
    "read_wordllama",
]


class MemberReader(Protocol):
    """What an ensemble needs of a member: its keys and what it reads for each, alone."""

    name: str

    @property
    def embedding_dim(self) -> int: ...

    @property
    def words(self) -> list[str]:
        """Whole words with a row of their own, most useful first (they join the union vocabulary)."""
        ...

    @property
    def pieces(self) -> list[str]:
        """Continuation pieces (without ``##``) with a row of their own."""
        ...

    @property
    def characters(self) -> list[str]:
        """Single symbols (not letters or digits) with a row of their own."""
        ...

    def word_rows(self, words: Sequence[str]) -> np.ndarray:
        """``(len(words), dim)``: the sum of the member's rows for each word read alone."""
        ...

    def piece_rows(self, pieces: Sequence[str]) -> np.ndarray:
        """``(len(pieces), dim)``: the sum of the member's rows for each piece read as the rest of a word."""
        ...

    def character_rows(self, characters: Sequence[str]) -> np.ndarray:
        """``(len(characters), dim)``: the member's rows for each symbol read alone."""
        ...

    def empty_text_row(self) -> np.ndarray:
        """``(dim,)``: the row every text of the member reads once (zero for most models)."""
        ...

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """The member's own sentence embeddings (means of its rows, not normalised), for checks and reports."""
        ...


@dataclass
class StaticTableReader:
    """A st-static table as an ensemble member (float, fallback and piece rows kept).

    Args:
        module: The member's float table.
        name: Where it came from (a folder or repo id), for records and messages.
    """

    module: StaticWordAverage
    name: str = "st-static table"
    _plain: StaticWordAverage = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._plain = self.module.without_fallback()  # words read alone, without the empty-text row each text adds

    @property
    def embedding_dim(self) -> int:
        return self.module.embedding_dim

    @property
    def words(self) -> list[str]:
        return self.module.vocabulary

    @property
    def pieces(self) -> list[str]:
        return self.module.pieces

    @property
    def characters(self) -> list[str]:
        return self.module.fallback_characters

    def _table(self) -> np.ndarray:
        return to_numpy(self.module.word_vectors, dtype=torch.float32)

    def word_rows(self, words: Sequence[str]) -> np.ndarray:
        if not words:
            return np.zeros((0, self.embedding_dim), dtype=np.float32)
        return to_numpy(member_view(self._plain, words), dtype=torch.float32)

    def piece_rows(self, pieces: Sequence[str]) -> np.ndarray:
        own = {piece: row for piece, row in zip(self.module.pieces, self.module.piece_rows, strict=True)}
        rows = self.word_rows(list(pieces))  # a piece the member lacks: what it reads for the letters as a word
        table = self._table()
        for index, piece in enumerate(pieces):
            if piece in own:
                rows[index] = table[own[piece]]
        return rows

    def character_rows(self, characters: Sequence[str]) -> np.ndarray:
        rows = self.word_rows(list(characters))
        if self.module.fallback is not None:
            table = self._table()
            own = dict(zip(self.module.fallback_characters, self.module.fallback.character_rows, strict=True))
            for index, character in enumerate(characters):
                if character in own:
                    rows[index] = table[own[character]]
        return rows

    def empty_text_row(self) -> np.ndarray:
        if self.module.fallback is None:
            return np.zeros(self.embedding_dim, dtype=np.float32)
        return self._table()[self.module.fallback.sentinel_row].copy()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        model = SentenceTransformer(modules=[self.module], device="cpu")
        return model.encode(list(texts), batch_size=1024, convert_to_numpy=True)


def member_reader(member: SentenceTransformer | TokenTable | StaticWordAverage, name: str) -> MemberReader:
    """The reader of one member: a :class:`TokenTable` as it is, a st-static model's float table otherwise."""
    if isinstance(member, TokenTable):
        return member
    if isinstance(member, StaticWordAverage):
        return StaticTableReader(member, name)
    from sentence_transformers.base.modules import Normalize

    from st_static.compression.model_parts import float_pipeline

    module, rest = float_pipeline(member)
    if not all(isinstance(later, Normalize) for later in rest):
        names = ", ".join(type(later).__name__ for later in rest)
        raise ValueError(
            f"Ensemble member {name} has modules after its table other than Normalize ({names}); members must be "
            "plain static models (a table, optionally followed by Normalize)."
        )
    return StaticTableReader(module, name)


def member_view(module: StaticWordAverage, words: Sequence[str]) -> torch.Tensor:
    """What ``module`` reads for each word on its own: the sum of the rows its tokenizer gives the word.

    One row for a known word or its longest known prefix (and its pieces), zero for a dropped word, several rows
    for a run of a space-less script the member segments further.
    """
    rows, offsets = module.token_ids(list(words))
    module.sync_token_rows()
    with torch.no_grad():
        return nn.functional.embedding_bag(
            torch.from_numpy(rows),
            module.embedding.weight.detach().cpu(),
            torch.from_numpy(offsets),
            mode="sum",
            padding_idx=module.num_words,
        )


def cosine_agreement(ensemble_blocks: np.ndarray, member_vectors: np.ndarray) -> np.ndarray:
    """Per-text cosine of an ensemble block and the member's own embedding (1.0 where both are zero)."""
    blocks = torch.from_numpy(np.asarray(ensemble_blocks, dtype=np.float64))
    own = torch.from_numpy(np.asarray(member_vectors, dtype=np.float64))
    norms = blocks.norm(dim=1) * own.norm(dim=1)
    both_zero = (blocks.norm(dim=1) == 0) & (own.norm(dim=1) == 0)
    cosines = (blocks * own).sum(dim=1) / norms.clamp_min(1e-300)
    return to_numpy(torch.where(both_zero, torch.ones_like(cosines), cosines))
