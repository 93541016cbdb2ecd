"""Which rows of a translation-pair file (or lines of a corpus file) a build reads, chosen by the source each row
comes from.

A pair file ``en-de.tsv`` (or a corpus file ``en-modern.txt``) may have an aligned ``en-de.source.txt`` next to it:
one source name per data row (a Debian package such as ``mo.wesnoth-1.16-httt``, a document set such as ``ddtp``).
:class:`SourceFilter` keeps the rows whose source matches one of its ``keep`` globs (all rows when it has none) and
then leaves out those matching one of its ``leave_out`` globs (``fnmatch``, case-sensitive). Files without a
``.source.txt`` are read whole.
"""

from __future__ import annotations

import fnmatch
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from st_static.data_files import read_translation_pairs
from st_static.errors import StStaticError

if TYPE_CHECKING:
    from st_static.settings import BuildSettings

logger = logging.getLogger(__name__)

SOURCE_SUFFIX = ".source.txt"

Pairs = list[tuple[str, str]]


class PairSourceError(StStaticError, ValueError):
    """A ``.source.txt`` file does not fit its pair file, or a source filter leaves a language without pairs."""


@dataclass(frozen=True)
class SourceFilter:
    """Globs on the source names of pair rows: ``keep`` (none: every row) and then ``leave_out``."""

    keep: tuple[str, ...] = ()
    leave_out: tuple[str, ...] = ()

    @classmethod
    def of(cls, keep: Sequence[str] | None, leave_out: Sequence[str] | None) -> SourceFilter:
        """The filter of the ``keep_sources`` and ``leave_out_sources`` settings."""
        return cls(tuple(keep or ()), tuple(leave_out or ()))

    @property
    def active(self) -> bool:
        """Whether the filter can leave out any row."""
        return bool(self.keep or self.leave_out)

    def kept(self, source: str) -> bool:
        """Whether a row from ``source`` is read."""
        if self.keep and not any(fnmatch.fnmatchcase(source, pattern) for pattern in self.keep):
            return False
        return not any(fnmatch.fnmatchcase(source, pattern) for pattern in self.leave_out)

    @classmethod
    def for_training(cls, settings: BuildSettings) -> SourceFilter:
        """The filter of the pair rows a cross-lingual build trains on: ``keep_sources``, then ``leave_out_sources``
        and ``training_leave_out_sources``."""
        leave_out = [*(settings.leave_out_sources or ()), *(settings.training_leave_out_sources or ())]
        return cls.of(settings.keep_sources, leave_out)

    def describe(self) -> str:
        """The filter as the options that set it (``--keep-sources ddtp --leave-out-sources mo.*``)."""
        parts = [f"--keep-sources {','.join(self.keep)}"] if self.keep else []
        parts += [f"--leave-out-sources {','.join(self.leave_out)}"] if self.leave_out else []
        return " ".join(parts)


def source_file(path: str | os.PathLike[str]) -> Path:
    """The ``.source.txt`` aligned with a pair file: ``en-de.tsv`` -> ``en-de.source.txt`` (same folder)."""
    path = Path(path)
    return path.with_name(path.stem + SOURCE_SUFFIX)


def read_sources(path: str | os.PathLike[str], rows: int, unit: str = "row") -> list[str] | None:
    """The source name of each of the ``rows`` data rows of pair file ``path``, or ``None`` when it has no
    ``.source.txt``.

    Raises:
        PairSourceError: If the ``.source.txt`` has another number of lines than the pair file has rows, or is not
            UTF-8.
    """
    sources_path = source_file(path)
    if not sources_path.is_file():
        return None
    try:
        text = sources_path.read_text(encoding="utf-8-sig")  # a leading byte-order mark is no part of line 1
    except UnicodeDecodeError as error:
        raise PairSourceError(f"{sources_path}: not UTF-8 text ({error.reason} at byte {error.start}).") from None
    lines = text.split("\n")
    if lines and not lines[-1]:
        lines.pop()  # the line break ending the last line
    sources = [line.strip() for line in lines]
    if len(sources) != rows:
        raise PairSourceError(
            f"{sources_path} has {len(sources):,} line(s) but {Path(path).name} has {rows:,} "
            f"{'row(s) of pairs' if unit == 'row' else 'line(s)'}: it must name one source per {unit}, in order (move "
            "it away to read the file whole)."
        )
    return sources


def read_pairs(path: str | os.PathLike[str], source_filter: SourceFilter | None = None) -> Pairs:
    """The translation pairs of ``path`` that ``source_filter`` keeps, whitespace collapsed, empty sides dropped.

    Raises:
        DataFormatError: If the file is not a pair file.
        PairSourceError: As :func:`read_sources`.
    """
    pairs = read_translation_pairs(path)
    if source_filter is not None and source_filter.active:
        sources = read_sources(path, len(pairs))
        if sources is not None:
            pairs = [pair for pair, source in zip(pairs, sources, strict=True) if source_filter.kept(source)]
    cleaned = [(" ".join(first.split()), " ".join(second.split())) for first, second in pairs]
    return [(first, second) for first, second in cleaned if first and second]


