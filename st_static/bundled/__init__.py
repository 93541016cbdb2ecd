"""The data st-static ships, so that the main build runs from the package alone: a default English corpus and a
small English evaluation set (sources and licences: ``st_static/bundled/NOTICE.md``)."""

from __future__ import annotations

import hashlib
import logging
import lzma
import os
from pathlib import Path

from st_static.errors import StStaticError
from st_static.files import write_file_atomically

logger = logging.getLogger(__name__)

BUNDLED_DIR = Path(__file__).parent
DEFAULT_CORPUS_ARCHIVE = BUNDLED_DIR / "corpus" / "en-default.txt.xz"
DEFAULT_CORPUS_SHA256 = "29e74675eb30506c419cd132f1d22713f06c74d4d52672a3e791c74e2f3b8847"
"""SHA-256 of the decompressed corpus (454,003 lines)."""
DEFAULT_CORPUS_LICENSE = (
    "st-static's bundled en-default.txt: WordNet 3.0 licence, Brown corpus (redistribution permitted), public domain "
    "(State of the Union, Moby-Dick), CC BY-SA 4.0 (Wikipedia, WikiText-2, Wikibooks Cookbook), CC0 (SpamAssassin "
    "ham), MIT (randfacts), Apache-2.0 (ParlSpeech sample); sources: st_static/bundled/NOTICE.md"
)
DEFAULT_EVAL_DATA = BUNDLED_DIR / "eval"
DEFAULT_EVAL_TASKS = "stsb-en-dev,stsb-en-test"
"""What a build scores without ``--eval-data``: the bundled STS-B English dev and test files."""


class BundledDataError(StStaticError, OSError):
    """The bundled corpus is missing or damaged (an install without the package data)."""


def cache_dir() -> Path:
    """Where st-static keeps files it derives once: ``$ST_STATIC_CACHE``, else ``$XDG_CACHE_HOME/st-static``."""
    if configured := os.environ.get("ST_STATIC_CACHE"):
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "st-static"


def default_corpus(cache: Path | None = None) -> Path:
    """The bundled English corpus as a text file, decompressed once into ``cache`` (default :func:`cache_dir`).

    A cached copy is checked against the checksum on every call (a tenth of a second for its 42 MB); a changed or
    truncated one is decompressed again.

    Raises:
        BundledDataError: If the archive is missing or does not decompress to the recorded checksum.
    """
    target = (cache or cache_dir()) / f"en-default-{DEFAULT_CORPUS_SHA256[:12]}.txt"
    if target.is_file():
        with target.open("rb") as cached:
            if hashlib.file_digest(cached, "sha256").hexdigest() == DEFAULT_CORPUS_SHA256:
                return target
        logger.warning("%s differs from the bundled corpus (changed or truncated): decompressing it again.", target)
    if not DEFAULT_CORPUS_ARCHIVE.is_file():
        raise BundledDataError(
            f"The bundled corpus {DEFAULT_CORPUS_ARCHIVE} is missing (an install without st-static's package data): "
            "give --corpus FILE (one sentence per line)."
        )
    target.parent.mkdir(parents=True, exist_ok=True)

    def decompress(partial: Path) -> None:
        digest = hashlib.sha256()
        with lzma.open(DEFAULT_CORPUS_ARCHIVE) as source, partial.open("wb") as sink:
            while chunk := source.read(1 << 20):
                digest.update(chunk)
                sink.write(chunk)
        if digest.hexdigest() != DEFAULT_CORPUS_SHA256:
            raise BundledDataError(f"{DEFAULT_CORPUS_ARCHIVE} is damaged (its checksum differs): reinstall st-static.")

    try:
        write_file_atomically(target, decompress)
    except (lzma.LZMAError, EOFError) as error:
        raise BundledDataError(f"{DEFAULT_CORPUS_ARCHIVE} is damaged ({error}): reinstall st-static.") from error
    return target
