"""Rows for the words of a user's documents that a finished table lacks (``st-static extend``), from the teacher.

The extraction stage's method, on the documents: the teacher reads up to N of the shortest document sentences
holding each new word, and a word's vector is the mean of its token vectors there
(:func:`~st_static.extraction.extract.extract_word_vectors`). The same pass gives vectors of the table's own words
that occur in those sentences, and a ridge map fitted from those vectors to the words' rows in the table
(:class:`~st_static.extraction.ridge.RidgeMap`) carries the new words into the table's space: through whatever the
build's PCA/ABTT and distillation did, without its work folder. When the documents hold too few known words, the
table's most frequent words encoded alone (as completion does) join the fit.

A word's norm is its weight in a text's mean; the new rows are rescaled (:data:`NORM_CHOICES`).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer

from st_static.errors import StStaticError
from st_static.extraction.completion import isolated_token_vectors
from st_static.extraction.extract import extract_word_vectors
from st_static.extraction.ridge import RidgeMap, mean_cosine
from st_static.extraction.selection import select_sentences
from st_static.model.static_word_average import StaticWordAverage
from st_static.model.tokenization import (
    CONTINUATION_PREFIX,
    TRAINING_FORM,
    addable_words,
    build_word_tokenizer,
    token_targets,
    word_normalizer,
    word_pre_tokenizer,
)
from st_static.settings import ExtractionSettings
from st_static.tensors import to_numpy

logger = logging.getLogger(__name__)

NormChoice = Literal["rare", "median", "mapped"]
NORM_CHOICES: tuple[NormChoice, ...] = ("rare", "median", "mapped")
"""How new rows are scaled: ``rare``, to the median norm of the fitted known words seen at most
:data:`RARE_COUNT` times in the documents (words as rare there as the new ones); ``median``, to the median norm of
the table's word rows; ``mapped``, as the map gives them."""
RARE_COUNT = 5
"""Known words seen at most this many times in the documents set the ``rare`` norm."""
MIN_KNOWN = 200
"""Fewer known words with a document vector than this: the table's frequent words, encoded alone, join the fit."""
FIT_WORDS = 2000
"""How many of the table's most frequent words are encoded alone when the documents hold too few known words."""
_SENTENCE_END = re.compile(r"(?<=[.!?\u2026])[\"'\u201d\u2019)\]]*\s+")


class ExtendError(StStaticError, ValueError):
    """The table cannot take the documents' words (too few of its words to map the teacher's space into it)."""


@dataclass
class DocumentWords:
    """The words of the documents, split and normalised as the table reads them, against the table."""

    new: list[str]
    """Words the table lacks, seen at least ``min_count`` times, most frequent first."""
    new_counts: list[int]
    """Their occurrences in the documents."""
    known: list[str]
    """The table's vocabulary words that occur in the documents (through any form that reads their row)."""
    known_counts: dict[str, int] = field(default_factory=dict)
    """Occurrences of each known word in the documents."""


@dataclass
class NewRows:
    """The new words that got a vector, their rows in the table's space, and what was measured."""

    words: list[str]
    counts: list[int]
    rows: np.ndarray
    report: dict[str, Any]


def count_document_words(texts: Iterable[str], lowercase: bool, form: str = TRAINING_FORM) -> Counter[str]:
    """Occurrences of every word of ``texts``, split and normalised as a table reads them (``form``: NFKC for a table
    with fallback rows, :func:`~st_static.model.tokenization.normalization_form`; lowercased for a lowercase table;
    split on non-letters: :func:`~st_static.model.tokenization.split_words`)."""
    normalizer = word_normalizer(lowercase, form=form)
    pre_tokenizer = word_pre_tokenizer()
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(word for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text)))
    return counts


def is_number(word: str) -> bool:
    """Whether ``word`` is made of digits (and other number characters) only."""
    return all(unicodedata.category(char)[0] == "N" for char in word)


