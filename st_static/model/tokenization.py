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

Token ids are laid out as: ``[0, num_words)`` the table rows (the vocabulary words, then the fallback rows
below), ``num_words`` the ``[UNK]`` token, then extra keys: continuation pieces (dropped), case variants (``Apple``
for ``apple`` in a case-sensitive vocabulary) and continuation forms of space-less tokens (``##語`` for ``語``),
which both point at a word's row. :func:`token_targets` recovers that mapping from any saved tokenizer.

Fallback rows (:func:`add_fallback_layout`; :mod:`st_static.extraction.fallback` computes them) give every text a
vector. The tokenizer then also

* normalises NFKC instead of NFC (:data:`INFERENCE_FORM`): compatibility forms read as the forms the table was trained
  on (full-width question marks, digits and Latin letters as Japanese and Chinese keyboards type them, half-width
  katakana, ligatures, super- and subscripts), as most teachers' own tokenizers read them. Training reads the plain
  layout (NFC), so no cached stage changes;
* prepends the sentinel :data:`SENTINEL` (U+E000, a private-use character) to every non-empty text (a ``Prepend``
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
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

from st_static.model.languages import SPACELESS_RANGES, SPACELESS_RUN_RANGES, is_spaceless_token

UNKNOWN_TOKEN = "[UNK]"
CONTINUATION_PREFIX = "##"
WORD_SEPARATOR_PATTERN = r"[^\p{L}\p{M}\p{N}]+"
SENTINEL = "\ue000"
"""Prepended to every non-empty text by a tokenizer with fallback rows; its row is the empty-text row."""
FALLBACK_REMOVED_PATTERN = r"[^\p{L}\p{M}\p{N}\p{P}\p{S}" + SENTINEL + "]+"
"""Fallback layout, first split: whitespace, control and other characters that are neither words nor symbols."""
FALLBACK_ISOLATED_PATTERN = r"[\p{P}\p{S}" + SENTINEL + "]"
"""Fallback layout, second split: each punctuation or symbol character (and the sentinel) is a token alone."""
TRAINING_FORM = "NFC"
"""The Unicode normalisation of the plain layout: vocabulary building, extraction and training."""
INFERENCE_FORM = "NFKC"
"""The Unicode normalisation of the fallback layout, which every finished table has: NFC plus compatibility folding."""
DEFAULT_MAX_WORD_CHARS = 100
SPACELESS_CHUNK_PATTERN = (
    "["
    + "".join(f"{chr(start)}-{chr(end)}" for start, end in (*SPACELESS_RANGES, *SPACELESS_RUN_RANGES))
    + f"]{{{DEFAULT_MAX_WORD_CHARS}}}"
)
"""A table with space-less words: each run of this many characters of those scripts is a pre-token of its own (a
last split), so a long unpunctuated Chinese or Japanese sentence is segmented in pieces instead of being one word
longer than WordPiece's limit, which reads ``[UNK]``; shorter runs are untouched."""
_SPACELESS_CLASS = "".join(f"{chr(start)}-{chr(end)}" for start, end in (*SPACELESS_RANGES, *SPACELESS_RUN_RANGES))
INFERENCE_CHUNK_PATTERN = f"[{_SPACELESS_CLASS}]" + r"[\p{L}\p{M}\p{N}]" + f"{{{DEFAULT_MAX_WORD_CHARS - 1}}}"
"""The fallback layout's cut of long runs: a character of those scripts and the next letters, marks and digits, this
many characters in all. NFKC turns the full-width digits and Latin letters written inside a run into ASCII ones, which
:data:`SPACELESS_CHUNK_PATTERN` does not count; a cut starts at a space-less character, so a word of other scripts
alone is never cut (it reads as in a table without space-less words)."""
SPACELESS_ISOLATED_PATTERN = INFERENCE_CHUNK_PATTERN + "|" + FALLBACK_ISOLATED_PATTERN
"""The fallback layout's second split in a table with space-less words: the symbols and the long runs' cuts in one
pass over the text (a third split would cost encoding about a tenth of its speed)."""
NFC_SPACELESS_ISOLATED_PATTERN = SPACELESS_CHUNK_PATTERN + "|" + FALLBACK_ISOLATED_PATTERN
"""The same split in tables laid out with NFC (before compatibility folding): still read, never written."""
DROPPED = -1

_BASE_CONTINUATION_CHARS = "".join(
    chr(code_point)
    for code_point in range(0x20, 0x250)  # ASCII, Latin-1, Latin Extended-A/B
    if unicodedata.category(chr(code_point))[0] in "LMN"
)


def _spaceless_chunks() -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.Split(Regex(SPACELESS_CHUNK_PATTERN), behavior="isolated")


def word_pre_tokenizer(spaceless: bool = False) -> pre_tokenizers.PreTokenizer:
    """The pre-tokeniser shared by vocabulary building, extraction and inference; ``spaceless``: a table with words of
    scripts written without spaces, whose long runs are cut (:data:`SPACELESS_CHUNK_PATTERN`)."""
    split = pre_tokenizers.Split(Regex(WORD_SEPARATOR_PATTERN), behavior="removed")
    return pre_tokenizers.Sequence([split, _spaceless_chunks()]) if spaceless else split


def fallback_pre_tokenizer(spaceless: bool = False, isolated: str | None = None) -> pre_tokenizers.PreTokenizer:
    """The pre-tokeniser of the fallback layout: the same words, plus each symbol character as a token;
    ``spaceless``: long runs of space-less scripts are cut in the same split (:data:`SPACELESS_ISOLATED_PATTERN`);
    ``isolated``: another second split (:data:`NFC_SPACELESS_ISOLATED_PATTERN`, of older tables)."""
    isolated = isolated or (SPACELESS_ISOLATED_PATTERN if spaceless else FALLBACK_ISOLATED_PATTERN)
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(FALLBACK_REMOVED_PATTERN), behavior="removed"),
            pre_tokenizers.Split(Regex(isolated), behavior="isolated"),
        ]
    )


