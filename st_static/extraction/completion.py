"""Complete a table with words its corpus lacks: every-day words of the language, or the teacher's own tokens.

A corpus of a narrow domain misses words a user's text holds: an English corpus of older prose has no "obama" or
"facebook", and a word in fewer than ``min_sentences`` sentences gets no row and falls back to a prefix;
Chinese/Japanese words fall apart into single characters. Each missing candidate (the language's most frequent
words from ``wordfreq``, or the teacher's Chinese/Japanese tokens) is encoded by the teacher on its own (a one-word
"sentence", same prompt and offsets as the extraction) and mapped into the table's space by a ridge-regression map
fitted on the candidates that have both a corpus vector and an isolated one. A word encoded alone is not what a
word in context gives (no context, different position), so the map, not the raw isolated vector, goes into the
table.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer

from st_static.errors import MissingExtraError
from st_static.extraction.extract import extract_word_vectors
from st_static.extraction.ridge import RidgeMap, mean_cosine
from st_static.model.languages import (
    CHINESE_LANGUAGES,
    HANGUL_RANGES,
    JAPANESE_LANGUAGES,
    KANA_RANGES,
    in_ranges,
    is_spaceless_token,
)
from st_static.model.static_word_average import StaticWordAverage
from st_static.model.tokenization import build_word_tokenizer, split_words
from st_static.teachers import strip_subword_markers
from st_static.tensors import to_numpy

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
    result = extract_word_vectors(
        teacher, list(tokens), word_tokenizer, prompt=prompt, batch_tokens=batch_tokens, description="Encoding words"
    )
    return result.word_vectors, result.occurrences > 0


def complete_vocabulary(
    module: StaticWordAverage,
    teacher: SentenceTransformer,
    candidates: Sequence[str],
    *,
    prompt: str = "",
    held_out: float = 0.1,
    seed: int = 0,
    min_known: int = 100,
    skip_when_too_few: bool = False,
) -> tuple[StaticWordAverage, dict[str, Any]]:
    """Add the ``candidates`` missing from ``module``'s raw (teacher-dimension) table.

    Every candidate is encoded alone by the teacher; a ridge map fitted on the candidates the table already has
    (isolated vector -> corpus vector) takes the missing ones into the table's space.

    Args:
        module: The extraction-stage module (rows in the teacher's space).
        teacher: The teacher that module was extracted from.
        candidates: Words (or tokens) to add when missing, most useful first; each must be one word for the
            table's tokenizer (others are skipped).
        prompt: The teacher's prompt, as in the extraction.
        held_out: Share of the known candidates kept out of the map's fit to measure it (reported, then refitted
            on all).
        seed: For the held-out split.
        min_known: Fewest known candidates to fit the map on.
        skip_when_too_few: With fewer, return ``module`` unchanged with a warning (and ``skipped`` in the report)
            instead of raising: for optional completion of small corpora.

    Returns:
        The completed module (``module`` itself when nothing is missing) and a report of what was done.

    Raises:
        ValueError: If fewer than ``min_known`` candidates are in the table (unless ``skip_when_too_few``).
    """
    teacher_tokenizer: Tokenizer = teacher[0].tokenizer._tokenizer
    vocabulary = module.vocabulary
    row_of = {word: row for row, word in enumerate(vocabulary)}
    fold = str.lower if module.lowercase else str
    candidates = list(dict.fromkeys(fold(word) for word in candidates if split_words(word) == [word]))
    known = [word for word in candidates if word in row_of]
    missing = [word for word in candidates if word not in row_of]
    report: dict[str, Any] = {"candidates": len(candidates), "in_table": len(known), "added": 0}
    if not missing:
        return module, report
    if len(known) < min_known:
        problem = (
            f"only {len(known)} of {len(candidates)} candidate words have corpus vectors; at least {min_known} are "
            "needed to map isolated vectors into the table"
        )
        if skip_when_too_few:
            logger.warning("Vocabulary completion skipped: %s (a larger corpus gives them).", problem)
            return module, {**report, "skipped": problem}
        raise ValueError(f"{problem[0].upper()}{problem[1:]}. Use a larger corpus.")

    vectors, encoded = isolated_token_vectors(teacher, known + missing, prompt=prompt)
    known_vectors, known_ok = vectors[: len(known)], encoded[: len(known)]
    table = to_numpy(module.word_vectors)
    source = known_vectors[known_ok]
    target = table[[row_of[word] for word, ok in zip(known, known_ok, strict=True) if ok]]

    rng = np.random.default_rng(seed)
    order = rng.permutation(len(source))
    test = order[: int(len(order) * held_out)]
    train = order[int(len(order) * held_out) :]
    if len(test) >= 10:
        probe = RidgeMap.fit(source[train], target[train])
        report["held_out_cosine"] = {
            "isolated": mean_cosine(source[test], target[test]),
            "mapped": mean_cosine(probe(source[test]), target[test]),
        }
    mapping = RidgeMap.fit(source, target)

    new_vectors, new_ok = vectors[len(known) :], encoded[len(known) :]
    added = [word for word, ok in zip(missing, new_ok, strict=True) if ok]
    completed_table = np.concatenate([table, mapping(new_vectors[new_ok])], axis=0)
    metadata = module.metadata.with_stage("completion", vocab_size=len(vocabulary) + len(added))
    completed = StaticWordAverage.from_word_vectors(
        [*vocabulary, *added],
        completed_table,
        teacher_tokenizer=teacher_tokenizer,
        lowercase=module.lowercase,
        metadata=metadata,
    )
    report.update({"added": len(added), "fitted_on": len(source), "examples": added[:20]})
    logger.info("Completed the table with %d words the corpus lacked.", len(added))
    return completed, report


def complete_spaceless_vocabulary(
    module: StaticWordAverage,
    teacher: SentenceTransformer,
    languages: list[str],
    prompt: str = "",
    max_new_tokens: int | None = None,
) -> tuple[StaticWordAverage, dict[str, Any]]:
    """Add the teacher's Chinese/Japanese tokens missing from ``module``'s raw table (:func:`complete_vocabulary`).

    Only the languages of ``languages`` written without spaces are completed; ``max_new_tokens`` caps how many
    tokens are added (the most probable first).
    """
    spaceless = {language for language in languages if language in JAPANESE_LANGUAGES | CHINESE_LANGUAGES}
    candidates = teacher_spaceless_tokens(teacher[0].tokenizer._tokenizer, spaceless)
    if max_new_tokens is not None:
        in_table = set(module.vocabulary)
        missing = [token for token in candidates if token not in in_table][:max_new_tokens]
        kept = set(missing)
        candidates = [token for token in candidates if token in in_table or token in kept]
    completed, report = complete_vocabulary(module, teacher, candidates, prompt=prompt)
    report["teacher_tokens"] = report.pop("candidates")
    return completed, report


def frequent_words(language: str, count: int) -> list[str]:
    """The ``count`` most frequent words of ``language`` (``wordfreq``), most frequent first, without its digit
    placeholders (wordfreq writes every digit as ``0``: ``a00``, ``m000`` stand for many tokens, not a word).

    Raises:
        MissingExtraError: If wordfreq is missing (``pip install "st-static[extract]"``).
    """
    try:
        from wordfreq import top_n_list
    except ImportError as error:
        raise MissingExtraError(
            'Vocabulary completion (--complete-words, on by default) needs wordfreq: pip install "st-static[extract]" '
            "(or build with --complete-words 0)."
        ) from error
    return [
        word
        for word in top_n_list(language, count)
        if split_words(word) == [word] and not any(character.isdigit() for character in word)
    ]
