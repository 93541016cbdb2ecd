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

Token ids are laid out as: ``[0, num_words)`` the vocabulary words (one table row each), ``num_words`` the
``[UNK]`` token, then extra keys: continuation pieces (dropped), case variants (``Apple`` for ``apple`` in a
case-sensitive vocabulary) and continuation forms of space-less tokens (``##語`` for ``語``), which both point
at a word's row. :func:`token_targets` recovers that mapping from any saved tokenizer.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Sequence

import numpy as np
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

from st_static.model.languages import SPACELESS_RANGES, is_spaceless_token

UNKNOWN_TOKEN = "[UNK]"
CONTINUATION_PREFIX = "##"
WORD_SEPARATOR_PATTERN = r"[^\p{L}\p{M}\p{N}]+"
DEFAULT_MAX_WORD_CHARS = 100
DROPPED = -1

_BASE_CONTINUATION_CHARS = "".join(
    chr(code_point)
    for code_point in range(0x20, 0x250)  # ASCII, Latin-1, Latin Extended-A/B
    if unicodedata.category(chr(code_point))[0] in "LMN"
)


def word_pre_tokenizer() -> pre_tokenizers.PreTokenizer:
    """The pre-tokeniser shared by vocabulary building, extraction and inference."""
    return pre_tokenizers.Split(Regex(WORD_SEPARATOR_PATTERN), behavior="removed")


def word_normalizer(lowercase: bool) -> normalizers.Normalizer:
    """NFC, then lowercasing when the vocabulary is lowercase."""
    if lowercase:
        return normalizers.Sequence([normalizers.NFC(), normalizers.Lowercase()])
    return normalizers.NFC()


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
        # Every character of those scripts is accepted on its own (dropped when unknown), so one unknown
        # character never makes a whole run unknown.
        for start, end in SPACELESS_RANGES:
            for code_point in range(start, end + 1):
                char = chr(code_point)
                add_key(char)
                add_key(CONTINUATION_PREFIX + char)
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
    tokenizer.pre_tokenizer = word_pre_tokenizer()
    tokenizer.decoder = decoders.WordPiece(prefix=CONTINUATION_PREFIX)
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def token_targets(tokenizer: Tokenizer) -> tuple[np.ndarray, int]:
    """Map every token id of a word tokenizer to the table row it reads, or :data:`DROPPED`.

    Args:
        tokenizer: A tokenizer made by :func:`build_word_tokenizer` (possibly saved and reloaded).

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
            if targets[token_id] != DROPPED and not is_spaceless_token(token):
                targets[token_id] = DROPPED  # continuation of a spaced word: the dropped remainder
        else:
            targets[token_id] = word_ids.get(token.lower(), DROPPED)
    return targets, num_words


def is_word_tokenizer(tokenizer: Tokenizer) -> bool:
    """Whether ``tokenizer`` was made by :func:`build_word_tokenizer` (its pre-tokeniser and model), so that
    :func:`token_targets` describes it; a subword tokenizer (e.g. a model2vec or BERT one) is not."""
    if type(tokenizer.model).__name__ != "WordPiece" or tokenizer.pre_tokenizer is None:
        return False
    pre_tokenizer = json.loads(tokenizer.pre_tokenizer.__getstate__())
    return (
        pre_tokenizer.get("type") == "Split"
        and pre_tokenizer.get("pattern") == {"Regex": WORD_SEPARATOR_PATTERN}
        and pre_tokenizer.get("behavior") == "Removed"
    )


def is_lowercase_tokenizer(tokenizer: Tokenizer) -> bool:
    """Whether the tokenizer lowercases its input (its vocabulary is lowercase)."""
    normalizer = json.loads(tokenizer.to_str()).get("normalizer") or {}
    members = normalizer.get("normalizers", [normalizer])
    return any(member.get("type") == "Lowercase" for member in members)


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
