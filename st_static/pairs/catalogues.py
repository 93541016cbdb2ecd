"""The messages of gettext catalogues as translation pairs: which messages are kept, cleaned of mnemonics, in the
script of their language; and the language codes ``st-static pairs`` takes."""

from __future__ import annotations

import re
import unicodedata
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from st_static.data_files import comparable_text
from st_static.errors import MissingExtraError, StStaticError

if TYPE_CHECKING:
    import polib


class PairsError(StStaticError, ValueError):
    """Translation pairs that cannot be made: a bad language code, a refused package, nothing left to write."""


LANGUAGE_CODE = re.compile(r"^[a-z]{2,3}(?:[_-](?:[A-Za-z]{2}|[A-Z][a-z]{3}))?(?:@[a-z]+)?$")
LOCALE_ALIASES = {"pt": ("pt", "pt_BR"), "zh": ("zh_CN",)}
"""Short codes that stand for their country forms too (Debian's Chinese catalogues are ``zh_CN`` and ``zh_TW``)."""
SCRIPTS = {
    ("ja",): ("CJK", "HIRAGANA", "KATAKANA"),
    ("zh", "yue"): ("CJK",),
    ("ko",): ("HANGUL",),
    ("ru", "uk", "be", "bg", "mk", "sr", "kk", "ky", "mn", "tg", "tt"): ("CYRILLIC",),
    ("ar", "fa", "ur", "ps", "ug", "ckb"): ("ARABIC",),
    ("he", "yi"): ("HEBREW",),
    ("el",): ("GREEK",),
    ("hi", "mr", "ne", "sa"): ("DEVANAGARI",),
    ("bn", "as"): ("BENGALI",),
    ("gu",): ("GUJARATI",),
    ("pa",): ("GURMUKHI",),
    ("ta",): ("TAMIL",),
    ("te",): ("TELUGU",),
    ("kn",): ("KANNADA",),
    ("ml",): ("MALAYALAM",),
    ("si",): ("SINHALA",),
    ("th",): ("THAI",),
    ("lo",): ("LAO",),
    ("km",): ("KHMER",),
    ("my",): ("MYANMAR",),
    ("ka",): ("GEORGIAN",),
    ("hy",): ("ARMENIAN",),
    ("am", "ti"): ("ETHIOPIC",),
    ("bo", "dz"): ("TIBETAN",),
}
"""Languages of a non-Latin script -> the Unicode name prefixes of its letters."""
SCRIPT_SHARE = 0.2
MIN_ENGLISH_WORDS = 4
PLACEHOLDER_OR_MARKUP = re.compile(
    r"%(?:\d+\$)?[-+#0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|ll|[hlLqjzt])?[diouxXeEfFgGaAcspnm%]"  # printf: %s %1$s
    r"|%\(\w*\)|%\d|%\w+%"  # Python %(name)s, Qt %1, %VAR%
    r"|\{[^{}]*\}"  # {} {0} {name}
    r"|\$\{?\w"  # $VAR ${VAR} $1
    r"|<[A-Za-z/!?][^>]*>|&#?\w+;"  # markup and entities
    r"|\\|[\n\r\t]"  # escapes and line breaks
)
MNEMONIC_IN_PARENTHESES = re.compile(r"\s*\([_&][^\W_]\)")  # "開く(_O)", "(&F)"
AMPERSAND_MNEMONIC = re.compile(r"&(&)|&(?=[^\W_])")  # "&File" -> "File", "&&" -> "&"
UNDERSCORE_MNEMONIC = re.compile(r"_(?=[^\W_])")  # "_Open" -> "Open"


def check_language(language: str) -> str:
    """``language`` if it is a gettext locale code other than English (``fr``, ``pt_BR``, ``sr@latin``).

    Raises:
        PairsError: If it is not one, or is English (the pairs are English-LANG).
    """
    if not LANGUAGE_CODE.match(language):
        raise PairsError(
            f"{language!r} is not a language code: give a gettext locale code such as fr, pt_BR, zh_CN or sr@latin."
        )
    if re.split(r"[_@-]", language)[0] == "en":
        raise PairsError(f"{language}: the pairs are English-LANG; give the other language (fr, de, ...).")
    return language


