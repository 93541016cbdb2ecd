"""The id layouts of the word tokenizer: which table row each token id reads, and the rows laid out after the words
(the subword pieces, then the fallback rows).

The token ids of a word tokenizer (:func:`~st_static.model.tokenization.build_word_tokenizer`) are laid out as:
``[0, num_words)`` the table rows (the vocabulary words, then the fallback rows below), ``num_words`` the ``[UNK]``
token, then extra keys: continuation pieces (dropped), case variants (``Apple`` for ``apple`` in a case-sensitive
vocabulary) and continuation forms of space-less tokens (``##語`` for ``語``), which both point at a word's row.
:func:`token_targets` recovers that mapping from any saved tokenizer.

Fallback rows (:func:`add_fallback_layout`; :mod:`st_static.extraction.fallback` computes them) give every text a
vector. The tokenizer then also

* normalises NFKC instead of NFC (``INFERENCE_FORM``): compatibility forms read as the forms the table was trained
  on (full-width question marks, digits and Latin letters as Japanese and Chinese keyboards type them, half-width
  katakana, ligatures, super- and subscripts), as most teachers' own tokenizers read them. Training reads the plain
  layout (NFC), so no cached stage changes;
* prepends the sentinel ``SENTINEL`` (U+E000, a private-use character) to every non-empty text (a ``Prepend``
  normaliser after NFKC/lowercasing), whose row, the *empty-text row*, every text therefore reads;
* keeps each punctuation or symbol character as a token of its own (a second ``Split``), so that ``?`` or ``#``
  can read a row; the words are exactly those of the plain layout;
* has one row per *fallback character*: single characters the teacher knows and the table does not (punctuation,
  symbols, letters of other scripts); their ``##`` continuation forms (the tokenizer has one for every character of
  the teacher) read that row too, so that ``Привет`` reads the rows of its letters.

Those rows are tiny (the fallback characters' ~1e-3 and the empty-text row ~1e-6 times a word row's norm), so a
text with a known word keeps its direction (the mean, then ``Normalize``), a text with only fallback characters
points where their rows do, and every other text is the empty-text row. Their ids come right after the words:
``[num_words - 1 - F, num_words)`` = the sentinel, then the F characters (:func:`fallback_layout`).

Piece rows (:func:`add_piece_layout`; :mod:`st_static.extraction.pieces` computes them) sit between the words and
the fallback rows: ``##`` continuation keys with rows of their own (:func:`piece_rows_of`).
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from tokenizers import Tokenizer

from st_static.model.languages import is_spaceless_token
from st_static.model.text_forms import (
    CONTINUATION_PREFIX,
    INFERENCE_FORM,
    SENTINEL,
    TRAINING_FORM,
    UNKNOWN_TOKEN,
    fallback_pre_tokenizer,
    is_lowercase_tokenizer,
    normalizer_members,
    spaceless_run_keys,
    split_words,
    word_normalizer,
    word_pre_tokenizer,
)

DROPPED = -1
"""What :func:`token_targets` gives a token id that reads no row."""


def token_targets(tokenizer: Tokenizer, vocab: dict[str, int] | None = None) -> tuple[np.ndarray, int]:
    """Map every token id of a word tokenizer to the table row it reads, or :data:`DROPPED`.

    Args:
        tokenizer: A tokenizer made by :func:`build_word_tokenizer` (possibly with :func:`add_fallback_layout`,
            saved and reloaded).
        vocab: Its vocabulary (``get_vocab(with_added_tokens=False)``), when the caller already has it.

    Returns:
        ``(targets, num_words)``: ``targets[token_id]`` is a row in ``[0, num_words)`` or ``DROPPED``.

    Raises:
        ValueError: If the tokenizer does not have the layout of a word tokenizer.
    """
    vocab = tokenizer.get_vocab(with_added_tokens=False) if vocab is None else vocab
    num_words = vocab.get(UNKNOWN_TOKEN)
    if num_words is None:
        raise ValueError(f"Not a st-static word tokenizer: it has no {UNKNOWN_TOKEN} token.")
    num_tokens = len(vocab)
    if sorted(vocab.values()) != list(range(num_tokens)):
        raise ValueError("Not a st-static word tokenizer: its token ids are not contiguous.")
    layout = fallback_layout(tokenizer, vocab)
    fallback_start = num_words if layout is None else layout.sentinel_row
    words_by_id = [""] * num_tokens
    for token, token_id in vocab.items():
        words_by_id[token_id] = token
    word_ids = {word: index for index, word in enumerate(words_by_id[:num_words])}
    targets = np.full(num_tokens, DROPPED, dtype=np.int64)
    targets[:num_words] = np.arange(num_words)
    for token_id in range(num_words + 1, num_tokens):
        token = words_by_id[token_id]
        if token.startswith(CONTINUATION_PREFIX):
            targets[token_id] = word_ids.get(token[len(CONTINUATION_PREFIX) :], DROPPED)
            word_row = DROPPED < targets[token_id] < fallback_start
            if word_row and not is_spaceless_token(token):
                targets[token_id] = DROPPED  # continuation of a spaced word: the dropped remainder
        else:
            targets[token_id] = word_ids.get(token.lower(), DROPPED)
    return targets, num_words


def keys_reading_rows(tokenizer: Tokenizer) -> frozenset[str]:
    """The keys of a word tokenizer that read a table row (its words, their case variants, the continuation forms of
    space-less words, its pieces and fallback characters): a key among them needs no fallback row of its own."""
    vocab = tokenizer.get_vocab(with_added_tokens=False)
    targets, _ = token_targets(tokenizer, vocab)
    return frozenset(token for token, token_id in vocab.items() if targets[token_id] != DROPPED)


@dataclass(frozen=True)
class FallbackLayout:
    """Where a word tokenizer's fallback rows are (:func:`add_fallback_layout`).

    Attributes:
        sentinel_row: The empty-text row (the sentinel's token id), the first fallback row; the words are the
            rows before it.
        num_words: The table's rows (the ``[UNK]`` id): the fallback characters are ``(sentinel_row, num_words)``.
    """

    sentinel_row: int
    num_words: int

    @property
    def num_rows(self) -> int:
        """The fallback rows: the empty-text row and one per fallback character."""
        return self.num_words - self.sentinel_row

    @property
    def character_rows(self) -> range:
        """The rows of the fallback characters."""
        return range(self.sentinel_row + 1, self.num_words)


def fallback_layout(tokenizer: Tokenizer, vocab: dict[str, int] | None = None) -> FallbackLayout | None:
    """The fallback rows of a word tokenizer, or ``None`` when it has none (no prepended sentinel).

    Args:
        tokenizer: A word tokenizer.
        vocab: Its vocabulary, when the caller already has it.

    Raises:
        ValueError: If the tokenizer prepends the sentinel but has no row for it.
    """
    if not any(member == {"type": "Prepend", "prepend": SENTINEL} for member in normalizer_members(tokenizer)):
        return None
    if vocab is None:  # two look-ups in the model's vocabulary, not a copy of it
        num_words, sentinel_row = tokenizer.model.token_to_id(UNKNOWN_TOKEN), tokenizer.model.token_to_id(SENTINEL)
    else:
        num_words, sentinel_row = vocab.get(UNKNOWN_TOKEN), vocab.get(SENTINEL)
    if num_words is None or sentinel_row is None or sentinel_row >= num_words:
        raise ValueError(
            "Not a st-static word tokenizer: it prepends the fallback sentinel U+E000 but has no table row for it."
        )
    return FallbackLayout(sentinel_row=sentinel_row, num_words=num_words)


def piece_rows_of(tokenizer: Tokenizer, vocab: dict[str, int] | None = None) -> range:
    """The rows of a word tokenizer's subword pieces (:func:`add_piece_layout`), an empty range without them.

    Pieces are the ``##`` continuation keys that read a table row of their own: they sit right after the
    vocabulary words, before the fallback rows (if any).

    Raises:
        ValueError: If the piece keys are not one run of rows after the words.
    """
    vocab = tokenizer.get_vocab(with_added_tokens=False) if vocab is None else vocab
    num_words = vocab.get(UNKNOWN_TOKEN)
    if num_words is None:
        return range(0)
    rows = sorted(
        token_id for token, token_id in vocab.items() if token_id < num_words and token.startswith(CONTINUATION_PREFIX)
    )
    if not rows:
        return range(0)
    pieces = range(rows[0], rows[-1] + 1)
    if len(rows) != len(pieces):
        raise ValueError("Not a st-static word tokenizer: its piece rows are not one run of rows after the words.")
    return pieces


def pieces_of(tokenizer: Tokenizer) -> list[str]:
    """The subword pieces of a word tokenizer (without their ``##``), in row order; none without piece rows."""
    vocab = tokenizer.get_vocab(with_added_tokens=False)
    rows = piece_rows_of(tokenizer, vocab)
    by_id = {token_id: token for token, token_id in vocab.items() if token_id in rows}
    return [by_id[row][len(CONTINUATION_PREFIX) :] for row in rows]


def is_piece(piece: str, lowercase: bool, form: str = INFERENCE_FORM) -> bool:
    """Whether ``piece`` (a continuation, without ``##``) can have a piece row: a word fragment as the pre-tokeniser
    leaves it (letters, marks and numbers only), unchanged by the normalisation ``form`` and, for a lowercase table,
    by lowercasing. (A table laid out before NFKC may hold pieces NFKC changes: :func:`add_piece_layout` keeps them,
    checking ``form="NFC"``; their rows are never read.)"""
    if not piece or split_words(piece) != [piece] or unicodedata.normalize(form, piece) != piece:
        return False
    return not (lowercase and piece.lower() != piece)


def add_piece_layout(tokenizer: Tokenizer, pieces: Sequence[str]) -> Tokenizer:
    """The word tokenizer with one row per subword piece, after the words and before the fallback rows.

    An unknown word then reads its longest known prefix *and* the rows of the continuation pieces WordPiece's
    greedy longest match cuts the rest into (``misspeling`` -> ``miss`` ``##pel`` ``##ing``), where before it read
    the prefix only. Known words are matched whole and read exactly their rows as before. Replaces any pieces the
    tokenizer had; the words keep their ids, the fallback rows (and ``[UNK]`` and the extra keys) move up.
    Every single continuation character the tokenizer had stays a continuation key (dropped, or a fallback
    character's row), so no word is segmented into ``[UNK]`` that was not before.

    Args:
        tokenizer: A word tokenizer (:func:`build_word_tokenizer`, possibly with fallback rows).
        pieces: The continuations (without ``##``), in row order; each must pass :func:`is_piece`.

    Raises:
        ValueError: If a piece cannot have a row or is given twice.
    """
    characters = fallback_characters_of(tokenizer)
    has_fallback = fallback_layout(tokenizer) is not None  # (possibly the empty-text row alone, no characters)
    base = remove_piece_layout(remove_fallback_layout(tokenizer))
    lowercase = is_lowercase_tokenizer(base)
    pieces = list(pieces)
    if len(set(pieces)) != len(pieces):
        raise ValueError("A piece is given twice.")
    for piece in pieces:
        if not is_piece(piece, lowercase, form=TRAINING_FORM):
            raise ValueError(f"{piece!r} cannot be a piece (see is_piece).")
    state = json.loads(base.to_str())
    vocab: dict[str, int] = state["model"]["vocab"]
    num_words = vocab[UNKNOWN_TOKEN]
    keys = [CONTINUATION_PREFIX + piece for piece in pieces]
    chosen = set(keys)
    ordered = sorted(vocab.items(), key=lambda item: item[1])
    words = [token for token, token_id in ordered if token_id < num_words]
    extra = [token for token, token_id in ordered if token_id > num_words and token not in chosen]
    state["model"]["vocab"] = {token: index for index, token in enumerate([*words, *keys, UNKNOWN_TOKEN, *extra])}
    with_pieces = Tokenizer.from_str(json.dumps(state))
    return add_fallback_layout(with_pieces, characters) if has_fallback else with_pieces


def remove_piece_layout(tokenizer: Tokenizer) -> Tokenizer:
    """The word tokenizer without piece rows (the tokenizer itself when it has none): the pieces become dropped
    continuation keys again, the fallback rows (if any) stay."""
    vocab = tokenizer.get_vocab(with_added_tokens=False)
    rows = piece_rows_of(tokenizer, vocab)
    if not rows:
        return tokenizer
    state = json.loads(tokenizer.to_str())
    ordered = sorted(state["model"]["vocab"].items(), key=lambda item: item[1])
    num_words = vocab[UNKNOWN_TOKEN]
    kept = [token for token, token_id in ordered if token_id < num_words and token_id not in rows]
    pieces = [token for token, token_id in ordered if token_id in rows]
    extra = [token for token, token_id in ordered if token_id > num_words]
    state["model"]["vocab"] = {token: index for index, token in enumerate([*kept, UNKNOWN_TOKEN, *pieces, *extra])}
    return Tokenizer.from_str(json.dumps(state))


def fallback_characters_of(tokenizer: Tokenizer) -> list[str]:
    """The fallback characters of a word tokenizer, in row order (none without fallback rows)."""
    layout = fallback_layout(tokenizer)
    if layout is None:
        return []
    by_id = {token_id: token for token, token_id in tokenizer.get_vocab(with_added_tokens=False).items()}
    return [by_id[row] for row in layout.character_rows]


def is_fallback_character(character: str, lowercase: bool, form: str = INFERENCE_FORM) -> bool:
    """Whether ``character`` can have a fallback row: one character that reaches the WordPiece model alone as itself
    (not whitespace or control, unchanged by the normalisation ``form`` and lowercasing) and is not an ASCII letter or
    digit (those are continuation pieces of ASCII words, which read no row). (A table laid out before NFKC may hold
    characters NFKC changes, such as U+FF1F: :func:`add_fallback_layout` keeps them, checking ``form="NFC"``; their rows
    are never read.)"""
    if len(character) != 1 or character == SENTINEL or (character.isascii() and character.isalnum()):
        return False
    if unicodedata.normalize(form, character) != character or (lowercase and character.lower() != character):
        return False
    return unicodedata.category(character)[0] in "LMNPS"


def add_fallback_layout(tokenizer: Tokenizer, characters: Sequence[str]) -> Tokenizer:
    """The word tokenizer with fallback rows: the sentinel, then ``characters``, after the words.

    Replaces any fallback rows the tokenizer had. The words keep their ids; ``[UNK]`` and the extra keys move up
    by the number of fallback rows. The ``##`` continuation forms the tokenizer has (one per character of the
    teacher, :func:`build_word_tokenizer`) read their character's row; none is added, so that no word is segmented
    otherwise than before (a new ``##\u0440`` would let ``hello\u0440``, dropped before, read ``hello``), except the
    keys of :func:`spaceless_run_keys` that a tokenizer with space-less words built before them lacks: with those, a
    run that read nothing (``彼女は２０代``) reads its words.

    Args:
        tokenizer: A word tokenizer (:func:`build_word_tokenizer`).
        characters: The fallback characters, in row order: each must pass :func:`is_fallback_character` and not
            already read a row (a word, or a case variant of one).

    Raises:
        ValueError: If a character cannot have a fallback row, or is given twice.
    """
    base = remove_fallback_layout(tokenizer)
    lowercase = is_lowercase_tokenizer(base)
    targets, num_words = token_targets(base)
    state = json.loads(base.to_str())
    vocab: dict[str, int] = state["model"]["vocab"]
    characters = list(characters)
    if len(set(characters)) != len(characters):
        raise ValueError("A fallback character is given twice.")
    for character in characters:
        if not is_fallback_character(character, lowercase, form=TRAINING_FORM):
            raise ValueError(f"{character!r} cannot have a fallback row (see is_fallback_character).")
        if character in vocab and targets[vocab[character]] != DROPPED:
            raise ValueError(f"{character!r} already reads a row of the table; it needs no fallback row.")
    fallback = set(characters)
    ordered = sorted(vocab.items(), key=lambda item: item[1])
    keys = [token for token, token_id in ordered if token_id < num_words]
    keys += [SENTINEL, *characters, UNKNOWN_TOKEN]
    keys += [token for token, token_id in ordered if token_id > num_words and token not in fallback]
    spaceless = _has_spaceless_words(ordered, num_words)
    if spaceless:
        present = set(keys)
        keys += [key for key in spaceless_run_keys() if key not in present]
    state["model"]["vocab"] = {token: index for index, token in enumerate(keys)}
    state["normalizer"] = json.loads(word_normalizer(lowercase, sentinel=True).__getstate__())
    state["pre_tokenizer"] = json.loads(fallback_pre_tokenizer(spaceless).__getstate__())
    return Tokenizer.from_str(json.dumps(state))


def _has_spaceless_words(ordered: Sequence[tuple[str, int]], num_words: int) -> bool:
    """Whether a word (a key with an id below ``num_words``) of a script written without spaces is among ``ordered``."""
    return any(is_spaceless_token(token) for token, token_id in ordered if token_id < num_words)


def remove_fallback_layout(tokenizer: Tokenizer) -> Tokenizer:
    """The word tokenizer without fallback rows (the tokenizer itself when it has none).

    The fallback characters stay as dropped keys (so a run of Chinese or Japanese with one of them still segments
    as before); their ``##`` forms are dropped pieces again.
    """
    layout = fallback_layout(tokenizer)
    if layout is None:
        return tokenizer
    state = json.loads(tokenizer.to_str())
    ordered = sorted(state["model"]["vocab"].items(), key=lambda item: item[1])
    keys = [token for token, token_id in ordered if token_id < layout.sentinel_row]
    characters = [token for token, token_id in ordered if token_id in layout.character_rows]
    keys += [UNKNOWN_TOKEN, *[token for token, token_id in ordered if token_id > layout.num_words], *characters]
    state["model"]["vocab"] = {token: index for index, token in enumerate(keys)}
    state["normalizer"] = json.loads(word_normalizer(is_lowercase_tokenizer(tokenizer)).__getstate__())
    state["pre_tokenizer"] = json.loads(
        word_pre_tokenizer(_has_spaceless_words(ordered, layout.sentinel_row)).__getstate__()
    )
    return Tokenizer.from_str(json.dumps(state))
