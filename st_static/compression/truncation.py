"""Truncatable dimensions: cutting the table to its first ``dim`` columns.

``SentenceTransformer(path, truncate_dim=k)`` works on every st-static model: sentence-transformers runs the
whole pipeline (mean, then ``Normalize``) and keeps the first ``k`` values afterwards, so truncated vectors
are not unit length (``model.similarity``, which is cosine by default, is unaffected; pass
``normalize_embeddings=True`` to ``encode`` for unit vectors). Tables whose first dimensions carry the most
(PCA order, or training with ``MatryoshkaLoss``) lose least. :func:`truncate_dimensions` does the same cut on
disk: cosine similarities equal those of ``truncate_dim=dim`` exactly, and the vectors come back unit length.
For an ensemble, ``truncate_dim`` cuts the concatenation, dropping the last members' blocks first; that is
rarely what you want, so :func:`truncate_dimensions` refuses ensembles.
"""

from __future__ import annotations

from sentence_transformers import SentenceTransformer

from st_static.compression.ensemble import BlockNormalize
from st_static.compression.model_parts import float_pipeline, rebuild
from st_static.model.static_word_average import StaticWordAverage


def truncate_dimensions(model: SentenceTransformer, dim: int) -> SentenceTransformer:
    """Keep the first ``dim`` dimensions of a static model's table (dequantising a compressed table).

    Raises:
        ValueError: If ``dim`` is not between 1 and the model's dimension, or the model is an ensemble.
    """
    module, rest = float_pipeline(model)
    if any(isinstance(later, BlockNormalize) for later in rest):
        raise ValueError("Truncating an ensemble would drop whole member blocks; truncate the members instead.")
    if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= module.embedding_dim:
        raise ValueError(f"dim must be an integer between 1 and {module.embedding_dim}, got {dim!r}.")
    metadata = module.metadata.updated(truncated_from_dim=module.embedding_dim)
    truncated = StaticWordAverage(module.tokenizer, module.word_vectors.detach()[:, :dim], metadata=metadata)
    result = rebuild(model, [truncated, *rest])
    if result.truncate_dim is not None and result.truncate_dim >= dim:
        result.truncate_dim = None
    return result
