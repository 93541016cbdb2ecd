"""Words added to a finished table (``st-static extend``): their rows after the words, before the pieces and the
fallback rows, so that every row keeps its values and a text without a new word reads the same rows
(:meth:`st_static.StaticWordAverage.with_words` builds the module)."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Sequence

from tokenizers import Tokenizer

from st_static.model.languages import is_spaceless_token
from st_static.model.text_forms import (
    DEFAULT_MAX_WORD_CHARS,
    UNKNOWN_TOKEN,
    is_lowercase_tokenizer,
    normalization_form,
    split_words,
)
from st_static.model.token_layouts import DROPPED, fallback_layout, piece_rows_of, token_targets


def addable_words(tokenizer: Tokenizer, words: Iterable[str]) -> list[str]:
    """The ``words`` that :func:`add_words` can give a row, in the order given (each once).

    A word qualifies when it reads no row yet, is one word as the table splits text (in its normalised form: NFKC with
    fallback rows, lowercase for a lowercase table), is no longer than the longest word the tokenizer looks up, is not
    a token of a script written without spaces (those are segmented into the vocabulary's tokens,
    :func:`build_word_tokenizer`), and, in a case-sensitive table, none of its case variants is a fallback character
    (that character keeps its own row).
    """
    state = json.loads(tokenizer.to_str())
    vocab: dict[str, int] = state["model"]["vocab"]
    longest = state["model"].get("max_input_chars_per_word", DEFAULT_MAX_WORD_CHARS)
    targets, _ = token_targets(tokenizer)
    lowercase = is_lowercase_tokenizer(tokenizer)
    form = normalization_form(tokenizer)
    layout = fallback_layout(tokenizer, vocab)
    fallback = set() if layout is None else {token for token, row in vocab.items() if row in layout.character_rows}
    chosen: dict[str, None] = {}
    for word in words:
        if not isinstance(word, str) or word in chosen or len(word) > longest or split_words(word) != [word]:
            continue
        if word != unicodedata.normalize(form, word) or (lowercase and word != word.lower()):
            continue
        if word in vocab and targets[vocab[word]] != DROPPED:
            continue
        if is_spaceless_token(word) or any(is_spaceless_token(char) for char in word):
            continue
        if not lowercase and word == word.lower() and {word.capitalize(), word.upper()} & fallback:
            continue
        chosen[word] = None
    return list(chosen)


def add_words(tokenizer: Tokenizer, words: Sequence[str]) -> Tokenizer:
    """The word tokenizer with rows for ``words`` right after its words, before its pieces and fallback rows.

    The words keep their ids; the pieces, fallback rows, ``[UNK]`` and extra keys move up by ``len(words)`` (every
    layout keeps the words first, so the others stay as they were). In a case-sensitive table a lowercase new word
    also reads its capitalised and upper-case forms (as :func:`build_word_tokenizer` gives them). No continuation key
    is added: every known word reads the row it read, and an unknown word reads what it read unless it starts with a
    new word (its longest known prefix is then that word, as for any word of the table).

    Args:
        tokenizer: A word tokenizer (:func:`build_word_tokenizer`, with or without the piece and fallback layouts).
        words: The new words, in row order; each must be one of :func:`addable_words`.

    Raises:
        ValueError: If a word is given twice or cannot be added (see :func:`addable_words`).
    """
    words = list(words)
    if len(set(words)) != len(words):
        raise ValueError("A new word is given twice.")
    addable = set(addable_words(tokenizer, words))
    refused = [word for word in words if word not in addable]
    if refused:
        raise ValueError(
            f"{refused[0]!r} cannot be added to the table: it already reads a row, or is not one word as the table "
            "splits and normalises text (see addable_words)."
        )
    state = json.loads(tokenizer.to_str())
    vocab: dict[str, int] = state["model"]["vocab"]
    unknown = vocab[UNKNOWN_TOKEN]
    layout = fallback_layout(tokenizer, vocab)
    pieces = piece_rows_of(tokenizer, vocab)
    num_words = min(
        unknown, layout.sentinel_row if layout is not None else unknown, pieces.start if pieces else unknown
    )
    new = set(words)
    variants: dict[str, None] = {}
    if not is_lowercase_tokenizer(tokenizer):
        for word in words:
            if word == word.lower():
                for variant in (word.capitalize(), word.upper()):
                    if variant not in vocab and variant not in new:
                        variants[variant] = None
    ordered = [token for token, _ in sorted(vocab.items(), key=lambda item: item[1])]
    keys = [*ordered[:num_words], *words, *ordered[num_words : unknown + 1], *variants]
    keys += [token for token in ordered[unknown + 1 :] if token not in new]
    state["model"]["vocab"] = {token: index for index, token in enumerate(keys)}
    return Tokenizer.from_str(json.dumps(state))