def require_polib() -> None:
    """Raise :class:`~st_static.errors.MissingExtraError` with the ``pip install`` to run when polib is missing."""
    try:
        import polib  # noqa: F401
    except ImportError as error:
        raise MissingExtraError("Reading gettext catalogues needs polib: pip install 'st-static[pairs]'.") from error


def locale_directories(language: str) -> tuple[str, ...]:
    """The catalogue folder names of ``language``: ``pt`` -> ``pt``, ``pt_BR`` (and LibreOffice's ``pt-BR``)."""
    names = LOCALE_ALIASES.get(language, (language.replace("-", "_"),))
    return tuple(dict.fromkeys(form for name in names for form in (name, name.replace("_", "-"))))


def script_prefixes(language: str) -> tuple[str, ...]:
    """The Unicode name prefixes a translation into ``language`` must use (none for Latin-script languages)."""
    if "@latin" in language:
        return ()
    base = re.split(r"[_@-]", language)[0]
    return next((prefixes for languages, prefixes in SCRIPTS.items() if base in languages), ())


def in_script(text: str, prefixes: tuple[str, ...]) -> bool:
    """Whether at least ``SCRIPT_SHARE`` of the letters of ``text`` have a name starting with one of ``prefixes``."""
    letters = [char for char in text if char.isalpha()]
    inside = sum(unicodedata.name(char, "").startswith(prefixes) for char in letters)
    return bool(letters) and inside >= SCRIPT_SHARE * len(letters)


def clean_message(text: str) -> str | None:
    """``text`` without mnemonics and outer spaces; ``None`` when it holds a placeholder, markup or a line break."""
    if PLACEHOLDER_OR_MARKUP.search(text):
        return None
    text = AMPERSAND_MNEMONIC.sub(r"\1", MNEMONIC_IN_PARENTHESES.sub("", text))
    text = UNDERSCORE_MNEMONIC.sub("", text, count=1)
    return None if "_" in text else " ".join(text.split())


def english_words(text: str) -> int:
    """The words of ``text`` that hold a letter."""
    return sum(any(char.isalpha() for char in word) for word in text.split())


def is_translation(english: str, other: str, prefixes: tuple[str, ...]) -> bool:
    """Whether ``other`` differs from ``english`` and, for a language of a non-Latin script, is written in it."""
    return comparable_text(other) != comparable_text(english) and (not prefixes or in_script(other, prefixes))


def catalogue_pairs(catalogue: polib.MOFile | polib.POFile, prefixes: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """``(english, translation)`` for every single-line prose message of ``catalogue`` the filters keep."""
    pairs = []
    for entry in catalogue:
        if entry.msgctxt or entry.msgid_plural or entry.obsolete or "fuzzy" in entry.flags or not entry.msgstr:
            continue
        english, other = clean_message(entry.msgid), clean_message(entry.msgstr)
        if not english or not other or not english[0].isalpha() or english_words(english) < MIN_ENGLISH_WORDS:
            continue
        if is_translation(english, other, prefixes):
            pairs.append((english, other))
    return pairs


def is_catalogue(path: PurePosixPath, directories: tuple[str, ...]) -> bool:
    """Whether ``path`` is a catalogue of one of ``directories``: ``DIRECTORY/LC_MESSAGES/*.mo`` or ``DIRECTORY.po``."""
    parts = path.parts
    if path.suffix == ".po":
        return path.stem in directories
    return path.suffix == ".mo" and len(parts) >= 3 and parts[-2] == "LC_MESSAGES" and parts[-3] in directories


def read_catalogue(name: str, content: bytes) -> polib.MOFile | polib.POFile:
    """The catalogue ``content`` of the file ``name``: compiled (``.mo``) or, for ``.po``, UTF-8 text.

    Raises:
        ValueError: If it cannot be read (a bad magic number, text that is not UTF-8).
    """
    import polib

    if name.endswith(".po"):
        return polib.pofile(content.decode("utf-8"))
    return polib.mofile(content)
