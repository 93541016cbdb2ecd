"""Vocabulary and sentences of a cross-lingual table: several languages, one shared table.

Languages written with spaces contribute words (English lowercased, as in the paper; other languages
case-sensitive, e.g. German nouns), Chinese and Japanese contribute the teacher's most frequent tokens. A word
found in several languages (English "die", German "die") is one shared entry: its vector averages the
occurrences of all languages.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tokenizers import Tokenizer

from st_static.extraction.pair_sources import SourceFilter, read_language_pairs
from st_static.extraction.vocabulary import (
    Vocabulary,
    build_vocabulary,
    count_teacher_token_sentences,
    count_word_sentences,
)
from st_static.model.languages import LOWERCASED_LANGUAGES, SPACELESS_LANGUAGES

logger = logging.getLogger(__name__)


@dataclass
class MultilingualCorpus:
    """Sentences per language and translation pairs per language pair."""

    sentences: dict[str, list[str]]
    pairs: dict[tuple[str, str], list[tuple[str, str]]]

    def all_sentences(self) -> list[str]:
        """Every sentence once, language by language (the stream the teacher encodes)."""
        seen: set[str] = set()
        ordered: list[str] = []
        for sentences in self.sentences.values():
            for sentence in sentences:
                if sentence not in seen:
                    seen.add(sentence)
                    ordered.append(sentence)
        return ordered

    def sample_per_language(self, size: int, seed: int = 0) -> list[str]:
        """Up to ``size`` sentences of every language (the sentence-level PCA is fitted on all of them)."""
        rng = random.Random(seed)
        sample: list[str] = []
        for sentences in self.sentences.values():
            sample.extend(sentences if len(sentences) <= size else rng.sample(sentences, size))
        return sample


def read_multilingual_corpus(
    parallel_files: Sequence[str] | Mapping[str, Sequence[str]],
    languages: Sequence[str],
    monolingual: Mapping[str, Sequence[str]] | None = None,
    source_filter: SourceFilter | None = None,
) -> MultilingualCorpus:
    """Read translation-pair files (``first-language<TAB>other``) and optional monolingual sentences.

    Args:
        parallel_files: TSV files with a header; column 1 is the first language of ``languages`` (English in
            a file pairing English with another language), column 2 the other. Either ``{language: [files]}``
            (several files per language are read as one list of pairs, in order) or one file per language:
            file *i* pairs ``languages[0]`` with ``languages[i + 1]``.
        languages: All languages, the first one being the pivot of every parallel file, e.g. ``["en", "de"]``.
        monolingual: Extra sentences per language (e.g. an English corpus) used for vocabulary and extraction.
        source_filter: Which rows of files with an aligned ``.source.txt`` to read (see
            :mod:`st_static.extraction.pair_sources`).

    Raises:
        ValueError: If the files do not match the languages.
    """
    languages = list(languages)
    if len(languages) < 2:
        raise ValueError("A cross-lingual table needs at least two languages, e.g. --languages en,de.")
    if not isinstance(parallel_files, Mapping):
        if len(parallel_files) != len(languages) - 1:
            raise ValueError(
                f"{len(languages)} languages need {len(languages) - 1} parallel file(s) pairing {languages[0]} with "
                f"each other language, got {len(parallel_files)}."
            )
        parallel_files = {other: [path] for other, path in zip(languages[1:], parallel_files, strict=True)}
    if set(parallel_files) != set(languages[1:]) or not all(parallel_files.values()):
        raise ValueError(f"Every paired language of {languages} needs pair files, got {dict(parallel_files)}.")
    sentences: dict[str, list[str]] = {language: [] for language in languages}
    pairs: dict[tuple[str, str], list[tuple[str, str]]] = {}
    pivot = languages[0]
    files_in_order = {other: parallel_files[other] for other in languages[1:]}
    for (_, other), language_pairs in read_language_pairs(files_in_order, pivot, source_filter).items():
        pairs[(pivot, other)] = language_pairs
        sentences[pivot].extend(first for first, _ in language_pairs)
        sentences[other].extend(second for _, second in language_pairs)
    for language, extra in (monolingual or {}).items():
        sentences.setdefault(language, []).extend(extra)
    return MultilingualCorpus(
        sentences={language: list(dict.fromkeys(texts)) for language, texts in sentences.items()}, pairs=pairs
    )


def build_multilingual_vocabulary(
    corpus: MultilingualCorpus,
    teacher_tokenizer: Tokenizer,
    *,
    vocab_size: int,
    spaceless_vocab_size: int,
    min_sentences: int,
    language_vocab_sizes: Mapping[str, int] | None = None,
) -> tuple[Vocabulary, dict[str, list[str]]]:
    """Choose each language's vocabulary and merge them into one case-sensitive table vocabulary.

    Args:
        corpus: Sentences per language.
        teacher_tokenizer: The teacher's tokenizer (its tokens are the vocabulary of Chinese and Japanese).
        vocab_size: Largest vocabulary per language written with spaces.
        spaceless_vocab_size: Largest vocabulary per language written without spaces.
        min_sentences: Entries in fewer sentences of their language are left out (and reported).
        language_vocab_sizes: Largest vocabulary of the languages it names, in place of ``vocab_size`` or
            ``spaceless_vocab_size`` (``--language-vocab-sizes``).

    Returns:
        The merged vocabulary (most frequent first, by summed sentence counts) and, for every entry, the
        languages it comes from.
    """
    merged_counts: Counter[str] = Counter()
    languages_of: dict[str, list[str]] = {}
    too_rare: dict[str, int] = {}
    per_language: dict[str, int] = {}
    largest: dict[str, int] = {}
    for language, sentences in corpus.sentences.items():
        if not sentences:
            continue
        if language in SPACELESS_LANGUAGES:
            counts = count_teacher_token_sentences(sentences, teacher_tokenizer)
            size = spaceless_vocab_size
        else:
            counts = count_word_sentences(sentences, lowercase=language in LOWERCASED_LANGUAGES)
            size = vocab_size
        size = (language_vocab_sizes or {}).get(language, size)
        if not counts:
            continue
        try:
            vocabulary = build_vocabulary(
                counts, size=size, min_sentences=min_sentences, lowercase=language in LOWERCASED_LANGUAGES
            )
        except ValueError:
            too_rare.update({word: count for word, count in counts.items()})
            continue
        too_rare.update(vocabulary.too_rare)
        per_language[language], largest[language] = len(vocabulary), size
        for word, count in zip(vocabulary.words, vocabulary.sentence_counts, strict=True):
            merged_counts[word] += count
            languages_of.setdefault(word, []).append(language)
    if not merged_counts:
        raise ValueError(f"No entry occurs in at least {min_sentences} sentences of any language.")
    words = sorted(merged_counts, key=lambda word: (-merged_counts[word], word))
    kept = ", ".join(f"{language} {count:,} of {largest[language]:,}" for language, count in per_language.items())
    logger.info("Vocabulary per language (kept of largest): %s; %d in all.", kept, len(words))
    for word in words:
        too_rare.pop(word, None)
    vocabulary = Vocabulary(
        words=words,
        sentence_counts=[merged_counts[word] for word in words],
        lowercase=False,
        too_rare=too_rare,
        per_language=per_language,
    )
    return vocabulary, {word: languages_of[word] for word in words}
