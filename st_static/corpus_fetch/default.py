"""The English corpus a command reads when given none: the full corpus where it can be fetched, else the bundle."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from st_static import bundled
from st_static.corpus_fetch.assemble import full_corpus
from st_static.corpus_fetch.errors import FullCorpusError
from st_static.errors import MissingExtraError

logger = logging.getLogger(__name__)

CORPUS_KEYWORD = "corpus"
"""What options that take a text file (``compress --fold-norms``) accept for the default English corpus."""


def default_english_corpus(
    cache: Path | None = None, progress: Callable[[str], None] | None = None
) -> tuple[Path, str | None]:
    """The default English corpus and, when it is the bundle in place of the full corpus, why.

    Returns:
        ``(path, None)`` for the full English corpus (fetched into the cache when missing), else the bundled corpus's
        path and the reason the full one could not be had (offline, blingfire missing).
    """
    try:
        return full_corpus(cache=cache, progress=progress), None
    except (FullCorpusError, MissingExtraError) as error:
        logger.info("The full English corpus cannot be fetched (%s): the bundled corpus instead.", error)
        return bundled.default_corpus(cache), str(error)
