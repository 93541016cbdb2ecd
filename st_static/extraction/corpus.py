"""Streaming sentences from a text file, a list of str or a `datasets` dataset, and checking a corpus first."""

from __future__ import annotations

import codecs
import hashlib
import itertools
import json
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from st_static.data_files import DataFormatError, read_translation_pairs
from st_static.errors import StStaticError
from st_static.extraction.pair_sources import SourceFilter, source_file
from st_static.files import content_digest, file_key
from st_static.model.languages import (
    JAPANESE_LANGUAGES,
    KANA_RANGES,
    SPACELESS_LANGUAGES,
    in_ranges,
    is_spaceless_char,
    language_name,
)

logger = logging.getLogger(__name__)

CorpusSource = str | os.PathLike[str] | Iterable[str] | Any
"""A UTF-8 text file (one sentence per line), several (:class:`CorpusFiles`), a list of str, or a
``datasets.Dataset`` with a text column."""

MIN_CORPUS_SENTENCES = 10
"""Fewer sentences than this cannot make a table (PCA, validation and batches need some)."""
SMALL_CORPUS_SENTENCES = 10_000
"""Below this many sentences a build warns that the table will be weak (the method reads ~100k-1M)."""
MAX_BAD_LINE_SHARE = 0.1
"""A text file with more than this share of lines that are not UTF-8 is refused rather than skimmed."""
LANGUAGE_SAMPLE_LINES = 1000
"""The first lines :func:`check_corpus_language` looks at."""


class CorpusError(StStaticError, ValueError):
    """The corpus cannot be read or is too small for the job."""


@dataclass(frozen=True)
class CorpusFiles:
    """Corpus files read as one corpus, file after file in the order given; of a file with an aligned
    ``FILE-STEM.source.txt`` (one source name per line), only the lines whose source ``source_filter`` keeps."""

    paths: tuple[Path, ...]
    source_filter: SourceFilter = field(default_factory=SourceFilter)

    def __iter__(self) -> Iterator[str]:
        for path in self.paths:
            sources = source_file(path)
            if not (self.source_filter.active and sources.is_file()):
                yield from iter_sentences(path)
                continue
            with path.open("rb") as lines, sources.open(encoding="utf-8-sig") as names:  # a BOM is no source
                for raw, name in zip(lines, names, strict=False):
                    if not self.source_filter.kept(name.strip()) or b"\0" in raw:
                        continue
                    try:
                        sentence = " ".join(raw.decode("utf-8").split())
                    except UnicodeDecodeError:
                        continue
                    if sentence:
                        yield sentence


def corpus_files(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], source_filter: SourceFilter | None = None
) -> CorpusSource:
    """The corpus of one file (its path, unchanged) or of several, or of files whose lines ``source_filter``
    chooses by their aligned ``.source.txt`` (:class:`CorpusFiles`).

    Raises:
        CorpusError: If ``paths`` is empty or names one file twice.
    """
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    listed = [Path(path) for path in paths]
    if not listed:
        raise CorpusError("No corpus file given.")
    seen: dict[tuple[int, int] | str, Path] = {}
    for path in listed:
        key = file_key(path)  # a link (hard or symbolic) to a file given before is that file again
        if key in seen:
            raise CorpusError(f"Corpus file {path} is given twice (also as {seen[key]}).")
        seen[key] = path
    filtered = source_filter is not None and source_filter.active and any(source_file(p).is_file() for p in listed)
    if len(listed) == 1 and not filtered:
        return str(listed[0])
    return CorpusFiles(tuple(listed), source_filter if filtered and source_filter is not None else SourceFilter())


def corpus_paths(source: CorpusSource) -> list[Path]:
    """The files a corpus source reads (none for sentences given in memory)."""
    if isinstance(source, CorpusFiles):
        return list(source.paths)
    if isinstance(source, str | os.PathLike):
        return [Path(source)]
    return []


@dataclass(frozen=True)
class CorpusReport:
    """What a first pass over the corpus found."""

    sentences: int
    """Non-empty sentences."""
    skipped_lines: int
    """Lines that are not valid UTF-8 text: invalid bytes, or NUL bytes (binary data); left out."""


def _utf16_bom(path: Path) -> bool:
    with path.open("rb") as handle:
        start = handle.read(4)
    return start.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or (len(start) == 4 and start[1::2] == b"\0\0")


def _cr_line_endings(path: Path) -> bool:
    """Whether the file's lines end with CR alone (classic Mac OS): its start has CRs between texts and no LF."""
    with path.open("rb") as handle:
        start = handle.read(1 << 16)
    return b"\n" not in start and sum(1 for part in start.split(b"\r") if part.strip()) > 1


