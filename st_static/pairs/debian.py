"""Debian packages as sources of translation pairs: fetched with ``apt-get download`` (kept in a cache folder) or
taken from a folder of ``.deb`` files, read with ``dpkg-deb`` without unpacking them to disk; their gettext
catalogues turned into pairs. Tux Paint packages are refused: their captions are evaluation data here."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path, PurePosixPath

from st_static.bundled import cache_dir
from st_static.data_files import comparable_text
from st_static.pairs.catalogues import (
    PairsError,
    catalogue_pairs,
    is_catalogue,
    locale_directories,
    read_catalogue,
    script_prefixes,
)

REFUSED_PREFIX = "tuxpaint"
Fetch = Callable[[str], Path]
"""A package name -> its ``.deb`` file (raises :class:`PackageError` when it has none)."""
Rows = list[tuple[str, str, str]]
"""``(source, english, other)``: a pair and the name of what it came from (``mo.PACKAGE``, ``wesnoth``, ``ding``)."""


class PackageError(Exception):
    """A package that cannot be fetched or read (the others go on)."""


def run_tool(command: list[str], cwd: Path | None = None) -> str:
    """Run ``command``; its stdout, or :class:`PackageError` with the last line it wrote to stderr."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
    except OSError as error:  # the tool is missing
        raise PackageError(f"{command[0]}: {error.strerror or error}") from error
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"{command[0]} exited with {done.returncode}"]
        raise PackageError(lines[-1].removeprefix("E: ").strip())
    return done.stdout


def require_dpkg() -> None:
    """Raise :class:`PairsError` when ``dpkg-deb`` is not installed."""
    if shutil.which("dpkg-deb") is None:
        raise PairsError("dpkg-deb not found (it comes with Debian and Ubuntu: apt-get install dpkg).")


def package_names(deb: Path) -> tuple[str, str]:
    """The ``Package`` and ``Source`` names of ``deb`` (the source is the package when the field is absent)."""
    fields = {}
    for line in run_tool(["dpkg-deb", "--field", str(deb), "Package", "Source"]).splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.split()[0] if value.split() else ""
    package = fields.get("Package") or deb.name.split("_")[0]
    return package, fields.get("Source") or package


def refuse_if_tuxpaint(name: str, where: str) -> None:
    """Raise :class:`PairsError` when ``name`` is a Tux Paint package: its captions are the xling/tuxpaint
    evaluation texts."""
    if name.lower().startswith(REFUSED_PREFIX):
        raise PairsError(
            f"{where}: refused: Tux Paint packages hold the evaluation captions (xling/tuxpaint); never train on them"
        )


def local_debs(directory: Path) -> dict[str, Path]:
    """``{package: .deb}`` for the ``.deb`` files of ``directory`` (named by their control fields).

    Raises:
        PairsError: If one of them is a Tux Paint package (by its name or its source's).
    """
    debs = {}
    for deb in sorted(directory.glob("*.deb")):
        try:
            package, source = package_names(deb)
        except PackageError as error:
            print(f"{deb.name}: skipped ({error})")
            continue
        refuse_if_tuxpaint(package, str(deb))
        refuse_if_tuxpaint(source, str(deb))
        debs[package] = deb
    return debs


def default_cache() -> Path:
    """``debs/`` in st-static's cache folder (:func:`st_static.bundled.cache_dir`: ``~/.cache/st-static``)."""
    return cache_dir() / "debs"


def downloader(cache: Path) -> Fetch:
    """A function of a package name that returns its ``.deb`` in ``cache``, fetched with ``apt-get download``."""

    def download(package: str) -> Path:
        cached = sorted(cache.glob(f"{package}_*.deb"))
        if not cached:
            if shutil.which("apt-get") is None:
                raise PairsError("apt-get not found: download the .deb files elsewhere and give --debs DIR")
            cache.mkdir(parents=True, exist_ok=True)
            run_tool(["apt-get", "download", package], cwd=cache)
            cached = sorted(cache.glob(f"{package}_*.deb"))
        if not cached:
            raise PackageError(f"apt-get download left no {package}_*.deb in {cache}")
        return cached[-1]

    return download


