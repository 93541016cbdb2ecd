"""The text forms of the word tokenizer: its normalisers, its pre-tokenisers and their patterns, and how to tell them
apart in a saved tokenizer.

* normaliser (:func:`word_normalizer`): NFC (:data:`TRAINING_FORM`: vocabulary building, extraction, training), or
  NFKC (:data:`INFERENCE_FORM`: the fallback layout, which every finished table has), plus lowercasing when every
  vocabulary word is lowercase, plus (fallback layout) the prepended sentinel :data:`SENTINEL`;
* pre-tokeniser (:func:`word_pre_tokenizer`): words are maximal runs of letters, marks and numbers; every other
  character separates words and is dropped. The fallback layout's (:func:`fallback_pre_tokenizer`) gives the same
  words and keeps each punctuation or symbol character as a token of its own;
* the long-run cut: in a table with words of scripts written without spaces, a long run of those scripts is cut into
  pre-tokens of :data:`DEFAULT_MAX_WORD_CHARS` characters (:data:`SPACELESS_CHUNK_PATTERN`, and in the fallback layout
  :data:`INFERENCE_CHUNK_PATTERN`), so that it is segmented into the vocabulary's tokens instead of reading ``[UNK]``.

:mod:`st_static.model.tokenization` builds the tokenizer from these parts; :mod:`st_static.model.token_layouts` lays
out its ids.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

from tokenizers import Regex, Tokenizer, normalizers, pre_tokenizers

from st_static.model.languages import SPACELESS_RANGES, SPACELESS_RUN_RANGES

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


def normalizer_members(tokenizer: Tokenizer) -> list[dict[str, Any]]:
    """The normalisers the tokenizer applies in order, each as its JSON object (none, one, or a ``Sequence``'s)."""
    if tokenizer.normalizer is None:
        return []
    state = json.loads(tokenizer.normalizer.__getstate__())
    return list(state.get("normalizers", [])) if state.get("type") == "Sequence" else [state]


def is_word_tokenizer(tokenizer: Tokenizer) -> bool:
    """Whether ``tokenizer`` was made by :func:`~st_static.model.tokenization.build_word_tokenizer` (its
    pre-tokeniser and model, with or without fallback rows), so that
    :func:`~st_static.model.token_layouts.token_targets` describes it; a subword tokenizer (e.g. a model2vec or BERT
    one) is not."""
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
    types = {member.get("type") for member in normalizer_members(tokenizer)}
    return INFERENCE_FORM if INFERENCE_FORM in types else TRAINING_FORM


def is_lowercase_tokenizer(tokenizer: Tokenizer) -> bool:
    """Whether the tokenizer lowercases its input (its vocabulary is lowercase)."""
    return any(member.get("type") == "Lowercase" for member in normalizer_members(tokenizer))


_PLAIN_PRE_TOKENIZERS = [json.loads(word_pre_tokenizer(spaceless).__getstate__()) for spaceless in (False, True)]
_FALLBACK_PRE_TOKENIZERS = [
    json.loads(fallback_pre_tokenizer(isolated=isolated).__getstate__())
    for isolated in (FALLBACK_ISOLATED_PATTERN, SPACELESS_ISOLATED_PATTERN, NFC_SPACELESS_ISOLATED_PATTERN)
]