def _file_lines(path: Path, skipped: list[int]) -> Iterator[str]:
    """The decoded lines of a UTF-8 file; lines with invalid bytes or NUL bytes (no text has them: binary data)
    are counted in ``skipped[0]`` and left out."""
    with path.open("rb") as handle:
        for raw in handle:
            if b"\0" in raw:
                skipped[0] += 1
                continue
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError:
                skipped[0] += 1


def iter_sentences(source: CorpusSource, text_column: str = "text") -> Iterator[str]:
    """Yield the sentences of ``source`` with whitespace normalised; empty ones are skipped.

    Args:
        source: A path to a UTF-8 text file with one sentence per line (lines that are not valid UTF-8 text are left
            out; :func:`check_corpus` reports them), a ``datasets.Dataset`` (or any iterable of dicts) with a
            ``text_column``, or an iterable of str.
        text_column: The column to read from a dataset.

    Raises:
        CorpusError: If the path does not exist or an item is not a str.
    """
    if isinstance(source, CorpusFiles):
        yield from source
        return
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.is_file():
            raise CorpusError(f"Corpus file {path} does not exist.")
        for line in _file_lines(path, [0]):
            sentence = " ".join(line.split())
            if sentence:
                yield sentence
        return
    column_names = getattr(source, "column_names", None)
    if column_names is not None and text_column not in column_names:
        raise CorpusError(f"The dataset has no {text_column!r} column (columns: {column_names}).")
    for index, item in enumerate(source):
        if isinstance(item, dict) and text_column not in item:
            raise CorpusError(
                f"Corpus item {index} has the fields {sorted(map(str, item))}, not {text_column!r}: give str items, "
                f"or dicts (dataset rows) with a {text_column!r} field."
            )
        text = item[text_column] if isinstance(item, dict) else item
        if not isinstance(text, str):
            raise CorpusError(f"Corpus item {index} is {type(text).__name__}, not str.")
        sentence = " ".join(text.split())
        if sentence:
            yield sentence


def _json_records(path: Path) -> str | None:
    """How a file that holds JSON records starts (``'a JSON array of objects with the fields [...]'``), else ``None``.

    Only the first record is read: a JSON object (JSON Lines, or the first item of an array) or a string item.
    """
    with path.open("rb") as handle:
        head = handle.read(1 << 16).decode("utf-8", errors="ignore").lstrip("\ufeff \t\r\n")
    array = head.startswith("[")
    body = head[1:].lstrip() if array else head
    if not (body.startswith("{") or (array and body.startswith('"'))):
        return None
    try:
        first, end = json.JSONDecoder().raw_decode(body)
    except (ValueError, RecursionError):
        return None
    rest = body[end:].lstrip()
    if isinstance(first, dict):
        fields = sorted(map(str, first))
        return f"{'a JSON array of' if array else 'JSON Lines:'} objects with the fields {fields}"
    if isinstance(first, str) and array and rest.startswith((",", "]")):
        return "a JSON array of strings"
    return None


def check_corpus_source(source: CorpusSource, kind: str = "Corpus file") -> None:
    """Fail early (before loading a teacher) when a corpus path is missing, empty, UTF-16, JSON or has CR-only line
    endings, or a corpus given in memory cannot be read twice (a generator). Messages call a file ``kind``."""
    if isinstance(source, CorpusFiles):
        for path in source.paths:
            check_corpus_source(path, kind)
    elif isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.exists():
            raise CorpusError(f"{kind} {path} does not exist.")
        if not path.is_file():
            raise CorpusError(f"{kind.rsplit(' ', 1)[0]} path {path} is not a file (expected one sentence per line).")
        if path.stat().st_size == 0:
            raise CorpusError(f"{kind} {path} is empty.")
        if not os.access(path, os.R_OK):
            raise CorpusError(f"{kind} {path} is not readable (permission denied).")
        if _utf16_bom(path):
            raise CorpusError(
                f"{kind} {path} looks like UTF-16; convert it to UTF-8 first (e.g. iconv -f UTF-16 -t UTF-8)."
            )
        if _cr_line_endings(path):
            raise CorpusError(
                f"{kind} {path} ends its lines with CR (\\r) alone, not LF (\\n): it would read as one line. "
                "Convert its line endings first (e.g. tr '\\r' '\\n' < OLD > NEW, or mac2unix FILE)."
            )
        records = _json_records(path)
        if records is not None:
            raise CorpusError(
                f"{kind} {path} holds {records}, not plain text: a corpus file has one sentence per line. "
                "Write the sentences one per line (e.g. with jq -r), or pass st_static.distill a list of str or a "
                "dataset with a 'text' column."
            )
    elif isinstance(source, Iterator):
        raise CorpusError("The corpus is read more than once: give a list, a dataset or a file, not a generator.")
    elif not isinstance(source, Iterable) or isinstance(source, bytes | dict):
        raise CorpusError(
            f"The corpus must be a file path, a list of str or a datasets.Dataset, got {type(source).__name__}."
        )


