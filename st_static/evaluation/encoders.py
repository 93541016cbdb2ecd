"""Turning any model ``SentenceTransformer`` loads into a text -> vector function for the evaluations."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from sentence_transformers.sentence_transformer.modules import StaticEmbedding

from st_static.model.empty_text import is_empty_text_dense
from st_static.model.inference import encode as static_encode
from st_static.model.inference import static_module

logger = logging.getLogger(__name__)

Encoder = Callable[[Sequence[str]], np.ndarray]
"""A function from a list of texts to a ``(len(texts), dim)`` float array."""

FAST_PATH_PROBE = 64


def is_static_pipeline(model: SentenceTransformer) -> bool:
    """Whether ``model`` is an st-static pipeline (word table, then ``Normalize``) that the fast path reproduces.

    True for models saved by st-static (also when loaded by a bare ``SentenceTransformer``, with the empty text's
    ``Dense`` of a table with fallback rows between the table and ``Normalize``); False for other
    static models (model2vec, ST's own ``StaticEmbedding`` over a subword tokenizer) and for transformers.
    """
    if not isinstance(model, SentenceTransformer):
        return False
    modules = list(model)
    if len(modules) == 3 and is_empty_text_dense(modules[1]):  # a table with fallback rows: the empty text's Dense
        modules = [modules[0], modules[2]]
    if len(modules) != 2 or not isinstance(modules[0], StaticEmbedding) or not isinstance(modules[1], Normalize):
        return False
    try:
        static_module(model)
    except (TypeError, ValueError):
        return False
    return True


def model_encoder(
    model: SentenceTransformer | Encoder,
    prompt: str | None = None,
    batch_size: int = 64,
    fast: bool = True,
) -> Encoder:
    """A function embedding texts with ``model``, deduplicating them first.

    Args:
        model: Any model ``SentenceTransformer`` loads, or already an encoder function.
        prompt: Text prepended to every input (teachers such as multilingual-e5 need ``"query: "``); without one,
            the model's default prompt (``default_prompt_name``), as ``model.encode`` does.
        batch_size: Batch size for ``SentenceTransformer.encode`` (unused on the fast path).
        fast: Use :func:`st_static.encode` for st-static pipelines. It gives the same vectors as ``model.encode``,
            checked on the first texts; where they differ, the encoder uses ``model.encode`` (with a warning).

    Returns:
        The encoder.
    """
    if not isinstance(model, SentenceTransformer):
        if not callable(model):
            raise TypeError(f"Expected a SentenceTransformer or a callable, got {type(model).__name__}.")
        return _deduplicated(model)

    def encode_model(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(
            model.encode(
                list(texts),
                prompt=prompt or None,
                batch_size=batch_size,
                convert_to_numpy=True,
                show_progress_bar=False,
            ),
            dtype=np.float32,
        )

    if fast and is_static_pipeline(model):
        fast_path: bool | None = None  # None until the first texts show whether it gives model.encode's vectors

        def encode_static(texts: Sequence[str]) -> np.ndarray:
            nonlocal fast_path
            if fast_path is False:
                return encode_model(texts)
            vectors = static_encode(model, list(texts), prompt=prompt or None)
            if fast_path is None:
                probe = list(texts[:FAST_PATH_PROBE])
                fast_path = bool(np.allclose(vectors[: len(probe)], encode_model(probe), atol=1e-5))
                if not fast_path:
                    logger.warning("st_static.encode disagrees with model.encode on this model; using model.encode.")
                    return encode_model(texts)
            return vectors

        return _deduplicated(encode_static)
    return _deduplicated(encode_model)


def _deduplicated(encoder: Encoder) -> Encoder:
    """Wrap ``encoder`` so that each distinct text is embedded once (STS files repeat many sentences)."""

    def encode_unique(texts: Sequence[str]) -> np.ndarray:
        unique_texts = list(dict.fromkeys(texts))
        if len(unique_texts) == len(texts):
            return np.asarray(encoder(list(texts)), dtype=np.float32)
        unique_vectors = np.asarray(encoder(unique_texts), dtype=np.float32)
        row_of = {text: row for row, text in enumerate(unique_texts)}
        return unique_vectors[[row_of[text] for text in texts]]

    return encode_unique


def lookup_encoder(vectors_by_text: dict[str, np.ndarray]) -> Encoder:
    """An encoder that reads precomputed vectors (e.g. embeddings computed in another process).

    Raises:
        KeyError: At call time, naming the first text without a vector.
    """

    def encode_lookup(texts: Sequence[str]) -> np.ndarray:
        missing = next((text for text in texts if text not in vectors_by_text), None)
        if missing is not None:
            raise KeyError(f"No precomputed vector for the text {missing!r:.80}.")
        return np.stack([vectors_by_text[text] for text in texts]).astype(np.float32, copy=False)

    return encode_lookup


def cosine_similarities(embeddings1: np.ndarray, embeddings2: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of two ``(n, d)`` arrays; a zero vector has similarity 0 with anything."""
    norms1 = np.linalg.norm(embeddings1, axis=1)
    norms2 = np.linalg.norm(embeddings2, axis=1)
    dots = np.einsum("ij,ij->i", embeddings1, embeddings2)
    denominator = norms1 * norms2
    return np.divide(dots, denominator, out=np.zeros_like(dots), where=denominator > 0)


def unit_rows(embeddings: np.ndarray) -> np.ndarray:
    """L2-normalise rows; zero rows stay zero."""
    norms = np.linalg.norm(embeddings, axis=1, keepdims=True)
    return np.divide(embeddings, norms, out=np.zeros_like(embeddings), where=norms > 0)
