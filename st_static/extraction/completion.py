"""Complete a cross-lingual table with the teacher's own Chinese and Japanese tokens.

Parallel corpora of a narrow domain (software strings, news) miss many every-day words of the languages written
without spaces: a token in fewer than ``min_sentences`` sentences gets no row, and the word falls apart into
single characters. Every teacher token of those scripts that the corpus left out is encoded by the teacher on
its own (a one-token "sentence", same prompt and offsets as the extraction) and mapped into the table's space
by a ridge-regression map fitted on the tokens that have both a corpus vector and an isolated one. A token
encoded alone is not what a token in context gives (no context, different position), so the map, not the raw
isolated vector, is what goes into the table.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer

from st_static.extraction.extract import extract_word_vectors
from st_static.languages import (
    CHINESE_LANGUAGES,
    HANGUL_RANGES,
    JAPANESE_LANGUAGES,
    KANA_RANGES,
    in_ranges,
    is_spaceless_token,
)
from st_static.static_word_average import StaticWordAverage
from st_static.teachers import strip_subword_markers
from st_static.tokenization import build_word_tokenizer, split_words

logger = logging.getLogger(__name__)


def _token_languages(token: str) -> set[str]:
    """Which space-less languages write ``token``: kana is Japanese, Han characters alone are either."""
    if any(in_ranges(char, KANA_RANGES) for char in token):
        return {"ja"}
    if any(in_ranges(char, HANGUL_RANGES) for char in token):
        return set()
    return {"ja", "zh"}


def teacher_spaceless_tokens(teacher_tokenizer: Tokenizer, languages: set[str] | frozenset[str]) -> list[str]:
    """The teacher's tokens of the space-less ``languages`` (``ja``, ``zh``), most probable first.

    Word-piece markers (``▁``, ``##``) are removed; tokens that are not one word for the table's tokenizer
    (mixed with punctuation or digits) are skipped. Unigram tokenizers are ordered by their log-probabilities,
    others by token id (frequent tokens first in BPE and WordPiece vocabularies).
    """
    wanted = {"ja" for language in languages if language in JAPANESE_LANGUAGES}
    wanted |= {"zh" for language in languages if language in CHINESE_LANGUAGES}
    if not wanted:
        return []
    unigram_scores = _unigram_scores(teacher_tokenizer)
    scores: dict[str, float] = {}
    for piece, token_id in teacher_tokenizer.get_vocab(with_added_tokens=False).items():
        token = strip_subword_markers(piece)
        if not token or not is_spaceless_token(token) or not (_token_languages(token) & wanted):
            continue
        if split_words(token) != [token]:
            continue
        score = unigram_scores.get(piece, -float(token_id))
        scores[token] = max(scores.get(token, float("-inf")), score)
    return sorted(scores, key=lambda token: (-scores[token], token))


def _unigram_scores(teacher_tokenizer: Tokenizer) -> dict[str, float]:
    """Log-probabilities of a Unigram (SentencePiece) tokenizer's pieces; empty for other models."""
    state = json.loads(teacher_tokenizer.to_str())
    if state.get("model", {}).get("type") != "Unigram":
        return {}
    return {entry[0]: float(entry[1]) for entry in state["model"].get("vocab", [])}


def isolated_token_vectors(
    teacher: SentenceTransformer, tokens: list[str], prompt: str = "", batch_tokens: int = 4096
) -> tuple[np.ndarray, np.ndarray]:
    """Each token encoded alone by the teacher (as the extraction does for a word in a sentence).

    Returns:
        ``(len(tokens), teacher_dim)`` vectors and a mask of the tokens that got one.
    """
    transformer = teacher[0]
    word_tokenizer = build_word_tokenizer(tokens, teacher_tokenizer=transformer.tokenizer._tokenizer, lowercase=False)
    result = extract_word_vectors(teacher, list(tokens), word_tokenizer, prompt=prompt, batch_tokens=batch_tokens)
    return result.word_vectors, result.occurrences > 0


@dataclass
class RidgeMap:
    """``y = (x - x_mean) @ weight + y_mean``, fitted by ridge regression."""

    weight: np.ndarray
    x_mean: np.ndarray
    y_mean: np.ndarray

    @classmethod
    def fit(cls, x: np.ndarray, y: np.ndarray, ridge: float = 1e-2) -> RidgeMap:
        """Fit on paired rows; ``ridge`` is relative to the mean eigenvalue of the centred ``x`` covariance."""
        if x.shape[0] != y.shape[0] or x.shape[0] < 2:
            raise ValueError(f"A map needs at least two paired rows, got {x.shape[0]} and {y.shape[0]}.")
        x = x.astype(np.float64)
        y = y.astype(np.float64)
        x_mean, y_mean = x.mean(axis=0), y.mean(axis=0)
        xc, yc = x - x_mean, y - y_mean
        gram = xc.T @ xc
        penalty = ridge * np.trace(gram) / gram.shape[0]
        weight = np.linalg.solve(gram + penalty * np.eye(gram.shape[0]), xc.T @ yc)
        return cls(weight=weight, x_mean=x_mean, y_mean=y_mean)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return ((x.astype(np.float64) - self.x_mean) @ self.weight + self.y_mean).astype(np.float32)


def _mean_cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return float((a * b).sum(axis=1).mean())


def complete_spaceless_vocabulary(
    module: StaticWordAverage,
    teacher: SentenceTransformer,
    languages: list[str],
    prompt: str = "",
    max_new_tokens: int | None = None,
    held_out: float = 0.1,
    seed: int = 0,
) -> tuple[StaticWordAverage, dict[str, Any]]:
    """Add the teacher's Chinese/Japanese tokens missing from ``module``'s raw (teacher-dimension) table.

    Args:
        module: The extraction-stage module (rows in the teacher's space).
        teacher: The teacher that module was extracted from.
        languages: The table's languages; only those written without spaces are completed.
        prompt: The teacher's prompt, as in the extraction.
        max_new_tokens: Most tokens to add (the most probable first); all by default.
        held_out: Share of the known tokens kept out of the map's fit to measure it (reported, then refitted
            on all).
        seed: For the held-out split.

    Returns:
        The completed module (``module`` itself when nothing is missing) and a report of what was done.
    """
    transformer = teacher[0]
    teacher_tokenizer: Tokenizer = transformer.tokenizer._tokenizer
    spaceless = {language for language in languages if language in JAPANESE_LANGUAGES | CHINESE_LANGUAGES}
    candidates = teacher_spaceless_tokens(teacher_tokenizer, spaceless)
    vocabulary = module.vocabulary
    row_of = {word: row for row, word in enumerate(vocabulary)}
    known = [token for token in candidates if token in row_of]
    missing = [token for token in candidates if token not in row_of]
    if max_new_tokens is not None:
        missing = missing[:max_new_tokens]
    report: dict[str, Any] = {"teacher_tokens": len(candidates), "in_table": len(known), "added": 0}
    if not missing:
        return module, report
    if len(known) < 100:
        raise ValueError(
            f"Only {len(known)} of the teacher's {'/'.join(sorted(spaceless))} tokens have corpus vectors; at least "
            "100 are needed to map isolated token vectors into the table. Use a larger parallel corpus."
        )

    vectors, encoded = isolated_token_vectors(teacher, known + missing, prompt=prompt)
    known_vectors, known_ok = vectors[: len(known)], encoded[: len(known)]
    table = module.word_vectors.detach().numpy()
    source = known_vectors[known_ok]
    target = table[[row_of[token] for token, ok in zip(known, known_ok, strict=True) if ok]]

    rng = np.random.default_rng(seed)
    order = rng.permutation(len(source))
    test = order[: int(len(order) * held_out)]
    train = order[int(len(order) * held_out) :]
    if len(test) >= 10:
        probe = RidgeMap.fit(source[train], target[train])
        report["held_out_cosine"] = {
            "isolated": _mean_cosine(source[test], target[test]),
            "mapped": _mean_cosine(probe(source[test]), target[test]),
        }
    mapping = RidgeMap.fit(source, target)

    new_vectors, new_ok = vectors[len(known) :], encoded[len(known) :]
    added = [token for token, ok in zip(missing, new_ok, strict=True) if ok]
    completed_table = np.concatenate([table, mapping(new_vectors[new_ok])], axis=0)
    metadata = dict(module.metadata)
    metadata["vocab_size"] = len(vocabulary) + len(added)
    metadata["stages"] = [*metadata.get("stages", []), "completion"]
    completed = StaticWordAverage.from_word_vectors(
        [*vocabulary, *added], completed_table, teacher_tokenizer=teacher_tokenizer, lowercase=False, metadata=metadata
    )
    report.update({"added": len(added), "fitted_on": len(source), "examples": added[:20]})
    logger.info("Completed the table with %d teacher tokens (%s).", len(added), "/".join(sorted(spaceless)))
    return completed, report
