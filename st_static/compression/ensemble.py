"""Ensembles of static models (Wada et al., 2025, Appendix D): one table, one look-up per word.

For member tables ``E_1 .. E_J`` and weights ``lambda_i``, a text ``z`` is embedded as

    f(z) = [ sqrt(lambda_i / sum(lambda)) * f_i(z) / ||f_i(z)|| ]_{i=1..J},   f_i(z) = mean of E_i over z,

so ``f(z) . f(z')`` is the lambda-weighted average of the members' cosine similarities. The members' rows are
concatenated into one table over the union of their vocabularies (one row per token, as for a single
model), and :class:`BlockNormalize` normalises each member's block of the averaged vector.

Words a member does not know: each member's block of a union word is what that member itself reads for the
word: its own row, the row of its longest known prefix, or zero when it drops the word. For words separated
by spaces the ensemble's block ``i`` is therefore exactly member ``i``'s embedding, and the identity above
is exact. (Scripts without spaces are segmented with the union vocabulary, which can split a run
differently than a member would.)

Saving: the table is a plain ``StaticEmbedding``; ``BlockNormalize`` is an st-static module. The per-block
normalisation happens per text after averaging, so it cannot be folded into the table, and no
sentence-transformers module computes norms of parts of a vector (``Normalize`` and ``LayerNorm`` act on the
whole vector, ``Dense`` is linear plus an element-wise activation). An ensemble folder therefore loads with
:func:`st_static.load_model` (``trust_remote_code`` stays off), or with
``SentenceTransformer(path, trust_remote_code=True)`` where st-static is installed; a bare
``SentenceTransformer(path)`` refuses it with a message asking for ``trust_remote_code``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Module, Normalize
from torch import nn

from st_static.compression.model_parts import float_pipeline, rebuild
from st_static.compression.pruning import continuation_characters, max_word_chars
from st_static.model.metadata import EnsembleMember, EnsembleRecord, FoldedNormsRecord, ModelMetadata
from st_static.model.static_word_average import StaticWordAverage, check_texts
from st_static.model.tokenization import build_word_tokenizer

logger = logging.getLogger(__name__)


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
        total = sum(block_weights)
        self.register_buffer(
            "block_scales",
            torch.tensor([math.sqrt(weight / total) for weight in block_weights], dtype=torch.float32),
            persistent=False,
        )

    def forward(self, features: dict[str, torch.Tensor], **kwargs: Any) -> dict[str, torch.Tensor]:
        embedding = features["sentence_embedding"]
        if embedding.shape[-1] != sum(self.block_dims):
            raise ValueError(
                f"BlockNormalize expects {sum(self.block_dims)} dimensions (blocks {self.block_dims}), "
                f"got {embedding.shape[-1]}."
            )
        blocks = torch.split(embedding, self.block_dims, dim=-1)
        scales = self.block_scales.to(embedding.dtype)
        features["sentence_embedding"] = torch.cat(
            [nn.functional.normalize(block, p=2, dim=-1) * scales[index] for index, block in enumerate(blocks)],
            dim=-1,
        )
        return features

    def get_embedding_dimension(self) -> int:
        return sum(self.block_dims)

    def save(self, output_path: str, *args: Any, safe_serialization: bool = True, **kwargs: Any) -> None:
        self.save_config(output_path)


# The type recorded in modules.json; st_static.model.save_load.load_model maps it back to this class.
BlockNormalize.__module__ = "st_static.compression"


def _member_pipeline(model: SentenceTransformer, index: int) -> StaticWordAverage:
    module, rest = float_pipeline(model)
    if module.fallback is not None:
        logger.warning(
            "Ensemble member %d has fallback rows; the ensemble is built without them (BlockNormalize would give a "
            "member that knows no word of a text its fallback vector at full weight). Add them to the folded "
            "ensemble with st_static.add_fallback_rows.",
            index,
        )
        module = module.without_fallback()
    if not all(isinstance(later, Normalize) for later in rest):
        names = ", ".join(type(later).__name__ for later in rest)
        raise ValueError(
            f"Ensemble member {index} has modules after its table other than Normalize ({names}); members must be "
            "plain static models (a table, optionally followed by Normalize)."
        )
    return module


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


def member_view(module: StaticWordAverage, words: Sequence[str]) -> torch.Tensor:
    """What ``module`` reads for each word on its own: the sum of the rows its tokenizer gives the word.

    One row for a known word or its longest known prefix, zero for a dropped word, several rows for a run of a
    space-less script the member segments further.
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


