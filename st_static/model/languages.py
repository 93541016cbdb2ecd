"""Languages and scripts: which languages are lowercased or written without spaces, and the Unicode ranges that tell."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

CodePointRanges = tuple[tuple[int, int], ...]

SPACELESS_RANGES: CodePointRanges = (
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width Katakana
)
"""Scripts written without spaces between words that the word tokenizer segments into vocabulary tokens."""
SPACELESS_RUN_RANGES: CodePointRanges = (
    (0x3005, 0x3007),  # iteration mark, closing mark, ideographic zero
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3031, 0x3035),  # kana repeat marks
    (0x303B, 0x303C),  # vertical ideographic iteration mark, masu mark
    (0xFF10, 0xFF19),  # full-width digits
    (0xFF21, 0xFF3A),  # full-width Latin capitals
    (0xFF41, 0xFF5A),  # full-width Latin small letters
)
"""Letters and digits written inside runs of those scripts (``２０代``, ``ＣＤを``) that are not in their ranges: the
tokenizer of a table with space-less words accepts each alone, so that none makes a whole run unknown."""
KANA_RANGES: CodePointRanges = ((0x3040, 0x309F), (0x30A0, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F))
HANGUL_RANGES: CodePointRanges = ((0x1100, 0x11FF), (0x3130, 0x318F), (0xAC00, 0xD7AF))
HAN_RANGES: CodePointRanges = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF))

SCRIPT_RANGES: dict[str, CodePointRanges] = {
    # ASCII letters, then the letters with diacritics: Latin-1 (é, ü, ß), Extended-A/B (ł, ş, ğ, ř), Additional (ạ)
    "Latin": ((0x0041, 0x005A), (0x0061, 0x007A), (0x00C0, 0x024F), (0x1E00, 0x1EFF)),
    "Greek": ((0x0370, 0x03FF), (0x1F00, 0x1FFF)),
    "Cyrillic": ((0x0400, 0x052F),),
    "Arabic": ((0x0600, 0x06FF), (0x0750, 0x077F)),
    "Hangul": HANGUL_RANGES,
    "Kana": KANA_RANGES,
    "Han": HAN_RANGES,
}
"""The scripts whose letters a table's rows are counted by (:mod:`st_static.model.script_coverage`)."""
_LATIN_LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "nl", "pl", "cs", "tr", "sv", "fi", "hu", "id", "vi")
LANGUAGE_SCRIPTS: dict[str, tuple[str, ...]] = {
    **{language: ("Latin",) for language in _LATIN_LANGUAGES},
    "ru": ("Cyrillic",),
    "uk": ("Cyrillic",),
    "ko": ("Hangul",),
    "ja": ("Kana", "Han"),
    "zh": ("Han",),
    "ar": ("Arabic",),
}
"""The scripts (keys of :data:`SCRIPT_RANGES`) each language is written in."""

JAPANESE_LANGUAGES = frozenset({"ja", "jpn"})
CHINESE_LANGUAGES = frozenset({"zh", "cmn", "zho", "yue"})
SPACELESS_LANGUAGES = JAPANESE_LANGUAGES | CHINESE_LANGUAGES
"""Languages whose vocabulary is the teacher's tokens (no spaces to split words at). Korean is written with spaces:
its vocabulary is words."""
LOWERCASED_LANGUAGES = frozenset({"en", "eng"})
"""Languages whose vocabulary is lowercased (as in the paper); others keep case (German nouns). Keeping case also
spares Turkish Python's language-blind lowercasing (``"I".lower()`` is ``"i"``, not the dotless U+0131; ``"İ".lower()``
is ``"i"`` plus a combining dot); a lowercase word still reads its capitalised and upper-case forms (the word
tokenizer's case variants)."""

LANGUAGE_NAMES = {
    "en": "English",
    "de": "German",
    "ja": "Japanese",
    "zh": "Chinese",
    "fr": "French",
    "es": "Spanish",
    "it": "Italian",
    "nl": "Dutch",
    "pt": "Portuguese",
    "ru": "Russian",
    "ko": "Korean",
    "ar": "Arabic",
    "cs": "Czech",
    "fi": "Finnish",
    "hu": "Hungarian",
    "id": "Indonesian",
    "pl": "Polish",
    "sv": "Swedish",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "vi": "Vietnamese",
}

ISO_639_3 = {
    "en": "eng",
    "ar": "ara",
    "cs": "ces",
    "de": "deu",
    "es": "spa",
    "fi": "fin",
    "fr": "fra",
    "hu": "hun",
    "id": "ind",
    "it": "ita",
    "ja": "jpn",
    "ko": "kor",
    "nl": "nld",
    "pl": "pol",
    "pt": "por",
    "ru": "rus",
    "sv": "swe",
    "tr": "tur",
    "uk": "ukr",
    "vi": "vie",
    "zh": "cmn",
}
"""The ISO 639-3 code that names each language's bitext files (``tatoeba/fra-eng.tsv``, ``xling/tuxpaint/kor-eng.tsv``),
by the ISO 639-1 code models list; Chinese is Mandarin (``cmn``)."""
ISO_639_1 = {three: two for two, three in ISO_639_3.items()} | {"zho": "zh"}
"""ISO 639-3 code -> the ISO 639-1 code models list (``fra`` -> ``fr``; ``zho`` and ``cmn`` -> ``zh``)."""


def in_ranges(char: str, ranges: CodePointRanges) -> bool:
    """Whether ``char`` lies in one of the code-point ``ranges``."""
    code_point = ord(char)
    return any(start <= code_point <= end for start, end in ranges)


def is_spaceless_char(char: str) -> bool:
    """Whether ``char`` belongs to a script written without spaces (Chinese, Japanese)."""
    return in_ranges(char, SPACELESS_RANGES)


def is_spaceless_token(token: str) -> bool:
    """Whether a vocabulary token contains a character of a space-less script."""
    return any(is_spaceless_char(char) for char in token)


def has_spaceless_language(languages: Iterable[str]) -> bool:
    """Whether any of ``languages`` is written without spaces."""
    return bool(SPACELESS_LANGUAGES & set(languages))


def two_letter_code(code: str) -> str:
    """The ISO 639-1 code of an ISO 639-3 ``code`` (``fra`` -> ``fr``); any other code as it is."""
    return ISO_639_1.get(code, code)


def language_name(code: str) -> str:
    """The English name of a language code, or the code itself when unknown."""
    return LANGUAGE_NAMES.get(code, code)


def script_of(char: str) -> str | None:
    """The script (a key of :data:`SCRIPT_RANGES`) of a letter ``char``; ``None`` for other characters (digits,
    punctuation, symbols) and letters of scripts not listed."""
    if unicodedata.category(char)[0] != "L":
        return None
    return next((script for script, ranges in SCRIPT_RANGES.items() if in_ranges(char, ranges)), None)


def language_scripts(code: str) -> tuple[str, ...]:
    """The scripts ``code`` is written in (``ja``: Kana and Han); none for a language not listed."""
    if code in JAPANESE_LANGUAGES:
        return LANGUAGE_SCRIPTS["ja"]
    if code in CHINESE_LANGUAGES:
        return LANGUAGE_SCRIPTS["zh"]
    return LANGUAGE_SCRIPTS.get(two_letter_code(code), ())
