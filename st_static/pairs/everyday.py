"""Everyday translation pairs (the ``everyday`` set): the Battle for Wesnoth campaigns' dialogue, narration and names
(Debian's wesnoth-1.16 packages, any language), and the example sentences of the Ding German-English dictionary
(Debian's trans-de-en). Kept: an English side of 2-40 words with no markup, variables or format strings, a
translation that differs from it and is in its language's script."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath

from st_static.data_files import comparable_text
from st_static.pairs.catalogues import (
    clean_message,
    english_words,
    is_catalogue,
    is_translation,
    locale_directories,
    read_catalogue,
    script_prefixes,
)
from st_static.pairs.debian import Fetch, PackageError, Rows, deb_files, fetched_packages

WESNOTH_CAMPAIGNS = ("httt", "utbs", "nr", "trow", "did", "sof", "low", "dm", "tsg", "sotbe", "sota", "ei", "dw")
WESNOTH_PACKAGES = (
    "wesnoth-1.16-data",
    *(f"wesnoth-1.16-{campaign}" for campaign in (*WESNOTH_CAMPAIGNS, "l", "thot", "ttb")),
)
"""Debian 12's Battle for Wesnoth 1.16 packages with catalogues: the core data and the campaigns (GPL-2+)."""
WESNOTH_LEFT_OUT = frozenset({"wesnoth", "wesnoth-lib", "wesnoth-editor"})
"""Text domains of the game's user interface and editor (menus, settings), not read for everyday pairs."""
DING_PACKAGE = "trans-de-en"
DING_FILE = "usr/share/trans/de-en"
MIN_WORDS, MAX_WORDS = 2, 40
PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
TEXT_CONTEXT = re.compile(r"^[^\s^]+\^")  # Wesnoth's "teamname^Enemies": the context before ^
DING_ANNOTATION = re.compile(r"\s*(?:\{[^{}]*\}|\[[^\[\]]*\])")  # {m}, {pl}, [coll.], [Br.]
SENTENCE_END = (".", "!", "?")


def everyday_pair(english: str, other: str, prefixes: tuple[str, ...]) -> tuple[str, str] | None:
    """``(english, other)`` cleaned (mnemonics, spaces) when the everyday filters keep it, else ``None``."""
    english, other = clean_message(english) or "", clean_message(other) or ""
    if not english or not other or not MIN_WORDS <= english_words(english) <= MAX_WORDS:
        return None
    return (english, other) if is_translation(english, other, prefixes) else None


def paragraphs(english: str, other: str) -> list[tuple[str, str]]:
    """A message and its translation paragraph by paragraph (their lines joined) when both have as many paragraphs;
    none when they differ."""
    english_parts = [" ".join(part.split()) for part in PARAGRAPH_BREAK.split(english) if part.strip()]
    other_parts = [" ".join(part.split()) for part in PARAGRAPH_BREAK.split(other) if part.strip()]
    return list(zip(english_parts, other_parts, strict=True)) if len(english_parts) == len(other_parts) else []


def is_wesnoth_catalogue(path: PurePosixPath, directories: tuple[str, ...]) -> bool:
    """Whether ``path`` is a catalogue of ``directories`` of a text domain other than the interface's."""
    return is_catalogue(path, directories) and path.stem not in WESNOTH_LEFT_OUT


def wesnoth_rows(fetch: Fetch, language: str, skipped: list[str], packages: Iterable[str] = WESNOTH_PACKAGES) -> Rows:
    """The everyday pairs of the Wesnoth packages' ``language`` catalogues (source ``wesnoth``), each pair once."""
    directories, prefixes = locale_directories(language), script_prefixes(language)
    rows: dict[tuple[str, str], tuple[str, str, str]] = {}
    for package, deb in fetched_packages(packages, fetch, skipped):
        try:
            catalogues = deb_files(deb, lambda path: is_wesnoth_catalogue(path, directories))
        except PackageError as error:
            print(f"{package}: skipped ({error})")
            skipped.append(package)
            continue
        before = len(rows)
        for name, content in catalogues:
            try:
                catalogue = read_catalogue(name, content)
            except (OSError, ValueError) as error:
                print(f"{package}: {name} skipped ({error})")
                continue
            for entry in catalogue:
                if entry.msgid_plural or entry.obsolete or "fuzzy" in entry.flags or not entry.msgstr:
                    continue
                for english, other in paragraphs(TEXT_CONTEXT.sub("", entry.msgid), entry.msgstr):
                    if (pair := everyday_pair(english, other, prefixes)) is not None:
                        key = (comparable_text(pair[0]), comparable_text(pair[1]))
                        rows.setdefault(key, ("wesnoth", *pair))
        print(f"{package}: {len(rows) - before:,} everyday pairs ({len(catalogues)} catalogues)")
    return list(rows.values())


def ding_entries(text: str) -> Iterable[tuple[str, str]]:
    """``(german, english)`` of every aligned sub-entry of a Ding dictionary file (``German :: English`` lines, sub-
    entries separated by ``|``), annotations (``{n}``, ``[coll.]``) removed."""
    for line in text.splitlines():
        if line.startswith("#") or " :: " not in line:
            continue
        german, english = line.split(" :: ", 1)
        german_parts, english_parts = german.split(" | "), english.split(" | ")
        if len(german_parts) == len(english_parts):
            for german_part, english_part in zip(german_parts, english_parts, strict=True):
                yield DING_ANNOTATION.sub("", german_part).strip(), DING_ANNOTATION.sub("", english_part).strip()


def is_sentence(text: str) -> bool:
    """Whether ``text`` reads as a sentence: a capital letter first, ``.``, ``!`` or ``?`` last, no ``...``."""
    return bool(text) and text[0].isupper() and text.endswith(SENTENCE_END) and "..." not in text and "…" not in text


def ding_pairs(text: str, min_words: int = MIN_WORDS, slashes: bool = True) -> list[tuple[str, str]]:
    """``(english, german)`` example sentences of a Ding dictionary file: sub-entries whose alternatives (``;``) are
    sentences on both sides, up to 2 x 2 pairs per sub-entry; ``slashes=False`` drops alternatives written with a
    slash (``Nimm/Bring``)."""
    pairs = []
    for german, english in ding_entries(text):
        german_sentences = [part.strip() for part in german.split("; ") if is_sentence(part.strip())][:2]
        english_sentences = [part.strip() for part in english.split("; ") if is_sentence(part.strip())][:2]
        for english_sentence in english_sentences:
            for german_sentence in german_sentences:
                if not slashes and ("/" in english_sentence or "/" in german_sentence):
                    continue
                if (pair := everyday_pair(english_sentence, german_sentence, ())) and english_words(
                    pair[0]
                ) >= min_words:
                    pairs.append(pair)
    return pairs


def ding_rows(fetch: Fetch, skipped: list[str], min_words: int = MIN_WORDS, slashes: bool = True) -> Rows:
    """The Ding dictionary's sentence pairs (source ``ding``; German only), each pair once."""
    rows: dict[tuple[str, str], tuple[str, str, str]] = {}
    for package, deb in fetched_packages([DING_PACKAGE], fetch, skipped):
        try:
            files = deb_files(deb, lambda path: path.as_posix() == DING_FILE)
        except PackageError as error:
            print(f"{package}: skipped ({error})")
            skipped.append(package)
            continue
        for _, content in files:
            for english, german in ding_pairs(content.decode("utf-8", errors="replace"), min_words, slashes):
                rows.setdefault((comparable_text(english), comparable_text(german)), ("ding", english, german))
        print(f"{package}: {len(rows):,} dictionary sentence pairs")
    return list(rows.values())
