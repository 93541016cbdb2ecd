"""Choosing which corpus sentences the teacher encodes: the shortest N holding each vocabulary word."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice

import numpy as np
from tokenizers import Tokenizer
from tqdm.auto import tqdm

from st_static.model.languages import is_spaceless_token
from st_static.model.tokenization import token_targets
from st_static.settings import ExtractionSettings


@dataclass
class SentenceSelection:
    """The sentences to encode, a sample for PCA, and how well they cover the vocabulary."""

    sentences: list[str]
    """Selected sentences, in corpus order."""
    pca_sentences: list[str]
    """A uniform random sample of the corpus (reservoir sampling), for fitting the sentence-level PCA."""
    selected_per_word: np.ndarray
    """For each vocabulary row, the number of selected sentences holding it."""
    corpus_size: int
    """Sentences read from the corpus."""


@dataclass
class WordOccurrences:
    """Whole-word vocabulary matches of a batch of sentences, from the word tokenizer."""

    rows: list[np.ndarray]
    """Per sentence: the table row of each matched word, in order."""
    spans: list[np.ndarray]
    """Per sentence: ``(n, 2)`` character spans of the matched words in the original sentence."""
    word_counts: np.ndarray
    """Per sentence: the number of words (matched or not)."""


class OccurrenceFinder:
    """Finds the whole-word vocabulary matches in sentences with the model's own word tokenizer.

    A word counts when it is looked up whole (exactly, or through its lowercase form): the remainder of a
    prefix fallback does not make the prefix an occurrence. Tokens of space-less scripts always count.
    """

    def __init__(self, word_tokenizer: Tokenizer) -> None:
        self.tokenizer = word_tokenizer
        self.targets, self.num_words = token_targets(word_tokenizer)
        vocab = word_tokenizer.get_vocab(with_added_tokens=False)
        self.spaceless = np.zeros(len(self.targets), dtype=bool)
        for token, token_id in vocab.items():
            if self.targets[token_id] >= 0 and is_spaceless_token(token):
                self.spaceless[token_id] = True

    def find(self, sentences: list[str]) -> WordOccurrences:
        """Tokenise ``sentences`` and return their whole-word matches."""
        rows: list[np.ndarray] = []
        spans: list[np.ndarray] = []
        word_counts = np.zeros(len(sentences), dtype=np.int64)
        for index, encoding in enumerate(self.tokenizer.encode_batch(sentences, add_special_tokens=False)):
            ids = np.asarray(encoding.ids, dtype=np.int64)
            if ids.size == 0:
                rows.append(ids)
                spans.append(np.zeros((0, 2), dtype=np.int64))
                continue
            word_ids = np.asarray(encoding.word_ids, dtype=np.int64)
            word_counts[index] = int(word_ids.max()) + 1
            tokens_per_word = np.bincount(word_ids)
            token_rows = self.targets[ids]
            keep = (token_rows >= 0) & ((tokens_per_word[word_ids] == 1) | self.spaceless[ids])
            rows.append(token_rows[keep])
            spans.append(np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2)[keep])
        return WordOccurrences(rows=rows, spans=spans, word_counts=word_counts)


def _batched(iterable: Iterable[str], size: int) -> Iterator[list[str]]:
    iterator = iter(iterable)
    while batch := list(islice(iterator, size)):
        yield batch


def select_sentences(
    sentences: Iterable[str],
    word_tokenizer: Tokenizer,
    sentences_per_word: int = ExtractionSettings.sentences_per_word,
    max_words: int = ExtractionSettings.max_words,
    pca_sample_size: int = ExtractionSettings.pca_sample_size,
    seed: int = ExtractionSettings.pca_sample_seed,
    chunk_size: int = 50_000,
) -> SentenceSelection:
    """Stream the corpus once and keep, for every vocabulary word, its ``sentences_per_word`` shortest sentences.

    Memory stays bounded by the selection itself (at most ``|V| * sentences_per_word`` entries), whatever the
    corpus size.

    Args:
        sentences: The corpus.
        word_tokenizer: The model's word tokenizer (defines what a vocabulary word occurrence is).
        sentences_per_word: N, the sentences kept per word (shortest first, ties by corpus order).
        max_words: Sentences with more words are never selected (long inputs hurt the vectors).
        pca_sample_size: Size of the uniform sample kept for the sentence-level PCA.
        seed: Seed of the PCA sample.
        chunk_size: Sentences tokenised at a time.
    """
    if sentences_per_word < 1:
        raise ValueError(f"sentences_per_word must be at least 1, got {sentences_per_word}.")
    finder = OccurrenceFinder(word_tokenizer)
    rng = random.Random(seed)
    reservoir: list[str] = []
    kept_rows = np.zeros(0, dtype=np.int64)
    kept_lengths = np.zeros(0, dtype=np.int64)
    kept_indices = np.zeros(0, dtype=np.int64)
    kept_texts: dict[int, str] = {}
    corpus_size = 0
    progress = tqdm(desc="Selecting sentences", unit=" sentences", mininterval=2.0)
    for chunk in _batched(sentences, chunk_size):
        occurrences = finder.find(chunk)
        chunk_rows, chunk_lengths, chunk_indices = [], [], []
        for offset, (sentence, rows) in enumerate(zip(chunk, occurrences.rows, strict=True)):
            index = corpus_size + offset
            if len(reservoir) < pca_sample_size:
                reservoir.append(sentence)
            else:
                slot = rng.randrange(index + 1)
                if slot < pca_sample_size:
                    reservoir[slot] = sentence
            if rows.size == 0 or occurrences.word_counts[offset] > max_words:
                continue
            unique_rows = np.unique(rows)
            chunk_rows.append(unique_rows)
            chunk_lengths.append(np.full(unique_rows.size, occurrences.word_counts[offset]))
            chunk_indices.append(np.full(unique_rows.size, index))
            kept_texts[index] = sentence
        corpus_size += len(chunk)
        progress.update(len(chunk))
        if not chunk_rows:
            continue
        kept_rows = np.concatenate([kept_rows, *chunk_rows])
        kept_lengths = np.concatenate([kept_lengths, *chunk_lengths])
        kept_indices = np.concatenate([kept_indices, *chunk_indices])
        order = np.lexsort((kept_indices, kept_lengths, kept_rows))
        kept_rows, kept_lengths, kept_indices = kept_rows[order], kept_lengths[order], kept_indices[order]
        group_start = np.r_[0, np.flatnonzero(np.diff(kept_rows)) + 1]
        rank = np.arange(kept_rows.size) - np.repeat(group_start, np.diff(np.r_[group_start, kept_rows.size]))
        keep = rank < sentences_per_word
        kept_rows, kept_lengths, kept_indices = kept_rows[keep], kept_lengths[keep], kept_indices[keep]
        still_used = set(np.unique(kept_indices).tolist())
        kept_texts = {index: text for index, text in kept_texts.items() if index in still_used}
    progress.close()
    selected_indices = sorted(kept_texts)
    return SentenceSelection(
        sentences=[kept_texts[index] for index in selected_indices],
        pca_sentences=reservoir,
        selected_per_word=np.bincount(kept_rows, minlength=finder.num_words),
        corpus_size=corpus_size,
    )
