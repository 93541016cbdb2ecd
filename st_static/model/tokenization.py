"""The word tokenizer of a static word embedding model, expressed as a `tokenizers` pipeline.

The method's rules (split on whitespace and punctuation, drop punctuation, look up the exact form, then the
lowercase form, fall back to the longest known prefix of an unknown word, split scripts without spaces into
the vocabulary's tokens) are compiled into one Rust ``tokenizers.Tokenizer`` so that a saved model needs
nothing but sentence-transformers' own ``StaticEmbedding`` to run:

* normaliser: NFC, plus lowercasing when every vocabulary word is lowercase;
* pre-tokeniser: words are maximal runs of letters, marks and numbers; every other character (whitespace,
  punctuation, symbols, emoji, control characters) separates words and is dropped;
* model: WordPiece over the vocabulary. Its greedy longest-prefix match is the prefix fallback; every
  continuation (``##`` + character) is a *dropped* token, so an unknown word keeps its longest known prefix
  and nothing else. Words with no known prefix become the dropped ``[UNK]`` token.

Token ids are laid out as :mod:`st_static.model.token_layouts` describes (the words, the subword pieces, the fallback
rows, ``[UNK]``, then extra keys); the normalisers and pre-tokenisers, the long-run cut of scripts written without
spaces among them, are :mod:`st_static.model.text_forms`'; words added to a finished table,
:mod:`st_static.model.added_words`; the cut of long texts at word boundaries, :mod:`st_static.model.text_cuts`. Every
name of those modules is importable from here too.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

from tokenizers import Tokenizer, decoders, models

from st_static.model.added_words import add_words, addable_words
from st_static.model.languages import is_spaceless_token
from st_static.model.text_cuts import split_long_text
from st_static.model.text_forms import (
    CONTINUATION_PREFIX,
    DEFAULT_MAX_WORD_CHARS,
    FALLBACK_ISOLATED_PATTERN,
    FALLBACK_REMOVED_PATTERN,
    INFERENCE_CHUNK_PATTERN,
    INFERENCE_FORM,
    NFC_SPACELESS_ISOLATED_PATTERN,
    SENTINEL,
    SPACELESS_CHUNK_PATTERN,
    SPACELESS_ISOLATED_PATTERN,
    TRAINING_FORM,
    UNKNOWN_TOKEN,
    WORD_SEPARATOR_PATTERN,
    fallback_pre_tokenizer,
    has_fallback_pre_tokenizer,
    is_lowercase_tokenizer,
    is_word_tokenizer,
    normalization_form,
    spaceless_run_keys,
    split_words,
    word_normalizer,
    word_pre_tokenizer,
)
from st_static.model.token_layouts import (
    DROPPED,
    FallbackLayout,
    add_fallback_layout,
    add_piece_layout,
    fallback_characters_of,
    fallback_layout,
    is_fallback_character,
    is_piece,
    keys_reading_rows,
    piece_rows_of,
    pieces_of,
    remove_fallback_layout,
    remove_piece_layout,
    token_targets,
)

__all__ = [
    "CONTINUATION_PREFIX",
    "DEFAULT_MAX_WORD_CHARS",
    "DROPPED",
    "FALLBACK_ISOLATED_PATTERN",
    "FALLBACK_REMOVED_PATTERN",
    "INFERENCE_CHUNK_PATTERN",
    "INFERENCE_FORM",
    "NFC_SPACELESS_ISOLATED_PATTERN",
    "SENTINEL",
    "SPACELESS_CHUNK_PATTERN",
    "SPACELESS_ISOLATED_PATTERN",
    "TRAINING_FORM",
    "UNKNOWN_TOKEN",
    "WORD_SEPARATOR_PATTERN",
    "FallbackLayout",
    "add_fallback_layout",
    "add_piece_layout",
    "add_words",
    "addable_words",
    "build_word_tokenizer",
    "fallback_characters_of",
    "fallback_layout",
    "fallback_pre_tokenizer",
    "has_fallback_pre_tokenizer",
    "is_fallback_character",
    "is_lowercase_tokenizer",
    "is_piece",
    "is_word_tokenizer",
    "keys_reading_rows",
    "normalization_form",
    "piece_rows_of",
    "pieces_of",
    "remove_fallback_layout",
    "remove_piece_layout",
    "spaceless_run_keys",
    "split_long_text",
    "split_words",
    "token_targets",
    "word_normalizer",
    "word_pre_tokenizer",
]

_BASE_CONTINUATION_CHARS = "".join(
    chr(code_point)
    for code_point in range(0x20, 0x250)  # ASCII, Latin-1, Latin Extended-A/B
    if unicodedata.category(chr(code_point))[0] in "LMN"
)


def _teacher_characters(teacher_tokenizer: Tokenizer | None) -> set[str]:
    if teacher_tokenizer is None:
        return set()
    characters: set[str] = set()
    for piece in teacher_tokenizer.get_vocab():
        characters.update(piece)
    return characters


def build_word_tokenizer(
    words: Sequence[str],
    teacher_tokenizer: Tokenizer | None = None,
    lowercase: bool | None = None,
    extra_characters: Iterable[str] = (),
    max_word_chars: int = DEFAULT_MAX_WORD_CHARS,
) -> Tokenizer:
    """Compile a vocabulary into the word tokenizer described in this module's docstring.

    Args:
        words: The vocabulary, one entry per table row, in row order. Entries must be words as
            :func:`split_words` produces them (no whitespace or punctuation) and unique.
        teacher_tokenizer: The teacher's tokenizer; its characters join the continuation pieces, so that
            an unknown word made of any character the teacher knows still falls back to its prefix.
        lowercase: Lowercase the input before the look-up. Defaults to ``True`` when every word is
            lowercase (the exact-then-lowercase rule then reduces to lowercasing).
        extra_characters: More characters to accept inside unknown words (e.g. the corpus's characters).
        max_word_chars: Words longer than this many characters are dropped (WordPiece's limit, which also
            bounds the cost of the greedy match).

    Returns:
        A ``tokenizers.Tokenizer`` whose ids follow the layout in this module's docstring.

    Raises:
        ValueError: If the vocabulary is empty, has duplicates, or holds an entry that is not a single word.
    """
    words = list(words)
    if not words:
        raise ValueError("The vocabulary is empty: a static model needs at least one word.")
    seen: set[str] = set()
    for word in words:
        if not isinstance(word, str):
            raise TypeError(f"Vocabulary entries must be str, got {type(word).__name__}: {word!r}.")
        if word in seen:
            raise ValueError(f"The vocabulary lists {word!r} twice; every word needs exactly one row.")
        seen.add(word)
        if split_words(word) != [word]:
            raise ValueError(
                f"Vocabulary entry {word!r} is not a single word after NFC normalisation and splitting on "
                "non-letters; it could never be looked up."
            )
    if lowercase is None:
        lowercase = all(word == word.lower() for word in words)
    if lowercase and any(word != word.lower() for word in words):
        raise ValueError("lowercase=True needs an all-lowercase vocabulary.")

    vocab: dict[str, int] = {word: index for index, word in enumerate(words)}
    vocab[UNKNOWN_TOKEN] = len(words)

    def add_key(key: str) -> None:
        if key not in vocab:
            vocab[key] = len(vocab)

    # Case variants of lowercase words in a case-sensitive vocabulary: "Apple"/"APPLE" -> "apple".
    if not lowercase:
        for word in words:
            if word == word.lower():
                for variant in (word.capitalize(), word.upper()):
                    add_key(variant)
    # Continuation forms of space-less tokens, so runs of Chinese/Japanese segment into vocabulary tokens.
    spaceless_words = [word for word in words if is_spaceless_token(word)]
    for word in spaceless_words:
        add_key(CONTINUATION_PREFIX + word)
    if spaceless_words:
        for key in spaceless_run_keys():
            add_key(key)
    characters = set(_BASE_CONTINUATION_CHARS) | _teacher_characters(teacher_tokenizer) | set(extra_characters)
    for word in words:
        characters.update(word)
    if lowercase:
        characters = {char.lower() for char in characters if len(char.lower()) == 1}
    for char in sorted(characters):
        if split_words(char) == [char]:
            add_key(CONTINUATION_PREFIX + char)

    tokenizer = Tokenizer(
        models.WordPiece(
            vocab=vocab,
            unk_token=UNKNOWN_TOKEN,
            continuing_subword_prefix=CONTINUATION_PREFIX,
            max_input_chars_per_word=max_word_chars,
        )
    )
    tokenizer.normalizer = word_normalizer(lowercase)
    tokenizer.pre_tokenizer = word_pre_tokenizer(spaceless=bool(spaceless_words))
    tokenizer.decoder = decoders.WordPiece(prefix=CONTINUATION_PREFIX)
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer
