"""The allow-list manifest of the full English corpus: no text, only where each line comes from and a hash of each
fetched line, so that nothing the project did not vet (an evaluation text, say) can enter the assembled file.

The file (``st_static/bundled/corpus/en-full-manifest.bin.xz``) is xz-compressed: a one-line JSON header, then one
byte per line of the recent part of the corpus in its order (0: the next line of the bundled corpus's recent part,
k >= 1: a line of the k-th fetched source), then the 8-byte BLAKE2b digest (``digest_size=8``) of the UTF-8 bytes of
each fetched line, in the same order. The assembled corpus is the bundled corpus's first ``base_lines`` lines, then
those lines. ``scripts/make_corpus_manifest.py`` writes it from the project's data (a maintainer's tool).
"""

from __future__ import annotations

import hashlib
import json
import lzma
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from st_static.corpus_fetch.errors import ManifestError
from st_static.files import write_file_atomically

FORMAT = 1
HASH_BYTES = 8
BUNDLE_CODE = 0


def line_hash(line: str) -> bytes:
    """The manifest's hash of one line (without its newline): BLAKE2b with an 8-byte digest of its UTF-8 bytes."""
    return hashlib.blake2b(line.encode("utf-8"), digest_size=HASH_BYTES).digest()


@dataclass(frozen=True)
class Manifest:
    """Where each line of the full corpus comes from.

    Attributes:
        base_lines: Lines taken first, as they are, from the bundled corpus (the project's ``en.txt``).
        bundle_lines: Lines of the bundled corpus the manifest was made with.
        bundle_sha256: SHA-256 of that bundled corpus (decompressed).
        sources: The fetched sources' names; code ``k`` in ``order`` is ``sources[k - 1]``.
        wanted: Lines wanted from each fetched source.
        lines: Lines of the full corpus.
        sha256: SHA-256 of the full corpus when every wanted line is reproduced.
        order: One code per line after the base lines.
        hashes: :data:`HASH_BYTES` bytes per fetched line, in order.
    """

    base_lines: int
    bundle_lines: int
    bundle_sha256: str
    sources: tuple[str, ...]
    wanted: dict[str, int]
    lines: int
    sha256: str
    order: bytes = field(repr=False)
    hashes: bytes = field(repr=False)

    def header(self) -> dict[str, object]:
        """Everything but the codes and hashes, as the file's JSON header holds it."""
        return {
            "format": FORMAT,
            "hash": f"blake2b-{HASH_BYTES}",
            "base_lines": self.base_lines,
            "bundle_lines": self.bundle_lines,
            "bundle_sha256": self.bundle_sha256,
            "sources": list(self.sources),
            "wanted": dict(self.wanted),
            "lines": self.lines,
            "sha256": self.sha256,
        }

    def wanted_hashes(self, source: str) -> set[bytes]:
        """The hashes of the lines wanted from ``source``."""
        code = self.sources.index(source) + 1
        return {digest for kind, digest in self.slots() if kind == code}

    def slots(self) -> Iterator[tuple[int, bytes]]:
        """Each line after the base lines: its code, and its hash (``b""`` for a line of the bundle)."""
        position = 0
        for code in self.order:
            if code == BUNDLE_CODE:
                yield code, b""
            else:
                yield code, self.hashes[position : position + HASH_BYTES]
                position += HASH_BYTES


def write_manifest(path: Path, manifest: Manifest) -> Path:
    """Write ``manifest`` to ``path`` atomically (the same manifest always gives the same bytes)."""
    header = json.dumps(manifest.header(), sort_keys=True, separators=(",", ":")).encode("utf-8")
    payload = header + b"\n" + manifest.order + manifest.hashes
    packed = lzma.compress(payload, preset=9 | lzma.PRESET_EXTREME)
    return write_file_atomically(path, lambda temporary: temporary.write_bytes(packed))