def shared_value(values: Sequence[Any]) -> Any:
    """The value every member records alike (e.g. the corpus all members were distilled on), else ``None``."""
    if not values or values[0] is None or any(value != values[0] for value in values):
        return None
    return values[0]


def ensemble(models: Sequence[SentenceTransformer], weights: Sequence[float] | None = None) -> SentenceTransformer:
    """Combine static models into one whose dot product is the weighted average of the members' cosines.

    Args:
        models: Two or more static ``SentenceTransformer`` models (a table, optionally followed by
            ``Normalize``); vocabularies and dimensions may differ. Compressed members are dequantised.
        weights: The ``lambda_i`` of each member (default: all 1); the paper's best English ensemble gives its
            own model 2 and the others 1.

    Returns:
        ``[StaticWordAverage over the union vocabulary, BlockNormalize]``; save it with
        ``st_static.model.save_load.save_model`` and load it with ``st_static.load_model``.

    Raises:
        ValueError: With fewer than two members, a member with other modules, or bad weights.
    """
    models = list(models)
    if len(models) < 2:
        raise ValueError(f"An ensemble needs at least two models, got {len(models)}.")
    members = [_member_pipeline(model, index) for index, model in enumerate(models)]
    block_dims = [member.embedding_dim for member in members]
    normalize = BlockNormalize(block_dims, weights)
    words = union_vocabulary([member.vocabulary for member in members])
    table = torch.cat([member_view(member, words) for member in members], dim=1)
    characters: set[str] = set()
    for member in members:
        characters |= continuation_characters(member.tokenizer)
    tokenizer = build_word_tokenizer(
        words,
        extra_characters=characters,
        max_word_chars=max(max_word_chars(member.tokenizer) for member in members),
    )
    recorded = [member.metadata for member in members]
    metadata = ModelMetadata(
        vocab_size=len(words),
        stages=["ensemble"],
        languages=shared_value([record.languages for record in recorded]),
        corpus=shared_value([record.corpus for record in recorded]),
        sentences_per_word=shared_value([record.sentences_per_word for record in recorded]),
        data_license=shared_value([record.data_license for record in recorded]),
        ensemble=EnsembleRecord(
            block_dims=block_dims,
            block_weights=normalize.block_weights,
            members=[
                EnsembleMember(
                    teacher=record.teacher,
                    stages=record.stages,
                    vocab_size=record.vocab_size,
                    num_words=member.num_words,
                    embedding_dim=member.embedding_dim,
                )
                for member, record in zip(members, recorded, strict=True)
            ],
        ),
    )
    module = StaticWordAverage(tokenizer, table, metadata=metadata)
    return rebuild(models[0], [module, normalize])


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
    weights = block_normalize.block_weights
    for index, dim in enumerate(block_normalize.block_dims):
        norms = torch.linalg.vector_norm(torch.from_numpy(raw[:, start : start + dim]), dim=1)
        norms = norms[norms > 0]
        if not len(norms):
            raise ValueError(f"None of the {len(raw)} texts has a word that ensemble member {index} knows.")
        scales.append(math.sqrt(weights[index] / sum(weights)) / float(norms.mean()))
        start += dim
    dims = block_normalize.block_dims
    column_scales = torch.cat([torch.full((dim,), scale) for dim, scale in zip(dims, scales, strict=True)])
    metadata = module.metadata.copy()
    metadata.ensemble = (metadata.ensemble or EnsembleRecord()).updated(
        folded=FoldedNormsRecord(block_scales=scales, texts=len(raw))
    )
    folded = StaticWordAverage(module.tokenizer, module.word_vectors.detach() * column_scales, metadata=metadata)
    return rebuild(model, [folded, Normalize()])
