"""Write English-LANG translation pairs from the gettext catalogues of Debian packages as a translation-pair TSV.

The older form of ``st-static pairs LANG --set extra --out FILE`` (which also writes the pairs' sources and reads
Wesnoth's everyday texts, the Ding dictionary and PyPI phrase books: ``st-static pairs --help``); kept for the commands
of earlier model cards. The code lives in ``st_static/pairs/``.

Debian 12 (bookworm) packages ship their messages translated into many languages as gettext ``.mo`` catalogues:
game texts (Battle for Wesnoth, Cataclysm DDA, Freeciv, Minetest, UFO:AI) and the messages of programs (gcc, git,
coreutils, GIMP, Inkscape, Blender, LibreOffice, ...). This script fetches such packages with ``apt-get download``
(kept in --cache), reads every ``.../LANG/LC_MESSAGES/*.mo`` inside them and every ``LANG.po`` (games that read their
catalogues uncompiled) and keeps the single-line prose messages: no context, plural, fuzzy or untranslated entries;
mnemonics removed; no format placeholder, markup or escape on either side; an English side of at least 4 words that
starts with a letter; a translation that differs from it and, for a language of a non-Latin script, is written in
that script. Each pair is kept once. Tux Paint packages (``tuxpaint*``) are refused: their captions are evaluation
data here. The bundled Tatoeba, Tux Paint and STS-B English files of the language are left out, and so are the texts
of every --exclude file. Licences: each package's ``/usr/share/doc/PKG/copyright`` (mostly GPL-2+, CC BY-SA 3.0 for
Cataclysm DDA, MPL-2.0 for LibreOffice).

    pip install 'st-static[pairs]'   # polib (MIT); apt-get and dpkg-deb come with Debian and Ubuntu
    python scripts/debian_pairs.py fr --out models/en-fr-debian.tsv

The default packages weigh about 530 MB on the first run (then cached); --packages picks fewer.
"""

from __future__ import annotations

import argparse
import subprocess  # noqa: F401  (tests stub subprocess.run through this module)
from pathlib import Path

from st_static.data_files import DataFormatError, write_translation_pairs
from st_static.errors import StStaticError
from st_static.files import check_file_destination
from st_static.pairs.catalogues import (  # noqa: F401  (the script's names, as before the move)
    catalogue_pairs,
    clean_message,
    in_script,
    is_catalogue,
    locale_directories,
    read_catalogue,
    require_polib,
    script_prefixes,
)
from st_static.pairs.debian import (  # noqa: F401
    PackageError,
    default_cache,
    downloader,
    gettext_rows,
    local_debs,
    local_fetcher,
    refuse_if_tuxpaint,
    require_dpkg,
)
from st_static.pairs.recipes import SETS, bundled_evaluation_files, set_packages

DEFAULT_PACKAGES: tuple[str, ...] = SETS["extra"].packages
"""Debian 12 packages with many translated messages (the sources of the project's parallel/extra pairs)."""


def default_packages(language: str) -> list[str]:
    """:data:`DEFAULT_PACKAGES` and the per-language packages of ``language`` (``pt``: ``pt`` and ``pt-br``)."""
    return set_packages(SETS["extra"], language)


def run(args: argparse.Namespace) -> None:
    inputs = [*args.exclude, args.debs, *bundled_evaluation_files(args.language)]
    check_file_destination(args.out, inputs=inputs, what="--out file")  # before any download
    require_polib()
    require_dpkg()
    chosen = [name.strip() for name in args.packages.split(",") if name.strip()] if args.packages else None
    for name in chosen or []:
        refuse_if_tuxpaint(name, f"--packages {name}")
    if args.debs is not None:
        debs = local_debs(args.debs)
        if not debs:
            raise SystemExit(f"error: no readable .deb file in {args.debs}")
        packages = chosen if chosen is not None else list(debs)
        fetch = local_fetcher(debs, args.debs)
    else:
        packages = chosen if chosen is not None else default_packages(args.language)
        fetch = downloader(args.cache or default_cache())
    skipped: list[str] = []
    pairs = [(english, other) for _, english, other in gettext_rows(packages, fetch, args.language, skipped)]
    if len(skipped) == len(packages):
        raise SystemExit(f"error: no package could be read ({', '.join(skipped) or 'none named'})")
    pairs = pairs[: args.max_pairs]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        written = write_translation_pairs(args.out, pairs, [*bundled_evaluation_files(args.language), *args.exclude])
    except DataFormatError as error:
        raise SystemExit(f"error: {error} (packages read: {len(packages) - len(skipped)})") from error
    print(
        f"wrote {written:,} pairs to {args.out} from {len(packages) - len(skipped)} packages "
        f"({len(skipped)} skipped{': ' + ', '.join(skipped) if skipped else ''}; "
        f"{len(pairs) - written:,} left out by --exclude)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "language",
        metavar="LANG",
        help="gettext locale code (fr, de, pt_BR, zh_CN, ko, sr@latin, ...); pt reads pt and pt_BR, zh reads zh_CN",
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--packages", metavar="A,B,...", help="Debian packages to read (default: DEFAULT_PACKAGES, about 70)"
    )
    parser.add_argument(
        "--debs", type=Path, metavar="DIR", help="read the .deb files of this folder instead of downloading"
    )
    parser.add_argument("--cache", type=Path, metavar="DIR", help="download folder (default: ~/.cache/st-static/debs)")
    parser.add_argument("--max-pairs", type=int, metavar="N", help="keep at most N pairs (before --exclude)")
    parser.add_argument(
        "--exclude", type=Path, action="append", default=[], help="an evaluation pair file whose texts no pair has"
    )
    args = parser.parse_args(argv)
    if args.max_pairs is not None and args.max_pairs < 1:
        parser.error("--max-pairs must be at least 1")
    try:
        run(args)
    except (StStaticError, OSError) as error:  # a missing or malformed file, an unsafe --out: one line, no traceback
        raise SystemExit(f"error: {error}") from None


if __name__ == "__main__":
    main()