def read_manifest(path: Path) -> Manifest:
    """The manifest in ``path``, checked for consistency.

    Raises:
        ManifestError: If the file is missing, damaged or of an unknown format.
    """
    try:
        payload = lzma.decompress(path.read_bytes())
        header_bytes, _, body = payload.partition(b"\n")
        header = json.loads(header_bytes)
        sources = tuple(header["sources"])
        wanted = {str(name): int(count) for name, count in header["wanted"].items()}
        fetched = sum(wanted[name] for name in sources)
        recent = int(header["lines"]) - int(header["base_lines"])
        order, hashes = body[:recent], body[recent:]
        manifest = Manifest(
            base_lines=int(header["base_lines"]),
            bundle_lines=int(header["bundle_lines"]),
            bundle_sha256=str(header["bundle_sha256"]),
            sources=sources,
            wanted=wanted,
            lines=int(header["lines"]),
            sha256=str(header["sha256"]),
            order=order,
            hashes=hashes,
        )
        consistent = (
            header.get("format") == FORMAT
            and len(order) == recent
            and len(hashes) == fetched * HASH_BYTES
            and all(order.count(index + 1) == wanted[name] for index, name in enumerate(sources))
            and max(order, default=0) <= len(sources)
            and order.count(BUNDLE_CODE) == manifest.bundle_lines - manifest.base_lines
        )
    except FileNotFoundError as error:
        raise ManifestError(f"The full corpus's manifest {path} is missing: reinstall st-static.") from error
    except (OSError, lzma.LZMAError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ManifestError(f"The full corpus's manifest {path} is damaged ({error}): reinstall st-static.") from error
    if not consistent:
        raise ManifestError(f"The full corpus's manifest {path} is damaged (its counts disagree): reinstall st-static.")
    return manifest


def make_manifest(
    base: Sequence[str], recent: Iterable[tuple[str, str]], bundle: Sequence[str], fetched: Sequence[str]
) -> Manifest:
    """The manifest of a full corpus: ``base``, then the lines of ``recent`` in order.

    Args:
        base: The first lines of the full corpus (no newlines); the bundled corpus must start with them.
        recent: ``(line, source)`` of every line that follows, in order (sources left out already dropped).
        bundle: The bundled corpus's lines: ``base``, then the lines of ``recent`` whose source is not fetched.
        fetched: The fetched sources' names, in the order of their codes.

    Raises:
        ManifestError: If the bundle does not hold ``base`` and the unfetched lines of ``recent`` in order.
    """
    if list(bundle[: len(base)]) != list(base):
        raise ManifestError("The bundled corpus does not start with the base lines.")
    codes = {name: index + 1 for index, name in enumerate(fetched)}
    order, hashes = bytearray(), bytearray()
    wanted = dict.fromkeys(fetched, 0)
    digest = hashlib.sha256()
    for line in base:
        digest.update(line.encode("utf-8") + b"\n")
    next_bundle = len(base)
    for number, (line, source) in enumerate(recent, start=1):
        if source in codes:
            order.append(codes[source])
            hashes += line_hash(line)
            wanted[source] += 1
        else:
            if next_bundle >= len(bundle) or bundle[next_bundle] != line:
                raise ManifestError(f"Recent line {number} ({source}) is not the bundled corpus's next line.")
            order.append(BUNDLE_CODE)
            next_bundle += 1
        digest.update(line.encode("utf-8") + b"\n")
    if next_bundle != len(bundle):
        raise ManifestError(f"The bundled corpus has {len(bundle) - next_bundle} lines more than the manifest uses.")
    bundle_digest = hashlib.sha256("".join(f"{line}\n" for line in bundle).encode("utf-8")).hexdigest()
    return Manifest(
        base_lines=len(base),
        bundle_lines=len(bundle),
        bundle_sha256=bundle_digest,
        sources=tuple(fetched),
        wanted=wanted,
        lines=len(base) + len(order),
        sha256=digest.hexdigest(),
        order=bytes(order),
        hashes=bytes(hashes),
    )