def check_corpus(
    source: CorpusSource, name: str = "corpus", min_sentences: int = MIN_CORPUS_SENTENCES, kind: str = "Corpus file"
) -> CorpusReport:
    """Read the corpus once before any heavy work: count its sentences and lines that are not UTF-8.

    Args:
        source: The corpus (see :func:`iter_sentences`).
        name: How messages name it.
        min_sentences: The fewest sentences it may have; below :data:`MIN_CORPUS_SENTENCES` (a file read
            for another purpose than the vocabulary) a small file is not warned about.
        kind: What messages call a file (``"Corpus file"``, ``"Translation-pair file"``, ...).

    Raises:
        CorpusError: If it is missing, empty, UTF-16, mostly not UTF-8, or has fewer than ``min_sentences``
            sentences.
    """
    check_corpus_source(source, kind)
    skipped = [0]
    lines = 0
    sentences = 0
    carriage_returns = 0
    if isinstance(source, CorpusFiles):  # each file readable and not empty; the sizes add up
        reports = [check_corpus(path, name=path.name, min_sentences=1) for path in source.paths]
        sentences = sum(report.sentences for report in reports)
        skipped[0] = sum(report.skipped_lines for report in reports)
        lines = sentences  # each file's share of bad lines was checked on its own
    elif isinstance(source, str | os.PathLike):
        for line in _file_lines(Path(source), skipped):
            lines += 1
            sentences += bool(line.strip())
            carriage_returns += "\r" in line.rstrip("\n").rstrip("\r")
        if carriage_returns:
            logger.warning(
                "%s: %d line%s CR (\\r) inside: part of the file ends its lines with CR alone, and each such run "
                "of texts is read as one line. Convert its line endings first (e.g. tr '\\r' '\\n' < OLD > NEW).",
                name,
                carriage_returns,
                " holds" if carriage_returns == 1 else "s hold",
            )
    else:
        sentences = sum(1 for _ in iter_sentences(source))
    total = lines + skipped[0]
    if skipped[0] and not isinstance(source, CorpusFiles):
        if skipped[0] > MAX_BAD_LINE_SHARE * total:
            raise CorpusError(
                f"{name}: {skipped[0]:,} of {total:,} lines are not valid UTF-8 text; is it a binary file? Convert a "
                "text file to UTF-8 first (e.g. iconv -f LATIN1 -t UTF-8)."
            )
        logger.warning("%s: %d of %d lines are not valid UTF-8 text and are left out.", name, skipped[0], total)
    builds_a_table = min_sentences >= MIN_CORPUS_SENTENCES  # else a file of pairs or passages
    if sentences < min_sentences:
        in_memory = not isinstance(source, CorpusFiles | str | os.PathLike)  # its name counts the sentences already
        raise CorpusError(
            f"{'The corpus given in memory' if in_memory else name} has only {sentences} sentence(s); at least "
            f"{min_sentences:,} are needed"
            + (f" (and {SMALL_CORPUS_SENTENCES:,} or more for a useful table)." if builds_a_table else ".")
        )
    if builds_a_table and sentences < SMALL_CORPUS_SENTENCES:
        logger.warning(
            "%s has %d sentences: the table will be weak (few words, few sentences per word). Expect STS scores "
            "well below a build on 100k+ sentences.",
            name,
            sentences,
        )
    return CorpusReport(sentences=sentences, skipped_lines=skipped[0])


def sample_lines(path: str | os.PathLike[str], count: int, kind: str) -> list[str]:
    """The first ``count`` non-empty lines (stripped) of a file sampling a text (``compress --fold-norms``).

    Raises:
        CorpusError: As for a ``--parallel`` file (missing, empty, UTF-16, JSON, mostly not UTF-8 text), or for
            lines without a letter or digit.
    """
    check_corpus_source(path, kind)
    skipped, lines, read = [0], [], 0
    for line in _file_lines(Path(path), skipped):
        read += 1
        if line.strip():
            lines.append(line.strip())
            if len(lines) == count:
                break
    if skipped[0] > MAX_BAD_LINE_SHARE * (read + skipped[0]):
        raise CorpusError(
            f"{kind} {path}: {skipped[0]:,} of {read + skipped[0]:,} lines are not valid UTF-8 text; is it a binary "
            "file? Convert a text file to UTF-8 first (e.g. iconv -f LATIN1 -t UTF-8)."
        )
    if not any(character.isalnum() for line in lines for character in line):
        raise CorpusError(
            f"{kind} {path} holds no word (only punctuation, symbols or emoji); give text in the models' "
            "languages, e.g. the training corpus."
        )
    return lines


