"""Languages and scripts: which languages are lowercased or written without spaces, and the Unicode ranges that tell."""

from __future__ import annotations

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

JAPANESE_LANGUAGES = frozenset({"ja", "jpn"})
CHINESE_LANGUAGES = frozenset({"zh", "cmn", "zho", "yue"})
SPACELESS_LANGUAGES = JAPANESE_LANGUAGES | CHINESE_LANGUAGES
"""Languages whose vocabulary is the teacher's tokens (no spaces to split words at)."""
LOWERCASED_LANGUAGES = frozenset({"en", "eng"})
"""Languages whose vocabulary is lowercased (as in the paper); others keep case (German nouns)."""

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
}


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


def language_name(code: str) -> str:
    """The English name of a language code, or the code itself when unknown."""
    return LANGUAGE_NAMES.get(code, code)
