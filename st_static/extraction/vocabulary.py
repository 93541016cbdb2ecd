"""Choosing the vocabulary: the most frequent words of the corpus (or teacher tokens for space-less scripts)."""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tokenizers import Tokenizer
from tqdm.auto import tqdm

from st_static.model.languages import is_spaceless_token
from st_static.model.tokenization import split_words, word_normalizer, word_pre_tokenizer
from st_static.settings import ExtractionSettings
from st_static.teachers import SENTENCEPIECE_SPACE, WORDPIECE_CONTINUATION

logger = logging.getLogger(__name__)


@dataclass
class Vocabulary:
    """The words of a table, most frequent first, with the number of corpus sentences holding each."""

    words: list[str]
    sentence_counts: list[int]
    lowercase: bool
    too_rare: dict[str, int] = field(default_factory=dict)
    """Candidate words left out because they occur in fewer than ``min_sentences`` sentences."""
    per_language: dict[str, int] = field(default_factory=dict)
    """A cross-lingual vocabulary: the entries each language gave (a word of several languages counts for each)."""

    def __len__(self) -> int:
        return len(self.words)

    def report(self, examples: int = 20) -> dict[str, object]:
        """A JSON-able summary for logs and stats files."""
        rare = sorted(self.too_rare.items(), key=lambda item: -item[1])
        return {
            "size": len(self.words),
            "lowercase": self.lowercase,
            "left_out_too_rare": len(self.too_rare),
            "left_out_examples": [word for word, _ in rare[:examples]],
            **({"per_language": dict(self.per_language)} if self.per_language else {}),
        }


def count_word_sentences(sentences: Iterable[str], lowercase: bool = True) -> Counter[str]:
    """Count, for every word, the number of sentences it occurs in (words as the model splits them).

    Args:
        sentences: The corpus.
        lowercase: Lowercase before counting (English); ``False`` keeps case (German).
    """
    normalizer = word_normalizer(lowercase)
    pre_tokenizer = word_pre_tokenizer()
    counts: Counter[str] = Counter()
    for sentence in tqdm(sentences, desc="Counting words", unit=" sentences", mininterval=2.0):
        words = {word for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(sentence))}
        counts.update(words)
    return counts


def count_teacher_token_sentences(sentences: Iterable[str], teacher_tokenizer: Tokenizer) -> Counter[str]:
    """Count the teacher tokens of space-less scripts (Chinese, Japanese) by the sentences holding them.

    Sub-word markers (``##``, the SentencePiece space) are stripped and a token holding punctuation is split
    where the word pipeline splits text (``・アメリカ`` counts as ``アメリカ``; ``・`` alone is dropped), so every
    counted entry is a single word the saved pipeline can look up. Only pieces with a Chinese or Japanese
    character are counted.
    """
    counts: Counter[str] = Counter()
    batch: list[str] = []
    pieces_of: dict[str, list[str]] = {}

    def pieces(token: str) -> list[str]:
        if token not in pieces_of:
            text = token.removeprefix(WORDPIECE_CONTINUATION).replace(SENTENCEPIECE_SPACE, " ")
            pieces_of[token] = [piece for piece in split_words(text) if is_spaceless_token(piece)]
        return pieces_of[token]

    def flush() -> None:
        for encoding in teacher_tokenizer.encode_batch(batch, add_special_tokens=False):
            counts.update({piece for token in encoding.tokens for piece in pieces(token)})
        batch.clear()

    for sentence in tqdm(sentences, desc="Counting teacher tokens", unit=" sentences", mininterval=2.0):
        batch.append(sentence)
        if len(batch) == 4096:
            flush()
    if batch:
        flush()
    return counts


def build_vocabulary(
    sentence_counts: Counter[str],
    size: int,
    min_sentences: int = ExtractionSettings.min_sentences,
    lowercase: bool = True,
    word_list: Sequence[str] | None = None,
    wordfreq_weight: float = ExtractionSettings.wordfreq_weight,
    language: str = "en",
) -> Vocabulary:
    """Pick the vocabulary from sentence counts.

    Args:
        sentence_counts: Sentences per word, from :func:`count_word_sentences` (and/or teacher tokens).
        size: The largest vocabulary to keep.
        min_sentences: Words in fewer sentences are left out (their vectors would be noise) and reported;
            they fall back to a known prefix at inference.
        lowercase: Whether the counts were lowercased.
        word_list: If given, the candidates are these words (in this order of preference) instead of the
            corpus's most frequent words.
        wordfreq_weight: Blend the corpus frequency with ``wordfreq``'s frequency for ``language``:
            candidates are ranked by ``(1 - w) * log p_corpus + w * log p_wordfreq``. Needs the ``extract`` extra.
        language: Language code for ``wordfreq``.

    Raises:
        ValueError: If no candidate reaches ``min_sentences``, or an argument is out of range.
    """
    if size < 1:
        raise ValueError(f"The vocabulary size must be positive, got {size}.")
    if min_sentences < 1:
        raise ValueError(f"min_sentences must be at least 1, got {min_sentences}.")
    if not 0.0 <= wordfreq_weight <= 1.0:
        raise ValueError(f"wordfreq_weight must lie in [0, 1], got {wordfreq_weight}.")
    if word_list is not None:
        candidates = list(dict.fromkeys(word.lower() if lowercase else word for word in word_list))
    else:
        candidates = sorted(sentence_counts, key=lambda word: (-sentence_counts[word], word))
        if wordfreq_weight > 0:
            candidates = _blend_with_wordfreq(candidates, sentence_counts, wordfreq_weight, language)
    words: list[str] = []
    counts: list[int] = []
    too_rare: dict[str, int] = {}
    for word in candidates:
        count = sentence_counts.get(word, 0)
        if count < min_sentences:
            too_rare[word] = count
        elif len(words) < size:
            words.append(word)
            counts.append(count)
    if not words:
        raise ValueError(
            f"No word occurs in at least {min_sentences} sentences of the corpus: the corpus is too small "
            f"or does not cover the word list ({len(candidates)} candidates)."
        )
    if too_rare:
        logger.warning(
            "%d candidate words occur in fewer than %d sentences and are left out (e.g. %s).",
            len(too_rare),
            min_sentences,
            ", ".join(list(too_rare)[:5]),
        )
    return Vocabulary(words=words, sentence_counts=counts, lowercase=lowercase, too_rare=too_rare)


def _blend_with_wordfreq(
    candidates: list[str], sentence_counts: Counter[str], weight: float, language: str
) -> list[str]:
    try:
        from wordfreq import word_frequency
    except ImportError as error:
        raise ImportError('Blending with word frequencies needs wordfreq: pip install "st-static[extract]"') from error
    total = sum(sentence_counts.values()) or 1
    floor = 1e-9

    def score(word: str) -> float:
        corpus_log = math.log(max(sentence_counts[word] / total, floor))
        wordfreq_log = math.log(max(word_frequency(word, language), floor))
        return (1 - weight) * corpus_log + weight * wordfreq_log

    return sorted(candidates, key=lambda word: (-score(word), word))
