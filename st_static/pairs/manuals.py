"""Paragraph pairs of the Debian Reference (Osamu Aoki and translators, GPL-2+; Debian's debian-reference-en and
debian-reference-LANG 2.100): each chapter's HTML read as a sequence of blocks (``p``, ``li``, ``dt``, headings, table
cells, the title); a chapter is used only when the English and the translated sequences have the same structure, and
then its ``p``, ``li`` and ``dt`` blocks are paired one to one. Kept: an English side of at least 5 words, a
translation that differs from it and is in its language's script, no format placeholder on either side."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import PurePosixPath

from st_static.data_files import comparable_text
from st_static.pairs.catalogues import PLACEHOLDER_OR_MARKUP, english_words, is_translation, script_prefixes
from st_static.pairs.debian import Fetch, PackageError, Rows, deb_files, fetched_packages

REFERENCE_FOLDER = "usr/share/debian-reference/"
REFERENCE_CODES = {"zh": "zh-cn", "zh_CN": "zh-cn", "zh_TW": "zh-tw", "pt_BR": "pt-br"}
BLOCKS = frozenset({"p", "li", "dt", "h1", "h2", "h3", "h4", "h5", "h6", "td", "th", "title"})
PAIRED = frozenset({"p", "li", "dt"})
MIN_WORDS = 5
CHAPTER = re.compile(r"^(?P<chapter>[a-z]+\d*)\.(?P<code>[a-z]{2}(?:-[a-z]{2})?)\.html$")


class BlockReader(HTMLParser):
    """The blocks of an HTML page in the order they close: ``(tag, text)``, a block's text without its inner blocks'."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[str, str]] = []
        self._open: list[tuple[str, list[str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in BLOCKS:
            self._open.append((tag, []))

    def handle_endtag(self, tag: str) -> None:
        if tag in BLOCKS and any(name == tag for name, _ in self._open):
            while self._open:
                name, parts = self._open.pop()
                self.blocks.append((name, " ".join("".join(parts).split())))
                if name == tag:
                    break

    def handle_data(self, data: str) -> None:
        if self._open:
            self._open[-1][1].append(data)


def page_blocks(html: str) -> list[tuple[str, str]]:
    """The blocks of the HTML page ``html`` (:class:`BlockReader`)."""
    reader = BlockReader()
    reader.feed(html)
    reader.close()
    return reader.blocks


def chapter_pairs(english: str, translated: str, prefixes: tuple[str, ...]) -> list[tuple[str, str]]:
    """The paragraph pairs of one chapter in English and translated (none when their block structures differ)."""
    english_blocks, other_blocks = page_blocks(english), page_blocks(translated)
    if [tag for tag, _ in english_blocks] != [tag for tag, _ in other_blocks]:
        return []
    pairs = []
    for (tag, english_text), (_, other_text) in zip(english_blocks, other_blocks, strict=True):
        if tag not in PAIRED or english_words(english_text) < MIN_WORDS or not other_text:
            continue
        if PLACEHOLDER_OR_MARKUP.search(english_text) or PLACEHOLDER_OR_MARKUP.search(other_text):
            continue
        if is_translation(english_text, other_text, prefixes):
            pairs.append((english_text, other_text))
    return pairs


def reference_code(language: str) -> str:
    """The Debian Reference's code of ``language`` (``zh`` -> ``zh-cn``, ``pt_BR`` -> ``pt-br``)."""
    return REFERENCE_CODES.get(language, language.lower().replace("_", "-"))


def chapters(files: list[tuple[str, bytes]], code: str) -> dict[str, str]:
    """``{chapter: html}`` of the pages of the Debian Reference in ``code`` among ``files``."""
    found = {}
    for name, content in files:
        match = CHAPTER.match(PurePosixPath(name).name)
        if match and match.group("code") == code:
            found[match.group("chapter")] = content.decode("utf-8", errors="replace")
    return found


def reference_rows(fetch: Fetch, language: str, skipped: list[str]) -> Rows:
    """The Debian Reference's paragraph pairs of ``language`` (source ``debian-reference``), each pair once."""
    code = reference_code(language)
    packages = ["debian-reference-en", f"debian-reference-{code}"]
    pages: dict[str, dict[str, str]] = {}
    for package, deb in fetched_packages(packages, fetch, skipped):
        try:
            files = deb_files(deb, lambda path: path.as_posix().startswith(REFERENCE_FOLDER) and path.suffix == ".html")
        except PackageError as error:
            print(f"{package}: skipped ({error})")
            skipped.append(package)
            continue
        pages[package] = chapters(files, "en" if package.endswith("-en") else code)
    if len(pages) < 2:
        return []
    english, translated = pages[packages[0]], pages[packages[1]]
    prefixes = script_prefixes(language)
    rows: dict[tuple[str, str], tuple[str, str, str]] = {}
    used = 0
    for chapter in sorted(english.keys() & translated.keys()):
        pairs = chapter_pairs(english[chapter], translated[chapter], prefixes)
        used += bool(pairs)
        for english_text, other_text in pairs:
            key = (comparable_text(english_text), comparable_text(other_text))
            rows.setdefault(key, ("debian-reference", english_text, other_text))
    print(f"debian-reference: {len(rows):,} paragraph pairs from {used} of {len(english)} chapters")
    return list(rows.values())
