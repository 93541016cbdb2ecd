"""Evaluation captions for a language the package does not bundle: one half of the Tux Paint stamp captions of that
language (Debian's tuxpaint-stamps-default, GPL-2+), chosen deterministically; the other half is never written.

A stamp's description file holds its English caption on the first line and ``CODE.utf8=translation`` lines. The
captions of a language (one translation per distinct English caption, the first file's) are ordered by the SHA-256
of their English text; the even positions (0, 2, 4, ...) are the evaluation half, the odd ones the half left unread.
The file written holds the first ``count`` captions of the evaluation half (400, as the bundled files). Never train
on Tux Paint text: ``st-static pairs fetch`` leaves out every caption of the language, both halves, when the package
is in the evaluation cache.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from st_static.bundled import DEFAULT_EVAL_DATA, cache_dir
from st_static.data_files import comparable_text
from st_static.files import write_text_atomically
from st_static.model.languages import ISO_639_3
from st_static.pairs.catalogues import PairsError
from st_static.pairs.debian import PackageError, deb_files, downloader

TUX_PAINT_PACKAGE = "tuxpaint-stamps-default"
STAMPS_FOLDER = "usr/share/tuxpaint/stamps/"
EVALUATION_COUNT = 400


def evaluation_cache() -> Path:
    """Where the Tux Paint package is kept: apart from the training packages' ``debs/`` (which refuse it)."""
    return cache_dir() / "evaluation-debs"


def bundled_caption_file(language: str, data: Path = DEFAULT_EVAL_DATA) -> Path | None:
    """The bundled Tux Paint file of ``language``'s base language (``pt_BR`` -> ``por-eng.tsv``), if there is one."""
    base = language.replace("-", "_").split("_")[0].split("@")[0]
    path = data / "xling" / "tuxpaint" / f"{ISO_639_3.get(base, base)}-eng.tsv"
    return path if path.is_file() else None


def stamp_captions(files: list[tuple[str, bytes]], language: str) -> dict[str, str]:
    """``{english: translation}`` of ``language`` in the stamps' description files (one per English caption)."""
    captions: dict[str, str] = {}
    prefix = f"{language.replace('-', '_')}.utf8="
    for _, content in sorted(files):
        lines = content.decode("utf-8", errors="replace").splitlines()
        english = " ".join(lines[0].split()) if lines else ""
        for line in lines[1:]:
            if english and line.startswith(prefix) and (translation := " ".join(line[len(prefix) :].split())):
                captions.setdefault(english, translation)
                break
    return captions


def split_halves(captions: dict[str, str]) -> tuple[list[tuple[str, str]], int]:
    """The evaluation half of ``captions`` (even positions in the SHA-256 order of the English text) and the size of
    the half left unread."""
    ordered = sorted(captions.items(), key=lambda item: hashlib.sha256(item[0].encode("utf-8")).hexdigest())
    return ordered[0::2], len(ordered[1::2])


def caption_files(fetch: Callable[[str], Path]) -> list[tuple[str, bytes]]:
    """The stamps' description files of the Tux Paint package ``fetch`` finds.

    Raises:
        PairsError: If the package cannot be fetched or read.
    """
    try:
        deb = fetch(TUX_PAINT_PACKAGE)
        files = deb_files(deb, is_description)
    except PackageError as error:
        raise PairsError(f"{TUX_PAINT_PACKAGE}: cannot be read ({error}).") from error
    if not files:
        raise PairsError(f"{TUX_PAINT_PACKAGE}: no stamp description files in it.")
    return files


def is_description(path: PurePosixPath) -> bool:
    """Whether ``path`` is a stamp's description file."""
    return path.suffix == ".txt" and path.as_posix().startswith(STAMPS_FOLDER)


def package_fetcher(debs: Path | None, cache: Path | None) -> Callable[[str], Path]:
    """The Tux Paint package's ``.deb``: from the folder ``debs``, else downloaded into ``cache`` (default
    :func:`evaluation_cache`)."""
    if debs is None:
        return downloader(cache or evaluation_cache())

    def local(package: str) -> Path:
        found = sorted(debs.glob(f"{package}_*.deb"))
        if not found:
            raise PackageError(f"no {package}_*.deb in {debs}")
        return found[-1]

    return local


def write_evaluation_half(
    language: str, out: Path, fetch: Callable[[str], Path], count: int = EVALUATION_COUNT
) -> tuple[int, int]:
    """Write the first ``count`` captions of ``language``'s evaluation half as ``out`` (header ``eng``/``other``).

    Returns:
        The captions written and the size of the half left unread.

    Raises:
        PairsError: If the language has a bundled file (its other half is withheld), or too few captions.
    """
    bundled = bundled_caption_file(language)
    if bundled is not None:
        raise PairsError(
            f"{language}: the bundled {bundled.relative_to(DEFAULT_EVAL_DATA)} is its evaluation half and the other "
            "half is withheld; use the bundled file (st-static evaluate reads it)."
        )
    half, unread = split_halves(stamp_captions(caption_files(fetch), language))
    if not half:
        raise PairsError(f"{language}: {TUX_PAINT_PACKAGE} has no caption in this language (codes such as ca, el, sk).")
    written = half[:count]
    write_text_atomically(out, "eng\tother\n" + "".join(f"{english}\t{other}\n" for english, other in written))
    return len(written), unread


def cached_caption_texts(language: str) -> set[str]:
    """Every caption text of ``language`` (both halves, both sides, as ``comparable_text``) in a Tux Paint package
    already in the evaluation cache; none when it is not there (nothing is downloaded)."""
    if bundled_caption_file(language) is not None or not sorted(evaluation_cache().glob(f"{TUX_PAINT_PACKAGE}_*.deb")):
        return set()
    captions = stamp_captions(caption_files(package_fetcher(None, None)), language)
    return {comparable_text(text) for pair in captions.items() for text in pair} - {""}