def word_normalizer(lowercase: bool, sentinel: bool = False, form: str | None = None) -> normalizers.Normalizer:
    """The Unicode normalisation ``form`` (default: NFC, :data:`TRAINING_FORM`; with ``sentinel``, the fallback
    layout, NFKC: :data:`INFERENCE_FORM`), then lowercasing when the vocabulary is lowercase, then (fallback layout)
    the prepended sentinel."""
    form = form or (INFERENCE_FORM if sentinel else TRAINING_FORM)
    if form not in (TRAINING_FORM, INFERENCE_FORM):
        raise ValueError(f"form must be {TRAINING_FORM} or {INFERENCE_FORM}, got {form!r}.")
    members: list[normalizers.Normalizer] = [normalizers.NFKC() if form == INFERENCE_FORM else normalizers.NFC()]
    if lowercase:
        members.append(normalizers.Lowercase())
    if sentinel:
        members.append(normalizers.Prepend(SENTINEL))
    return members[0] if len(members) == 1 else normalizers.Sequence(members)


def split_words(text: str) -> list[str]:
    """Split ``text`` into words exactly as the saved pipeline does (before the vocabulary look-up)."""
    normalized = unicodedata.normalize("NFC", text)
    return [word for word, _ in word_pre_tokenizer().pre_tokenize_str(normalized)]


def _teacher_characters(teacher_tokenizer: Tokenizer | None) -> set[str]:
    if teacher_tokenizer is None:
        return set()
    characters: set[str] = set()
    for piece in teacher_tokenizer.get_vocab():
        characters.update(piece)
    return characters


def spaceless_run_keys() -> list[str]:
    """The keys a tokenizer with space-less words has for every character of those scripts and of the letters and
    digits written inside their runs (:data:`SPACELESS_RUN_RANGES`), alone and as a continuation: each is dropped
    unless it is a word, so one unknown character never makes a whole run unknown (``彼女は２０代`` reads
    ``彼女``, ``は`` and ``代``, not nothing)."""
    return [
        key
        for start, end in (*SPACELESS_RANGES, *SPACELESS_RUN_RANGES)
        for code_point in range(start, end + 1)
        for key in (chr(code_point), CONTINUATION_PREFIX + chr(code_point))
    ]


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


def token_targets(tokenizer: Tokenizer) -> tuple[np.ndarray, int]:
    """Map every token id of a word tokenizer to the table row it reads, or :data:`DROPPED`.

    Args:
        tokenizer: A tokenizer made by :func:`build_word_tokenizer` (possibly with :func:`add_fallback_layout`,
            saved and reloaded).

    Returns:
        ``(targets, num_words)``: ``targets[token_id]`` is a row in ``[0, num_words)`` or ``DROPPED``.

    Raises:
        ValueError: If the tokenizer does not have the layout of a word tokenizer.
    """
    vocab = tokenizer.get_vocab(with_added_tokens=False)
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


def _normalizer_members(tokenizer: Tokenizer) -> list[dict[str, Any]]:
    if tokenizer.normalizer is None:
        return []
    state = json.loads(tokenizer.normalizer.__getstate__())
    return list(state.get("normalizers", [])) if state.get("type") == "Sequence" else [state]


