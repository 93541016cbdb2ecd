"""Ensembles of static models (Wada et al., 2025, Appendix D; the Japanese version's equation 1): one table, one
look-up per word.

For member models ``E_1 .. E_J`` and weights ``lambda_i``, a text ``z`` is embedded as

    f(z) = [ sqrt(lambda_i / sum(lambda)) * f_i(z) / ||f_i(z)|| ]_{i=1..J},   f_i(z) = mean of E_i over z,

so ``f(z) . f(z')`` is the lambda-weighted average of the members' cosine similarities. Members may be any static
model (:mod:`st_static.compression.members`: st-static tables, model2vec and ``StaticEmbedding`` folders, WordLlama).
Their rows are laid out in one table over the union of their keys: the words of the st-static and WordPiece members,
their ``##`` subword pieces, their symbols (as fallback rows) and the empty text. Member ``i``'s block of a key is
what member ``i`` reads for that key on its own: its row, the sum of its subword rows through its own tokenizer
(a subword member), its longest known prefix and pieces (a st-static table), or zero when it drops the key. A text's
block ``i`` is then member ``i``'s sum of rows over the text divided by the ensemble's count of keys, and the count
cancels in the block's norm: for a text the ensemble cuts where the member cuts it (known words, symbols), block
``i`` has exactly the direction of member ``i``'s own embedding, and the identity above is exact. Words no member
knows whole are cut into a prefix and pieces by the union, which can differ from a member's own cut
(``benchmarks.ensembles`` measures the agreement). :class:`BlockNormalize` normalises each member's block of the
averaged vector.

Saving: the table is a plain ``StaticEmbedding``; ``BlockNormalize`` is an st-static module. The per-block
normalisation happens per text after averaging, so it cannot be folded into the table exactly, and no
sentence-transformers module computes norms of parts of a vector (``Normalize`` and ``LayerNorm`` act on the
whole vector, ``Dense`` is linear plus an element-wise activation). An exact ensemble folder therefore loads with
:func:`st_static.load_model` (``trust_remote_code`` stays off), or with
``SentenceTransformer(path, trust_remote_code=True)`` where st-static is installed; a bare
``SentenceTransformer(path)`` refuses it with a message asking for ``trust_remote_code``.
:func:`fold_block_normalization` gives the plain table (per-member scales folded in, ST's ``Normalize``) that a bare
``SentenceTransformer(path)`` and model2vec load.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Module, Normalize
from tokenizers import Tokenizer
from torch import nn

from st_static.compression.members import (
    MemberReader,
    StaticTableReader,
    TokenTable,
    is_word_key,
    member_reader,
)
from st_static.compression.model_parts import float_pipeline, rebuild
from st_static.compression.pruning import continuation_characters, max_word_chars
from st_static.model.metadata import EnsembleMember, EnsembleRecord, FoldedNormsRecord, ModelMetadata
from st_static.model.static_word_average import StaticWordAverage, check_texts
from st_static.model.tokenization import (
    DEFAULT_MAX_WORD_CHARS,
    TRAINING_FORM,
    FallbackLayout,
    add_fallback_layout,
    add_piece_layout,
    build_word_tokenizer,
    fallback_characters_of,
    fallback_layout,
    is_fallback_character,
    is_lowercase_tokenizer,
    is_piece,
    keys_reading_rows,
    piece_rows_of,
    pieces_of,
)

logger = logging.getLogger(__name__)


MAX_WEIGHT_RATIO = 1e6
"""The largest ratio of two ensemble weights: past it the smaller member's block is noise next to the larger's
(``sqrt(1e-6)`` = 0.001 of its scale), and far past it float32 rounds the block to nothing."""


def ensemble_weight_problem(weights: Sequence[float]) -> str | None:
    """Why ``weights`` cannot weigh an ensemble's members (each finite and positive, a finite sum, the largest at
    most :data:`MAX_WEIGHT_RATIO` times the smallest), or ``None`` when they can."""
    bad = [weight for weight in weights if not math.isfinite(weight) or weight <= 0]
    if bad:
        return (
            f"every ensemble weight must be a finite positive number, got {', '.join(map(str, bad))} "
            "(leave a model out instead of weighting it 0)"
        )
    if not math.isfinite(sum(weights)):
        return (
            f"the ensemble weights add up past the largest float ({', '.join(map(str, weights))}); only their ratios "
            "count, so give smaller numbers (e.g. 1,1)"
        )
    if weights and max(weights) > MAX_WEIGHT_RATIO * min(weights):
        return (
            f"the largest ensemble weight ({max(weights):g}) is over {MAX_WEIGHT_RATIO:g} times the smallest "
            f"({min(weights):g}), so that member would vanish; leave it out instead"
        )
    return None


def block_scales(weights: Sequence[float]) -> list[float]:
    """``sqrt(w_i / sum w)`` of each weight, computed on the weights over their largest so the sum cannot overflow
    (``1e308, 1e308`` gives ``sqrt(0.5)`` each, not zero)."""
    largest = max(weights)
    relative = [weight / largest for weight in weights]
    total = sum(relative)
    return [math.sqrt(weight / total) for weight in relative]


class BlockNormalize(Module):
    """L2-normalise consecutive blocks of the sentence embedding, then weight block ``i`` by ``sqrt(w_i / sum w)``.

    The dot product of two outputs is the ``w``-weighted average of the cosine similarities of the blocks.
    A zero block (a member that knows none of the text's words) stays zero.

    Args:
        block_dims: Size of each block, in order; they must add up to the embedding dimension.
        block_weights: Non-negative weight of each block (the ``lambda_i`` of the paper); defaults to equal
            weights. At least one must be positive.
    """

    config_keys: ClassVar[list[str]] = ["block_dims", "block_weights"]

    def __init__(self, block_dims: Sequence[int], block_weights: Sequence[float] | None = None) -> None:
        super().__init__()
        block_dims = [int(dim) for dim in block_dims]
        if not block_dims or any(dim < 1 for dim in block_dims):
            raise ValueError(f"block_dims must be a non-empty list of positive sizes, got {block_dims}.")
        block_weights = [1.0] * len(block_dims) if block_weights is None else [float(w) for w in block_weights]
        if len(block_weights) != len(block_dims):
            raise ValueError(f"Got {len(block_weights)} block weights for {len(block_dims)} blocks.")
        if any(not math.isfinite(w) or w < 0 for w in block_weights) or sum(block_weights) <= 0:
            raise ValueError(f"block_weights must be finite, non-negative and not all zero, got {block_weights}.")
        self.block_dims = block_dims
        self.block_weights = block_weights
        self.register_buffer(
            "block_scales", torch.tensor(block_scales(block_weights), dtype=torch.float32), persistent=False
        )

    def forward(self, features: dict[str, torch.Tensor], **kwargs: Any) -> dict[str, torch.Tensor]:
        embedding = features["sentence_embedding"]
        if embedding.shape[-1] != sum(self.block_dims):
            raise ValueError(
                f"BlockNormalize expects {sum(self.block_dims)} dimensions (blocks {self.block_dims}), "
                f"got {embedding.shape[-1]}."
            )
        # In float32: float16's eps underflows, so a zero block (an empty text, a member that knows none of the
        # words) would read 0/0 = NaN after ``.half()``; the result goes back to the input's dtype.
        blocks = torch.split(embedding.float(), self.block_dims, dim=-1)
        scales = block_scales(self.block_weights)  # not the buffer: .half() rounds it
        features["sentence_embedding"] = torch.cat(
            [nn.functional.normalize(block, p=2, dim=-1) * scales[index] for index, block in enumerate(blocks)],
            dim=-1,
        ).to(embedding.dtype)
        return features

    def get_embedding_dimension(self) -> int:
        return sum(self.block_dims)

    def save(self, output_path: str, *args: Any, safe_serialization: bool = True, **kwargs: Any) -> None:
        self.save_config(output_path)


# The type recorded in modules.json; st_static.model.save_load.load_model maps it back to this class.
BlockNormalize.__module__ = "st_static.compression"


def union_vocabulary(vocabularies: Sequence[Sequence[str]]) -> list[str]:
    """Merge vocabularies, ordering each word by its best row across members (then by member order).

    Row order is frequency order in each member, so the union stays roughly most-frequent-first, which is
    what :func:`~st_static.compression.prune_vocabulary` relies on without explicit frequencies.
    """
    best: dict[str, tuple[int, int]] = {}
    for member, words in enumerate(vocabularies):
        for rank, word in enumerate(words):
            key = (rank, member)
            if word not in best or key < best[word]:
                best[word] = key
    return sorted(best, key=best.__getitem__)


def shared_value(values: Sequence[Any]) -> Any:
    """The value every member records alike (e.g. the corpus all members were distilled on), else ``None``."""
    if not values or values[0] is None or any(value != values[0] for value in values):
        return None
    return values[0]


@dataclass(frozen=True)
class UnionKeys:
    """The keys of an ensemble's table: its tokenizer, and which key each row holds."""

    tokenizer: Tokenizer
    words: list[str]
    pieces: list[str]
    characters: list[str]
    piece_rows: range
    fallback: FallbackLayout | None


CASE_PROBES = ["The", "Paris", "iPhone", "NASA"]
"""Words whose rows a member that tells cases apart reads otherwise than their lowercase forms' rows."""


def reads_case(reader: MemberReader) -> bool:
    """Whether a member tells a word's cases apart: a lowercase st-static table does not, nor a member whose rows
    for :data:`CASE_PROBES` equal its rows for their lowercase forms (whatever lowercases: normalizer,
    pre-tokenizer or vocabulary)."""
    if isinstance(reader, StaticTableReader):
        return not reader.module.lowercase
    cased = reader.word_rows(CASE_PROBES)
    return not np.allclose(cased, reader.word_rows([word.lower() for word in CASE_PROBES]))


def warn_case_blind_members(readers: Sequence[MemberReader]) -> None:
    """Warn that a union that keeps case reads some words otherwise than its lowercasing members do."""
    blind = [reader.name for reader in readers if not reads_case(reader)]
    if blind:
        logger.warning(
            "%s lowercase every word, but the ensemble's table keeps case for the other members: a word in mixed "
            "case (iPhone) that no member keeping case holds reads nothing, where %s would read its lowercase form.",
            ", ".join(blind),
            "they" if len(blind) > 1 else "it",
        )


def union_keys(readers: Sequence[MemberReader]) -> UnionKeys:
    """One word tokenizer over every member's words, pieces and symbols (the latter as fallback rows)."""
    words = union_vocabulary([[word for word in reader.words if is_word_key(word)] for reader in readers])
    characters: set[str] = set()
    for reader in readers:
        if isinstance(reader, StaticTableReader):
            characters |= continuation_characters(reader.module.tokenizer)
        else:
            characters |= reader.letters
    max_chars = max(
        (max_word_chars(reader.module.tokenizer) for reader in readers if isinstance(reader, StaticTableReader)),
        default=DEFAULT_MAX_WORD_CHARS,
    )
    tokenizer = build_word_tokenizer(words, extra_characters=characters, max_word_chars=max_chars)
    lowercase = is_lowercase_tokenizer(tokenizer)
    if not lowercase:
        warn_case_blind_members(readers)
    pieces = list(
        dict.fromkeys(
            piece
            for reader in readers
            for piece in reader.pieces
            if is_piece(piece, lowercase, form=TRAINING_FORM) and is_piece(piece, lowercase)
        )
    )
    if pieces:
        tokenizer = add_piece_layout(tokenizer, pieces)
    known = keys_reading_rows(tokenizer)  # a symbol may be a word of another member, or its case variant
    symbols = list(
        dict.fromkeys(
            character
            for reader in readers
            for character in reader.characters
            if character not in known
            and is_fallback_character(character, lowercase, form=TRAINING_FORM)
            and is_fallback_character(character, lowercase)
        )
    )
    tokenizer = add_fallback_layout(tokenizer, symbols)
    return UnionKeys(
        tokenizer,
        words,
        pieces_of(tokenizer),
        fallback_characters_of(tokenizer),
        piece_rows_of(tokenizer),
        fallback_layout(tokenizer),
    )


def member_block(reader: MemberReader, keys: UnionKeys) -> torch.Tensor:
    """Member ``reader``'s block of the union table: what it reads, alone, for every key of ``keys``."""
    num_rows = len(keys.words) + len(keys.pieces) + (keys.fallback.num_rows if keys.fallback else 0)
    block = np.zeros((num_rows, reader.embedding_dim), dtype=np.float32)
    block[: len(keys.words)] = reader.word_rows(keys.words)
    if keys.pieces:
        block[keys.piece_rows.start : keys.piece_rows.stop] = reader.piece_rows(keys.pieces)
    if keys.fallback is not None:
        block[keys.fallback.sentinel_row] = reader.empty_text_row()
        if keys.characters:
            rows = keys.fallback.character_rows
            block[rows.start : rows.stop] = reader.character_rows(keys.characters)
    return torch.from_numpy(block)


def _member_record(reader: MemberReader, name: str) -> EnsembleMember:
    if isinstance(reader, TokenTable):
        return EnsembleMember(
            name=name,
            kind=reader.kind,
            license=reader.license,
            vocab_size=len(reader.token_vectors),
            embedding_dim=reader.embedding_dim,
        )
    record = reader.module.metadata
    return EnsembleMember(
        name=name,
        kind="st-static",
        license=record.license,
        teacher=record.teacher,
        stages=record.stages,
        vocab_size=record.vocab_size,
        num_words=reader.module.num_words,
        embedding_dim=reader.embedding_dim,
    )


def ensemble(
    models: Sequence[SentenceTransformer | TokenTable],
    weights: Sequence[float] | None = None,
    names: Sequence[str] | None = None,
) -> SentenceTransformer:
    """Combine static models into one whose dot product is the weighted average of the members' cosines.

    Members may be st-static tables or any other static model read as a :class:`~st_static.compression.members.
    TokenTable` (model2vec, ``StaticEmbedding``, WordLlama: :func:`~st_static.compression.member_loading.read_member`).

    Args:
        models: Two or more static models: st-static ``SentenceTransformer`` models (a table, optionally followed by
            ``Normalize``) or token tables; vocabularies, tokenizers and dimensions may differ. Compressed members
            are dequantised.
        weights: The ``lambda_i`` of each member (default: all 1); the paper's best English ensemble gives its
            own model 2 and the others 1.
        names: How each member was given (recorded in the metadata and on the card); default ``member-i``.

    Returns:
        ``[StaticWordAverage over the union keys, BlockNormalize]``; save it with
        ``st_static.model.save_load.save_model`` and load it with ``st_static.load_model``, or fold its norms
        (:func:`fold_block_normalization`) for a bare load.

    Raises:
        ValueError: With fewer than two members, a member with other modules, or bad weights.
    """
    models = list(models)
    if len(models) < 2:
        raise ValueError(f"An ensemble needs at least two models, got {len(models)}.")
    names = list(names) if names is not None else [f"member-{index}" for index in range(len(models))]
    if len(names) != len(models):
        raise ValueError(f"Got {len(names)} names for {len(models)} members.")
    if weights is not None and (problem := ensemble_weight_problem([float(weight) for weight in weights])):
        raise ValueError(f"{problem[0].upper()}{problem[1:]}.")
    readers = [member_reader(model, name) for model, name in zip(models, names, strict=True)]
    block_dims = [reader.embedding_dim for reader in readers]
    normalize = BlockNormalize(block_dims, weights)
    keys = union_keys(readers)
    table = torch.cat([member_block(reader, keys) for reader in readers], dim=1)
    # What the st-static members record alike (other members record nothing): their languages choose the evaluation
    # tasks; their corpus, sentences and data licence describe their tables (the card lists every member's licence).
    recorded = [reader.module.metadata for reader in readers if isinstance(reader, StaticTableReader)]
    metadata = ModelMetadata(
        vocab_size=len(keys.words),
        stages=["ensemble"],
        languages=shared_value([record.languages for record in recorded]),
        corpus=shared_value([record.corpus for record in recorded]),
        sentences_per_word=shared_value([record.sentences_per_word for record in recorded]),
        data_license=shared_value([record.data_license for record in recorded]),
        ensemble=EnsembleRecord(
            block_dims=block_dims,
            block_weights=normalize.block_weights,
            members=[_member_record(reader, name) for reader, name in zip(readers, names, strict=True)],
        ),
    )
    module = StaticWordAverage(keys.tokenizer, table, metadata=metadata)
    template = next((model for model in models if isinstance(model, SentenceTransformer)), None)
    if template is None:
        template = SentenceTransformer(modules=[module], device="cpu")
    return rebuild(template, [module, normalize])


def fold_block_normalization(model: SentenceTransformer, texts: Sequence[str]) -> SentenceTransformer:
    """The ensemble as a plain static model that a bare ``SentenceTransformer(path)`` loads.

    :class:`BlockNormalize` normalises each member's block per text, which no sentence-transformers module can do.
    This replaces it by a fixed scale per block, folded into the table: block ``i`` is multiplied by
    ``sqrt(w_i / sum w) / m_i``, where ``m_i`` is the mean norm of block ``i`` of the averaged word vectors of
    ``texts`` (a sample of the text the model will embed), and the model ends with ``Normalize``. The dot product
    is then the weighted average of the members' cosines for a text whose block norms have their mean ratio, and
    close to it otherwise (on en.txt the ratio of the MiniLM and mpnet tables' block norms varies by 8%; STS scores
    of the folded ensemble are within 0.05 of the block-normalised one's).

    Args:
        model: An ensemble made by :func:`ensemble` (a float table followed by ``BlockNormalize``).
        texts: Texts to measure the block norms on (e.g. the first 20,000 lines of the training corpus).

    Returns:
        ``[StaticWordAverage, Normalize]``; ``metadata.ensemble.folded`` records the scales and the number
        of texts that set them.

    Raises:
        ValueError: If ``model`` is not an ensemble, or no text gives a non-zero block for some member.
    """
    module, rest = float_pipeline(model)
    if len(rest) != 1 or not isinstance(rest[0], BlockNormalize):
        raise ValueError("Only an ensemble (a static table followed by BlockNormalize) can have its norms folded.")
    block_normalize = rest[0]
    texts = check_texts(texts)
    if not texts:
        raise ValueError("Folding an ensemble's norms needs texts to measure them on, got none.")
    raw = rebuild(model, [module]).encode(list(texts), batch_size=4096, convert_to_numpy=True)
    scales, start = [], 0
    weight_scales = block_scales(block_normalize.block_weights)
    record = module.metadata.ensemble
    members = (record.members if record is not None else None) or []
    for index, dim in enumerate(block_normalize.block_dims):
        norms = torch.linalg.vector_norm(torch.from_numpy(raw[:, start : start + dim]), dim=1)
        norms = norms[norms > 0]
        if not len(norms):
            member = f"{index} ({members[index].name})" if index < len(members) else str(index)
            raise ValueError(f"None of the {len(raw)} texts has a word that ensemble member {member} knows.")
        scales.append(weight_scales[index] / float(norms.mean()))
        start += dim
    dims = block_normalize.block_dims
    column_scales = torch.cat([torch.full((dim,), scale) for dim, scale in zip(dims, scales, strict=True)])
    metadata = module.metadata.copy()
    metadata.ensemble = (metadata.ensemble or EnsembleRecord()).updated(
        folded=FoldedNormsRecord(block_scales=scales, texts=len(raw))
    )
    folded = StaticWordAverage(module.tokenizer, module.word_vectors.detach() * column_scales, metadata=metadata)
    return rebuild(model, [folded, Normalize()])