def document_words(
    module: StaticWordAverage, counts: Counter[str], min_count: int = 2, numbers: bool = False
) -> DocumentWords:
    """Sort the documents' words into those the table lacks (and can add) and those it has.

    Args:
        module: The table.
        counts: :func:`count_document_words` of the documents.
        min_count: The fewest occurrences that give a new word a row.
        numbers: Also add words made of number characters only (``2024``, ``1.13`` splits into ``1`` and ``13``).

    Raises:
        ValueError: If ``min_count`` is below 1.
    """
    if min_count < 1:
        raise ValueError(f"min_count must be at least 1, got {min_count}.")
    vocab = module.tokenizer.get_vocab(with_added_tokens=False)
    targets, _ = token_targets(module.tokenizer)
    words = module.vocabulary
    known_counts: Counter[str] = Counter()
    for word, count in counts.items():
        token_id = vocab.get(word)
        row = targets[token_id] if token_id is not None and not word.startswith(CONTINUATION_PREFIX) else -1
        if 0 <= row < len(words):
            known_counts[words[row]] += count
    frequent = sorted(
        (word for word, count in counts.items() if count >= min_count and (numbers or not is_number(word))),
        key=lambda word: (-counts[word], word),
    )
    new = addable_words(module.tokenizer, frequent)
    known = sorted(known_counts, key=lambda word: (-known_counts[word], word))
    return DocumentWords(
        new=new, new_counts=[counts[word] for word in new], known=known, known_counts=dict(known_counts)
    )


def document_sentences(texts: Iterable[str], max_words: int = ExtractionSettings.max_words) -> list[str]:
    """The sentences of ``texts`` (a document per line): each text cut after ``.``, ``!``, ``?`` or ``…`` and
    whitespace, and a sentence still longer than half of ``max_words`` whitespace-separated words cut into runs of
    that many (the extraction never reads sentences of more than ``max_words`` words)."""
    run = max(1, max_words // 2)
    sentences: list[str] = []
    for text in texts:
        for sentence in _SENTENCE_END.split(text):
            tokens = sentence.split()
            sentences.extend(" ".join(tokens[start : start + run]) for start in range(0, len(tokens), run))
    return sentences


def norm_targets(
    table_norms: np.ndarray, fitted_norms: np.ndarray, fitted_counts: np.ndarray
) -> dict[NormChoice, float | None]:
    """The norm each choice of :data:`NORM_CHOICES` scales rows to (``None``: keep the map's).

    Args:
        table_norms: The norms of the table's word rows.
        fitted_norms: The norms of the rows of the known words the map was fitted on.
        fitted_counts: Those words' occurrences in the documents.
    """
    rare = fitted_norms[fitted_counts <= RARE_COUNT]
    return {
        "rare": float(np.median(rare if rare.size >= 10 else fitted_norms)),
        "median": float(np.median(table_norms)),
        "mapped": None,
    }


def _scaled(rows: np.ndarray, norm: float | None) -> np.ndarray:
    if norm is None:
        return rows
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12) * norm