def check_pair_file(path: str | os.PathLike[str], name: str) -> None:
    """Check a file of translation pairs before any heavy work: the checks of a ``--parallel`` file
    (:func:`check_corpus`, without its minimum size), then a read of every pair.

    Args:
        path: The TSV file (a header, then ``first-language<TAB>other`` per line).
        name: How messages name it (e.g. ``"--extra-pairs ja=FILE"``); each message starts with it.

    Raises:
        CorpusError: If it is missing, not a regular file, empty, UTF-16, JSON or mostly not UTF-8.
        DataFormatError: If it has no rows, a row of one field, or a line that is not UTF-8.
    """
    try:
        check_corpus(path, name=str(path), min_sentences=1, kind="Translation-pair file")
        read_translation_pairs(path)
    except (CorpusError, DataFormatError) as error:
        raise type(error)(f"{name}: {error}") from None


def check_corpus_language(
    source: CorpusSource, language: str, name: str = "corpus", *, advice: str = "pass --languages {guess}."
) -> None:
    """Refuse a corpus of Chinese or Japanese text for a language written with spaces (``--languages en``).

    Words are split at spaces and punctuation unless the language is written without spaces: each line of such
    text would become one "word". Looks at the first :data:`LANGUAGE_SAMPLE_LINES` lines.

    Args:
        source: The corpus.
        language: The language its words are split for.
        name: How the message names the corpus.
        advice: What the message tells the user to do, formatted with ``guess`` (``zh`` or ``ja``), ``guess_name``,
            ``language`` and ``language_name``: by default the build's option (``pass --languages zh.``).

    Raises:
        CorpusError: If most letters there are Chinese/Japanese characters and ``language`` is not zh or ja; the
            message names the language to pass.
    """
    if language in SPACELESS_LANGUAGES:
        return
    if isinstance(source, CorpusFiles):
        for path in source.paths:
            check_corpus_language(path, language, path.name, advice=advice)
        return
    letters = spaceless = kana = lines = 0
    for sentence in itertools.islice(iter_sentences(source), LANGUAGE_SAMPLE_LINES):
        lines += 1
        for char in sentence:
            if char.isalpha():
                letters += 1
                spaceless += is_spaceless_char(char)
                kana += in_ranges(char, KANA_RANGES)
    if not letters or spaceless <= letters / 2:
        return
    guess = min(JAPANESE_LANGUAGES) if kana > 0.05 * spaceless else "zh"
    names = {"guess_name": language_name(guess), "language_name": language_name(language)}
    raise CorpusError(
        f"{name}: {spaceless / letters:.0%} of the letters in its first {lines:,} lines are Chinese/Japanese "
        f"characters, written without spaces, but the language is {language} ({language_name(language)}), whose "
        f"words are split at spaces: each line would become one word. It looks like {language_name(guess)} "
        f"text: {advice.format(guess=guess, language=language, **names)}"
    )


def corpus_digest(source: CorpusSource) -> str:
    """A key that changes when the corpus content does: the file's bytes (of each file, in order), or the
    sentences given in memory."""
    if isinstance(source, CorpusFiles):
        parts = list(map(content_digest, source.paths))
        if source.source_filter.active:  # the filter and the source names it reads
            parts += [source.source_filter.describe()]
            parts += [content_digest(source_file(path)) for path in source.paths if source_file(path).is_file()]
        return "files:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()
    if isinstance(source, str | os.PathLike):
        return content_digest(source)
    digest = hashlib.sha256()
    count = 0
    for sentence in iter_sentences(source):
        digest.update(sentence.encode("utf-8"))
        digest.update(b"\n")
        count += 1
    return f"{count}:{digest.hexdigest()}"


def corpus_name(source: CorpusSource) -> str:
    """How a model records its corpus: a file's name (never its path), else the kind of object given."""
    if isinstance(source, CorpusFiles):
        return ", ".join(path.name for path in source.paths)
    if isinstance(source, str | os.PathLike):
        return Path(source).name
    if isinstance(source, Sequence):
        return f"{len(source):,} sentences given in memory"
    return type(source).__name__
