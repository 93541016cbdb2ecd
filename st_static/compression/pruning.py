"""Vocabulary pruning: keep the most frequent words; the others fall back to their longest kept prefix."""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer

from st_static.compression.model_parts import float_pipeline, rebuild
from st_static.model.metadata import ModelMetadata, PruningRecord
from st_static.model.static_word_average import StaticWordAverage
from st_static.model.tokenization import (
    CONTINUATION_PREFIX,
    DEFAULT_MAX_WORD_CHARS,
    add_fallback_layout,
    add_piece_layout,
    build_word_tokenizer,
)

logger = logging.getLogger(__name__)

WORD_COUNTS_KEY = "word_counts"  # the ranking's name when the metadata's word_counts ranked the words
Frequencies = Mapping[str, float] | Sequence[str] | Sequence[float]


def continuation_characters(tokenizer: Tokenizer) -> set[str]:
    """The characters a word tokenizer accepts inside unknown words (its ``##c`` pieces)."""
    vocab = tokenizer.get_vocab(with_added_tokens=False)
    prefix = len(CONTINUATION_PREFIX)
    return {token[prefix:] for token in vocab if token.startswith(CONTINUATION_PREFIX) and len(token) == prefix + 1}


def max_word_chars(tokenizer: Tokenizer) -> int:
    """The longest word a word tokenizer looks up (longer words are dropped)."""
    model = json.loads(tokenizer.to_str()).get("model") or {}
    return int(model.get("max_input_chars_per_word", DEFAULT_MAX_WORD_CHARS))


def read_frequencies(path: str | os.PathLike[str]) -> dict[str, float] | list[str]:
    """Read a frequency file: ``word<TAB>count`` lines, or one word per line, most frequent first.

    Raises:
        ValueError: Naming the file: if it cannot be read or is not UTF-8, a count is not a finite number, or the
            file mixes the two forms or is empty.
    """
    counts: dict[str, float] = {}
    ranked: list[str] = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{path}: the frequency file does not exist.") from None
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{path}: the frequency file is not UTF-8 text (byte {error.start}: {error.reason})."
        ) from None
    except OSError as error:
        raise ValueError(f"{path}: the frequency file cannot be read ({error.strerror or error}).") from None
    for line_number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        if "\t" in line:
            word, _, count = line.partition("\t")
            try:
                value = float(count)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise ValueError(f"{path}:{line_number}: count {count!r} is not a finite number.")
            counts[word] = value
        else:
            ranked.append(line.strip())
    if counts and ranked:
        raise ValueError(f"{path}: mixes 'word<TAB>count' lines with bare words; use one form.")
    if not counts and not ranked:
        raise ValueError(f"{path}: no words.")
    return counts or ranked


def frequency_order(
    vocabulary: Sequence[str],
    frequencies: Frequencies | None = None,
    metadata: ModelMetadata | Mapping[str, object] | None = None,
) -> tuple[np.ndarray, str]:
    """Rows of ``vocabulary``, most frequent first, and what the order is based on.

    Args:
        vocabulary: The words in row order.
        frequencies: A word -> count mapping, a list of words most frequent first, or a list of counts aligned
            with ``vocabulary``. Words it does not mention come after the others, in row order.
        metadata: Model metadata (a ``ModelMetadata`` or its JSON object); its ``word_counts`` (counts aligned
            with rows) is used when ``frequencies`` is not given. Without either, row order is frequency order
            (the extractor writes words most frequent first).

    Returns:
        ``(rows, source)`` with ``source`` one of ``"frequencies"``, ``"word_counts"``, ``"row order"``.

    Raises:
        ValueError: If aligned counts do not have one value per word.
    """
    num_words = len(vocabulary)
    source = "frequencies"
    if metadata is not None and not isinstance(metadata, ModelMetadata):
        metadata = ModelMetadata.from_dict(metadata)
    word_counts = None if metadata is None else metadata.word_counts
    if frequencies is None and word_counts is not None:
        frequencies, source = word_counts, WORD_COUNTS_KEY
    if frequencies is None:
        return np.arange(num_words), "row order"
    if isinstance(frequencies, Mapping):
        scores = np.array([float(frequencies.get(word, -np.inf)) for word in vocabulary])
    else:
        items = list(frequencies)
        if all(isinstance(item, str) for item in items):
            position = {word: index for index, word in reversed(list(enumerate(items)))}
            scores = np.array([-float(position.get(word, np.inf)) for word in vocabulary])
        else:
            if len(items) != num_words:
                raise ValueError(
                    f"{source} has {len(items)} counts but the vocabulary has {num_words} words; "
                    "aligned counts need one value per row."
                )
            scores = np.asarray(items, dtype=np.float64)
    return np.argsort(-scores, kind="stable"), source


def prune_vocabulary(
    model: SentenceTransformer, vocab_size: int, frequencies: Frequencies | None = None
) -> SentenceTransformer:
    """Keep the ``vocab_size`` most frequent words of a static model and rebuild its tokenizer.

    A dropped word now falls back through the prefix rule (its longest kept prefix, e.g. ``tokenise`` ->
    ``token``), or is dropped if no prefix is kept. Rows are re-ordered most frequent first; fallback rows are kept
    after them. The table comes back as float32 (a compressed input is dequantised): quantise after pruning.

    Args:
        model: A static ``SentenceTransformer``.
        vocab_size: How many words to keep.
        frequencies: See :func:`frequency_order`; defaults to the metadata's ``word_counts``, else row order.

    Returns:
        The pruned model; its metadata records ``vocab_size`` and ``pruning``.

    Raises:
        ValueError: If ``vocab_size`` is not a positive integer.
    """
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int | np.integer) or vocab_size < 1:
        raise ValueError(f"vocab_size must be a positive integer, got {vocab_size!r}.")
    module, rest = float_pipeline(model)
    vocabulary = module.vocabulary
    num_words = module.num_vocabulary_words
    order, source = frequency_order(vocabulary, frequencies, module.metadata)
    if vocab_size >= num_words:
        logger.warning("vocab_size=%d keeps all %d words; nothing is pruned.", vocab_size, num_words)
    kept = order[: int(vocab_size)]
    words = [vocabulary[row] for row in kept]
    tokenizer = build_word_tokenizer(
        words,
        lowercase=module.lowercase,
        extra_characters=continuation_characters(module.tokenizer),
        max_word_chars=max_word_chars(module.tokenizer),
    )
    metadata = module.metadata.updated(
        vocab_size=len(words),
        pruning=PruningRecord(kept_words=len(words), original_words=num_words, ranked_by=source),
    )
    counts = metadata.word_counts
    if counts is not None and len(counts) == num_words:
        metadata.word_counts = [counts[row] for row in kept]
    vectors = module.word_vectors.detach()[kept.tolist()]
    if module.num_piece_rows:  # the subword pieces stay, after the kept words
        tokenizer = add_piece_layout(tokenizer, module.pieces)
        vectors = torch.cat([vectors, module.word_vectors.detach()[module.piece_rows.start : module.piece_rows.stop]])
    if module.fallback is not None:  # the fallback rows stay, after the kept words (and pieces)
        tokenizer = add_fallback_layout(tokenizer, module.fallback_characters)
        vectors = torch.cat([vectors, module.word_vectors.detach()[module.fallback.sentinel_row :]])
    pruned = StaticWordAverage(tokenizer, vectors, metadata=metadata)
    return rebuild(model, [pruned, *rest])