def new_word_rows(
    module: StaticWordAverage,
    teacher: SentenceTransformer,
    sentences: list[str],
    words: DocumentWords,
    *,
    prompt: str = "",
    sentences_per_word: int = ExtractionSettings.sentences_per_word,
    max_words: int = ExtractionSettings.max_words,
    batch_tokens: int = ExtractionSettings.batch_tokens,
    norm: NormChoice = "rare",
    min_known: int = MIN_KNOWN,
    fit_words: int = FIT_WORDS,
    held_out: float = 0.1,
    seed: int = 0,
) -> NewRows:
    """The rows of ``words.new`` in ``module``'s space, from the teacher's token vectors in ``sentences``.

    Args:
        module: The table (a float :class:`StaticWordAverage`).
        teacher: The teacher the table was distilled from.
        sentences: The documents' sentences (:func:`document_sentences`).
        words: :func:`document_words` of the documents.
        prompt: The prompt the teacher read the table's corpus with.
        sentences_per_word: The shortest sentences the teacher reads per new word (N).
        max_words: Sentences with more words are not read.
        batch_tokens: Teacher tokens per forward batch.
        norm: How the new rows are scaled (:data:`NORM_CHOICES`).
        min_known: Fewer known words with a vector: the table's frequent words encoded alone join the fit.
        fit_words: How many frequent words are then encoded alone.
        held_out: Share of the fitted known words held out to measure the map (then refitted on all).
        seed: For the held-out split.

    Returns:
        The new words that got a vector (a word only in sentences the teacher cut short gets none), with their rows.

    Raises:
        ValueError: If ``norm`` is unknown.
        ExtendError: If no document sentence holds a new word, or fewer than 2 of the table's words get a teacher
            vector to fit the map on.
    """
    if norm not in NORM_CHOICES:
        raise ValueError(f"norm must be one of {', '.join(NORM_CHOICES)}; got {norm!r}.")
    teacher_tokenizer: Tokenizer = teacher[0].tokenizer._tokenizer
    lowercase = module.lowercase
    new_tokenizer = build_word_tokenizer(words.new, teacher_tokenizer=teacher_tokenizer, lowercase=lowercase)
    selection = select_sentences(
        sentences, new_tokenizer, sentences_per_word=sentences_per_word, max_words=max_words, pca_sample_size=0
    )
    if not selection.sentences:
        raise ExtendError(f"No document sentence of at most {max_words} words holds a new word.")
    # The teacher reads the new words' sentences only; the known words in them get vectors from the same pass.
    vocabulary = [*words.new, *words.known]
    pass_tokenizer = build_word_tokenizer(vocabulary, teacher_tokenizer=teacher_tokenizer, lowercase=lowercase)
    result = extract_word_vectors(
        teacher,
        selection.sentences,
        pass_tokenizer,
        prompt=prompt,
        batch_tokens=batch_tokens,
        description="Encoding document sentences",
    )
    count = len(words.new)
    seen = result.occurrences > 0
    table = to_numpy(module.word_vectors.detach().float())[: module.num_vocabulary_words]
    row_of = {word: row for row, word in enumerate(module.vocabulary)}
    known_seen = [word for word, ok in zip(words.known, seen[count:], strict=True) if ok]
    source = result.word_vectors[count:][seen[count:]]
    target = table[[row_of[word] for word in known_seen]]
    fit_counts = np.array([words.known_counts[word] for word in known_seen], dtype=np.int64)
    report: dict[str, Any] = {"sentences": len(selection.sentences), "known_in_documents": len(known_seen)}
    fitted = set(known_seen)
    few = len(known_seen) < min_known
    alone = [word for word in module.vocabulary[:fit_words] if word not in fitted] if few else []
    if alone:  # none left when the documents hold every word of a small table
        vectors, encoded = isolated_token_vectors(teacher, alone, prompt=prompt)
        source = np.concatenate([source, vectors[encoded]])
        target = np.concatenate([target, table[[row_of[word] for word, ok in zip(alone, encoded, strict=True) if ok]]])
        fit_counts = np.concatenate([fit_counts, np.full(int(encoded.sum()), RARE_COUNT + 1, dtype=np.int64)])
        report["encoded_alone"] = int(encoded.sum())
        logger.info(
            "Only %d known words in the documents: fitting the map with %d words encoded alone too.",
            len(known_seen),
            int(encoded.sum()),
        )
    if len(source) < 2:
        raise ExtendError(
            f"The teacher gave a vector to {len(source)} of the table's {module.num_vocabulary_words} word(s); the map "
            "into the table's space needs at least 2: extend a table of more words."
        )
    order = np.random.default_rng(seed).permutation(len(source))
    test, train = order[: int(len(order) * held_out)], order[int(len(order) * held_out) :]
    if len(test) >= 10:
        probe = RidgeMap.fit(source[train], target[train])
        report["held_out_cosine"] = mean_cosine(probe(source[test]), target[test])
    mapping = RidgeMap.fit(source, target)
    added = [index for index in range(count) if seen[index]]
    rows = mapping(result.word_vectors[:count][seen[:count]])
    table_norms = np.linalg.norm(table, axis=1)
    target_norm = norm_targets(table_norms, np.linalg.norm(target, axis=1), fit_counts)[norm]
    rows = _scaled(rows, target_norm).astype(np.float32)
    report.update({"fitted_on": len(source), "norm": norm, "without_vector": count - len(added)})
    return NewRows(
        words=[words.new[index] for index in added],
        counts=[words.new_counts[index] for index in added],
        rows=rows,
        report=report,
    )