def fallback_layout(tokenizer: Tokenizer, vocab: dict[str, int] | None = None) -> FallbackLayout | None:
    """The fallback rows of a word tokenizer, or ``None`` when it has none (no prepended sentinel).

    Args:
        tokenizer: A word tokenizer.
        vocab: Its vocabulary, when the caller already has it.

    Raises:
        ValueError: If the tokenizer prepends the sentinel but has no row for it.
    """
    if not any(member == {"type": "Prepend", "prepend": SENTINEL} for member in _normalizer_members(tokenizer)):
        return None
    vocab = tokenizer.get_vocab(with_added_tokens=False) if vocab is None else vocab
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


def is_word_tokenizer(tokenizer: Tokenizer) -> bool:
    """Whether ``tokenizer`` was made by :func:`build_word_tokenizer` (its pre-tokeniser and model, with or without
    fallback rows), so that :func:`token_targets` describes it; a subword tokenizer (e.g. a model2vec or BERT one)
    is not."""
    if type(tokenizer.model).__name__ != "WordPiece" or tokenizer.pre_tokenizer is None:
        return False
    return json.loads(tokenizer.pre_tokenizer.__getstate__()) in (*_PLAIN_PRE_TOKENIZERS, *_FALLBACK_PRE_TOKENIZERS)


def has_fallback_pre_tokenizer(tokenizer: Tokenizer) -> bool:
    """Whether the tokenizer keeps symbol characters as tokens (the fallback layout's pre-tokeniser)."""
    return tokenizer.pre_tokenizer is not None and json.loads(tokenizer.pre_tokenizer.__getstate__()) in (
        _FALLBACK_PRE_TOKENIZERS
    )


def normalization_form(tokenizer: Tokenizer) -> str:
    """The Unicode normalisation the tokenizer applies: ``NFKC`` (the fallback layout since compatibility folding) or
    ``NFC`` (the plain layout, and the fallback layout of older tables)."""
    types = {member.get("type") for member in _normalizer_members(tokenizer)}
    return INFERENCE_FORM if INFERENCE_FORM in types else TRAINING_FORM


def is_lowercase_tokenizer(tokenizer: Tokenizer) -> bool:
    """Whether the tokenizer lowercases its input (its vocabulary is lowercase)."""
    return any(member.get("type") == "Lowercase" for member in _normalizer_members(tokenizer))


_PLAIN_PRE_TOKENIZERS = [json.loads(word_pre_tokenizer(spaceless).__getstate__()) for spaceless in (False, True)]
_FALLBACK_PRE_TOKENIZERS = [
    json.loads(fallback_pre_tokenizer(isolated=isolated).__getstate__())
    for isolated in (FALLBACK_ISOLATED_PATTERN, SPACELESS_ISOLATED_PATTERN, NFC_SPACELESS_ISOLATED_PATTERN)
]


# Characters after which a text can be cut without changing its words: separators (never part of a word) that
# no Unicode composition starts with. Whitespace qualifies whatever follows it; the other separators only
# before a character that cannot combine backwards (a starter that is not a mark).
_CUT_AFTER_CATEGORIES = frozenset({"Zs", "Zl", "Zp", "Cc", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po"})
_WHITESPACE = re.compile(r"\s")


def _is_cut_point(text: str, index: int) -> bool:
    """Whether cutting ``text`` before ``index`` leaves the normalised words of both sides unchanged."""
    before, after = text[index - 1], text[index]
    if before.isspace():
        return True
    if unicodedata.category(before) not in _CUT_AFTER_CATEGORIES:
        return False
    return unicodedata.combining(after) == 0 and unicodedata.category(after)[0] not in "MC"


def split_long_text(text: str, max_chars: int) -> list[str]:
    """Cut ``text`` into pieces of at most about ``max_chars`` characters at word boundaries.

    The word tokenizer gives the pieces, one after the other, exactly the tokens it gives the whole text: every
    cut follows whitespace, or a punctuation or control character before a character that cannot compose with
    it under NFC. A piece is longer than ``max_chars`` only where a text has no such boundary for that long
    (then the piece runs to the next whitespace).

    Args:
        text: Any text.
        max_chars: The longest piece wanted; at least 2.

    Returns:
        The pieces, whose concatenation is ``text``; ``[text]`` if it is short enough.

    Raises:
        ValueError: If ``max_chars`` is below 2.
    """
    if max_chars < 2:
        raise ValueError(f"max_chars must be at least 2, got {max_chars}.")
    pieces: list[str] = []
    start = 0
    while len(text) - start > max_chars:
        cut = _find_cut(text, start + max_chars // 2, start + max_chars)
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


def _find_cut(text: str, low: int, high: int) -> int:
    """A cut point in ``(low, high]`` (whitespace first, then other separators), else the next one after ``high``."""
    match = _WHITESPACE.search(text, low, high)
    if match is not None:
        return match.end()
    for index in range(high, low, -1):
        if _is_cut_point(text, index):
            return index
    match = _WHITESPACE.search(text, high)
    return len(text) if match is None else match.end()