def local_fetcher(debs: dict[str, Path], directory: Path) -> Fetch:
    """A function of a package name that returns its ``.deb`` among ``debs`` (those of ``directory``)."""

    def fetch(package: str) -> Path:
        if package not in debs:
            raise PackageError(f"no .deb of it in {directory}")
        return debs[package]

    return fetch


def deb_files(deb: Path, wanted: Callable[[PurePosixPath], bool]) -> list[tuple[str, bytes]]:
    """``(path, content)`` of the regular files of ``deb`` whose path ``wanted`` accepts, read from
    ``dpkg-deb --fsys-tarfile`` (nothing is unpacked to disk)."""
    files = []
    with subprocess.Popen(
        ["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        if process.stdout is None or process.stderr is None:
            raise PackageError("dpkg-deb gave no output")
        try:
            with tarfile.open(fileobj=process.stdout, mode="r|*") as archive:
                for member in archive:
                    path = PurePosixPath(member.name)  # "./usr/..." -> "usr/..."
                    if member.isfile() and wanted(path):
                        handle = archive.extractfile(member)
                        if handle is not None:
                            files.append((path.as_posix(), handle.read()))
        except tarfile.TarError as error:
            process.kill()
            raise PackageError(f"unreadable archive: {error}") from error
        errors = process.stderr.read().decode(errors="replace").strip()
    if process.returncode != 0:
        raise PackageError(errors.splitlines()[-1] if errors else f"dpkg-deb exited with {process.returncode}")
    return files


def deb_catalogues(deb: Path, directories: tuple[str, ...]) -> list[tuple[str, bytes]]:
    """``(path, content)`` of the catalogues of ``deb`` in the folders ``directories`` (:func:`is_catalogue`)."""
    return deb_files(deb, lambda path: is_catalogue(path, directories))


def fetched_packages(packages: Iterable[str], fetch: Fetch, skipped: list[str]) -> Iterator[tuple[str, Path]]:
    """``(package, .deb)`` of each of ``packages`` that ``fetch`` finds; the others are printed and added to
    ``skipped``.

    Raises:
        PairsError: If a package is a Tux Paint one (by the name asked for, or the names inside its ``.deb``).
    """
    for package in packages:
        refuse_if_tuxpaint(package, package)
        try:
            deb = fetch(package)
            for name in package_names(deb):
                refuse_if_tuxpaint(name, deb.name)
        except PackageError as error:
            print(f"{package}: skipped ({error})")
            skipped.append(package)
            continue
        yield package, deb


def gettext_rows(packages: Iterable[str], fetch: Fetch, language: str, skipped: list[str]) -> Rows:
    """The pairs of every package's ``language`` catalogues, each pair once, in package order, with their source
    ``mo.PACKAGE``; prints one line per package and adds the packages it could not read to ``skipped``.

    Raises:
        PairsError: If a package is a Tux Paint one.
    """
    directories, prefixes = locale_directories(language), script_prefixes(language)
    rows: dict[tuple[str, str], tuple[str, str, str]] = {}
    for package, deb in fetched_packages(packages, fetch, skipped):
        try:
            catalogues = deb_catalogues(deb, directories)
        except PackageError as error:
            print(f"{package}: skipped ({error})")
            skipped.append(package)
            continue
        messages, before = 0, len(rows)
        for name, content in catalogues:
            try:
                catalogue = read_catalogue(name, content)
            except (OSError, ValueError) as error:  # a bad magic number, an encoding other than UTF-8
                print(f"{package}: {name} skipped ({error})")
                continue
            messages += len(catalogue)
            for english, other in catalogue_pairs(catalogue, prefixes):
                key = (comparable_text(english), comparable_text(other))
                rows.setdefault(key, (f"mo.{package}", english, other))
        uncompiled = sum(name.endswith(".po") for name, _ in catalogues)
        kinds = f"{len(catalogues) - uncompiled} .mo" + (f", {uncompiled} .po" if uncompiled else "")
        print(f"{package}: {len(rows) - before:,} pairs kept of {messages:,} messages ({kinds})")
    return list(rows.values())
