"""Step 1's settings: the vocabulary, the sentences the teacher reads and how it reads them, and what the build
adds to the table after the refinement (fallback and piece rows, storage)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Literal

from st_static.model.languages import SPACELESS_LANGUAGES
from st_static.settings.base import (
    STORAGE_FORMATS,
    SettingsError,
    checked_language_counts,
    positive_int,
    seed_values,
    setting,
)
from st_static.teachers import DEFAULT_TEACHER, default_prompt


@dataclass
class ExtractionSettings:
    """Step 1: the vocabulary, the sentences the teacher reads, and how it reads them."""

    teacher: str = setting(DEFAULT_TEACHER, "Teacher: a Sentence Transformer folder or Hub repo id.")
    prompt: str | None = setting(
        None,
        'Text put before every sentence for the teacher, e.g. "query: " for e5 models. Default: the teacher\'s own '
        'similarity prompt (st-static\'s teacher registry, else its default_prompt_name); "" for none.',
    )
    vocab_size: int = setting(150_000, "Largest vocabulary (per language written with spaces).")
    spaceless_vocab_size: int = setting(
        30_000, "Largest vocabulary per language written without spaces (Chinese, Japanese: teacher tokens)."
    )
    language_vocab_sizes: dict[str, int] | None = setting(
        None,
        "Comma-separated LANG=N (e.g. en=60000,de=40000,ko=12000): the largest vocabulary of each language named, "
        "in place of --vocab-size or --spaceless-vocab-size (languages not named keep those), to cap the table's "
        "size. Its word rows are at most the sum of its languages' sizes (a word of several languages is one row), "
        "plus the teacher's Chinese/Japanese tokens --complete-spaceless adds whatever the size; piece and fallback "
        "rows come on top (the build prints the rows per script).",
        cli="comma-pairs",
    )
    min_sentences: int = setting(2, "Words in fewer corpus sentences are left out (and reported).")
    sentences_per_word: int = setting(
        5,
        "Shortest corpus sentences the teacher reads per word (N; the paper's 100 reads 2x the text for no gain on "
        "dev sets: benchmarks/results/2026-11-23-teacher-tokens-curve.md).",
    )
    max_words: int = setting(64, "Sentences with more words are never read (long inputs blur the vectors).")
    lowercase: bool = setting(True, "Lowercase the vocabulary of a one-language table (as the paper does).")
    wordfreq_weight: float = setting(
        0.0, "Rank vocabulary candidates by (1-w)*log p(corpus) + w*log p(wordfreq) (needs the extract extra)."
    )
    batch_tokens: int = setting(1024, "Teacher tokens per forward batch.")
    teacher_precision: Literal["auto", "float32", "bfloat16", "int8"] = setting(
        "auto",
        "Number format of the teacher's weights in the teacher pass: bfloat16 reads ~1.6-2.4x faster on CPUs with "
        "AVX512-BF16 or AMX (word vectors within cosine 0.9999 of float32); int8 (CPU only: linear layers quantised "
        "per output channel, activations per batch) ~2.8x, with word vectors at mean cosine 0.984 (min 0.93), for "
        "CPUs without native bfloat16 (benchmarks/results/2026-11-29-teacher-int8.md); auto = bfloat16 where the "
        "device computes it natively, else float32.",
    )
    pca_sample_size: int = setting(100_000, "Corpus sentences sampled (per language) to fit the PCA.")
    pca_sample_seed: int = setting(0, "Seed of the PCA sample.")
    complete_words: int = setting(
        50_000,
        "One-language tables: of the language's this-many most frequent words (wordfreq), add those the corpus lacks, "
        "encoded alone by the teacher and mapped into the table (0: none).",
    )
    long_texts: int = setting(
        0,
        "Multi-sentence texts (runs of consecutive corpus lines) the teacher also reads, added to the distillation "
        "targets so the table learns how long texts' words add up (documents, search); 0: none.",
    )
    long_text_sentences: int = setting(4, "Corpus lines joined into one long text.")
    second_teacher: str | None = setting(
        None,
        "A second teacher (Sentence Transformer folder or Hub repo id) whose similarities the distillation also "
        "learns: it encodes a sample of the distillation sentences and the targets mix both teachers' similarities "
        "(second_teacher_mix); the first teacher still gives the words' vectors.",
    )
    second_teacher_prompt: str | None = setting(
        None, 'Text put before every sentence for the second teacher. Default: its own prompt; "" for none.'
    )
    second_teacher_weight: float = setting(
        0.5, "The second teacher's share of the distilled targets (0 to 1; the first teacher has the rest)."
    )
    second_teacher_mix: Literal["distributions", "cosines"] = setting(
        "distributions",
        "How the two teachers' targets mix: distributions = the weighted mean of each teacher's in-batch neighbour "
        "distribution (each keeps its nearest neighbours); cosines = one distribution of their weighted mean cosines.",
    )
    second_teacher_sentences: int = setting(
        100_000,
        "Distillation sentences (a random sample of the first teacher's) that the second teacher encodes; the "
        "distillation then trains on these.",
    )
    complete_spaceless: bool = setting(
        True,
        "Cross-lingual tables with Chinese or Japanese: add the teacher's tokens of those scripts that the corpus "
        "missed (encoded alone, mapped into the table).",
    )
    fallback_rows: bool = setting(
        True,
        "Give every text a vector: after the refinement, add tiny rows for the characters the teacher knows and the "
        "table lacks (punctuation, symbols, other scripts) and for the empty text (encoded alone by the teacher, "
        "mapped into the table); a text with a known word keeps its vector.",
    )

    piece_rows: bool = setting(
        True,
        "Give words the table lacks more than their prefix: after the refinement, add a row per subword piece (the "
        "teacher's continuation tokens and single letters), fitted so that the vocabulary words' prefixes and pieces "
        "predict their rows; an unknown word then reads its longest known prefix and its pieces. Known words keep "
        "their vectors.",
    )

    storage: str = setting(
        "float16",
        "How the published table is stored: float16 (the default: half the bytes of float32, the same scores), "
        "float32, int8-row, int8-column or binary (st_static.compression.quantize); one row per word, piece and "
        "fallback row, the tokenizer's other keys mapped onto them.",
    )

    def __post_init__(self) -> None:
        if self.storage not in STORAGE_FORMATS:
            raise SettingsError(f"storage must be one of {', '.join(STORAGE_FORMATS)}, got {self.storage!r}.")
        positive_int(self, "vocab_size", "spaceless_vocab_size", "min_sentences", "sentences_per_word")
        self.language_vocab_sizes = checked_language_counts(
            self.language_vocab_sizes, "language_vocab_sizes", "size", "{'de': 40000}"
        )
        positive_int(self, "max_words", "batch_tokens", "pca_sample_size")
        seed_values(self, "pca_sample_seed")
        for name in ("complete_words", "long_texts"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise SettingsError(f"{name} must be 0 or more, got {value!r}.")
        if (
            isinstance(self.long_text_sentences, bool)
            or not isinstance(self.long_text_sentences, int)
            or (self.long_text_sentences < 2)
        ):
            raise SettingsError(f"long_text_sentences must be 2 or more, got {self.long_text_sentences!r}.")
        if self.second_teacher is not None:
            if not isinstance(self.second_teacher, str | os.PathLike) or not str(self.second_teacher).strip():
                raise SettingsError(f"second_teacher must name a Sentence Transformer, got {self.second_teacher!r}.")
            self.second_teacher = str(self.second_teacher)
        weight = self.second_teacher_weight
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0.0 <= weight <= 1.0:
            raise SettingsError(f"second_teacher_weight must lie in [0, 1], got {weight!r}.")
        positive_int(self, "second_teacher_sentences")
        if self.second_teacher_mix not in ("distributions", "cosines"):
            raise SettingsError(
                f"second_teacher_mix must be distributions or cosines, got {self.second_teacher_mix!r}."
            )
        if not 0.0 <= self.wordfreq_weight <= 1.0:
            raise SettingsError(f"wordfreq_weight must lie in [0, 1], got {self.wordfreq_weight}.")
        if self.teacher_precision not in ("auto", "float32", "bfloat16", "int8"):
            raise SettingsError(
                f"teacher_precision must be auto, float32, bfloat16 or int8, got {self.teacher_precision!r}."
            )
        if not self.teacher:
            raise SettingsError("teacher must name a Sentence Transformer (folder or Hub repo id).")

    def vocabulary_size(self, language: str) -> int:
        """The largest vocabulary of ``language``: its ``language_vocab_sizes`` entry, else ``spaceless_vocab_size``
        for a language written without spaces, else ``vocab_size``."""
        if self.language_vocab_sizes and language in self.language_vocab_sizes:
            return self.language_vocab_sizes[language]
        return self.spaceless_vocab_size if language in SPACELESS_LANGUAGES else self.vocab_size

    def with_teacher_prompt(self) -> ExtractionSettings:
        """These settings with the teacher's own prompt filled in where none was given (``prompt=None``)."""
        if self.prompt is not None:
            return self
        return replace(self, prompt=default_prompt(self.teacher))

    def with_second_teacher_prompt(self) -> ExtractionSettings:
        """These settings with the second teacher's own prompt filled in where a second teacher has none."""
        if self.second_teacher is None or self.second_teacher_prompt is not None:
            return self
        return replace(self, second_teacher_prompt=default_prompt(self.second_teacher))