def read_language_pairs(
    files: Mapping[str, Sequence[str | os.PathLike[str]]], pivot: str, source_filter: SourceFilter | None = None
) -> dict[tuple[str, str], Pairs]:
    """``{(pivot, language): pairs}`` of every language's pair files (``{language: [files]}``, pivot sentences
    first), each read by :func:`read_pairs` with ``source_filter``, in the files' order."""
    return {
        (pivot, language): [pair for path in paths for pair in read_pairs(path, source_filter)]
        for language, paths in files.items()
    }


def check_corpus_sources(
    paths: Sequence[str | os.PathLike[str]], source_filter: SourceFilter
) -> dict[str, tuple[int, int]]:
    """Check the ``.source.txt`` files of corpus files (one source name per line of the corpus file), before any
    heavy work; log what the filter keeps.

    Returns:
        ``{file: (lines kept, lines)}`` for every corpus file with a ``.source.txt`` (none when the filter is off).

    Raises:
        PairSourceError: If a ``.source.txt`` is not UTF-8 or has another number of lines than its corpus file, or
            the filter leaves out every line of every such file.
    """
    if not source_filter.active:
        return {}
    counts: dict[str, tuple[int, int]] = {}
    names: set[str] = set()
    for path in paths:
        if not source_file(path).is_file():
            continue
        with Path(path).open("rb") as handle:
            lines = sum(1 for _ in handle)
        sources = read_sources(path, lines, unit="line")
        if sources is None:
            continue
        names.update(sources)
        kept = sum(source_filter.kept(source) for source in sources)
        counts[str(path)] = (kept, lines)
        logger.info("%s: %s keeps %d of %d lines.", Path(path).name, source_filter.describe(), kept, lines)
    if counts and not any(kept for kept, _ in counts.values()):
        raise PairSourceError(f"{source_filter.describe()} leaves out every line of the corpus files with sources.")
    if counts:
        for pattern in [*source_filter.keep, *source_filter.leave_out]:
            if not any(fnmatch.fnmatchcase(name, pattern) for name in names):
                logger.warning(
                    "Source pattern %r matches no source of the corpus files' %s files.", pattern, SOURCE_SUFFIX
                )
    return counts


def check_pair_sources(
    files: Mapping[str, Sequence[str]],
    source_filter: SourceFilter,
    extra_files: Sequence[str] = (),
    corpus_files_filtered: bool = False,
    corpus_paths: Sequence[str | os.PathLike[str]] = (),
) -> dict[str, tuple[int, int]]:
    """Check the ``.source.txt`` files a source filter reads, before any heavy work; log what it keeps.

    Args:
        files: The pair files of every paired language (``BuildSettings.parallel_files``).
        source_filter: The filter (nothing is read when it is not active).
        extra_files: Training-only pair files (``extra_pairs``): filtered too, but may end up empty.
        corpus_files_filtered: Whether the filter already chooses lines of corpus files (then pair files need no
            ``.source.txt``).
        corpus_paths: The corpus files (named when no file has a ``.source.txt``).

    Returns:
        ``{file: (rows kept, rows)}`` for every file with a ``.source.txt``.

    Raises:
        PairSourceError: If no file (pair or corpus file) has a ``.source.txt``, one is misaligned, or a language
            keeps no pair.
        DataFormatError: If a pair file is not one.
    """
    if not source_filter.active or (corpus_files_filtered and not files):
        return {}
    counts: dict[str, tuple[int, int]] = {}
    names: set[str] = set()
    kept_per_language: dict[str, int] = {}
    for language, paths in [*files.items(), *(("", [path]) for path in extra_files)]:
        for path in paths:
            rows = len(read_translation_pairs(path))
            sources = read_sources(path, rows)
            if sources is None:
                kept_per_language[language] = kept_per_language.get(language, 0) + rows
                continue
            names.update(sources)
            kept = sum(source_filter.kept(source) for source in sources)
            counts[path] = (kept, rows)
            kept_per_language[language] = kept_per_language.get(language, 0) + kept
            logger.info("%s: %s keeps %d of %d pairs.", Path(path).name, source_filter.describe(), kept, rows)
            if not kept:
                logger.warning("%s: %s leaves out every pair of this file.", Path(path).name, source_filter.describe())
    if not counts and corpus_files_filtered:
        return counts
    if not counts:
        checked = [Path(path).name for paths in [*files.values(), extra_files] for path in paths]
        corpus_names = [Path(path).name for path in corpus_paths]
        kinds = " and ".join(kind for kind, names in (("corpus files", corpus_names), ("pair files", checked)) if names)
        raise PairSourceError(
            f"{source_filter.describe()}: none of the {kinds or 'files'} ({', '.join([*corpus_names, *checked])}) has "
            f"an aligned FILE-STEM{SOURCE_SUFFIX} naming the source of each {'row' if checked else 'line'}, so the "
            "filter would choose nothing."
        )
    for pattern in [*source_filter.keep, *source_filter.leave_out]:
        if not any(fnmatch.fnmatchcase(name, pattern) for name in names):
            logger.warning("Source pattern %r matches no source of the pair files' %s files.", pattern, SOURCE_SUFFIX)
    empty = [language for language in files if not kept_per_language.get(language)]
    if empty:
        raise PairSourceError(
            f"{source_filter.describe()} leaves no translation pair for {', '.join(empty)}: loosen the patterns or "
            "add a pair file for it."
        )
    return counts
