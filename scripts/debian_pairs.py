"""Write English-LANG translation pairs from the gettext catalogues of Debian packages as a translation-pair TSV.

Debian 12 (bookworm) packages ship their messages translated into many languages as gettext ``.mo`` catalogues:
game texts (Battle for Wesnoth, Cataclysm DDA, Freeciv, Minetest, UFO:AI) and the messages of programs (gcc, git,
coreutils, GIMP, Inkscape, Blender, LibreOffice, ...). This script fetches such packages with ``apt-get download``
(kept in --cache), reads every ``.../LANG/LC_MESSAGES/*.mo`` inside them (``usr/share/locale``, ``locale-langpack``
and the games' own folders) and every ``LANG.po`` (games that read their catalogues uncompiled: SuperTux's levels,
SuperTuxKart, LinCity-NG) and keeps the single-line prose messages: no context, plural, fuzzy or untranslated
entries; mnemonics (``_Open``, ``(_O)``, ``&File``) removed; no format placeholder, markup or escape on either side;
an English side of at least 4 words that starts with a letter; a translation that differs from it and, for a
language of a non-Latin script, is written in that script. Each pair is kept once. Tux Paint packages (``tuxpaint*``)
are refused: their captions are evaluation data here. Nothing Tatoeba-derived is read (Tatoeba is evaluation too).
Pass your evaluation files as --exclude so that no pair holds their texts. Use the file with
``st-static build --parallel LANG=FILE`` (or ``--extra-pairs LANG=FILE``). Licences: each package's
``/usr/share/doc/PKG/copyright`` (mostly GPL-2+, CC BY-SA 3.0 for Cataclysm DDA, MPL-2.0 for LibreOffice).

    pip install 'st-static[pairs]'   # polib (MIT); apt-get and dpkg-deb come with Debian and Ubuntu
    python scripts/debian_pairs.py fr --out models/en-fr-debian.tsv \\
        --exclude ../shared/data/xling/tuxpaint/fra-eng.tsv --exclude ../shared/data/tatoeba/fra-eng.tsv

The default packages weigh about 530 MB on the first run (then cached); --packages picks fewer.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tarfile
import unicodedata
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from st_static.bundled import cache_dir
from st_static.data_files import DataFormatError, comparable_text, write_translation_pairs

if TYPE_CHECKING:
    import polib

WESNOTH_CAMPAIGNS = ("httt", "utbs", "nr", "trow", "did", "sof", "low", "dm", "tsg", "sotbe", "sota", "ei", "dw")
DEFAULT_PACKAGES: tuple[str, ...] = (
    # game texts: dialogue, narration, item descriptions
    "wesnoth-1.16-data",
    *(f"wesnoth-1.16-{campaign}" for campaign in (*WESNOTH_CAMPAIGNS, "l", "thot", "ttb")),
    "cataclysm-dda-data",
    "freeciv-data",
    "minetest-data",
    "ufoai-misc",
    # desktop programs
    "gimp-data",
    "inkscape",
    "blender-data",
    "gramps",
    "digikam-data",
    "gnucash-common",
    "vlc-l10n",
    "evolution-common",
    "krita-l10n",
    "kdenlive-data",
    "audacity-data",
    "claws-mail-i18n",
    "pidgin-data",
    "plasma-workspace-data",
    "gnome-control-center-data",
    "gnome-software-common",
    "gnome-shell-common",
    "nautilus-data",
    "evince-common",
    "orca",
    "network-manager",
    "pulseaudio",
    # system tools
    "gcc-12-locales",
    "git",
    "coreutils",
    "util-linux-locales",
    "e2fsprogs-l10n",
    "tar",
    "grep",
    "sed",
    "gawk",
    "findutils",
    "diffutils",
    "bash",
    "gettext",
    "texinfo",
    "wget",
    "sudo",
    "procps",
    "grub-common",
    "apt",
    "dpkg",
    "aptitude-common",
    "synaptic",
    "debconf-i18n",
    "libc-l10n",
)
"""Debian 12 packages with many translated messages (the sources of the project's parallel/extra pairs)."""
LANGUAGE_PACKAGES = ("libreoffice-l10n-{code}",)
"""Per-language packages added to the default list (``{code}``: ``fr``, ``pt-br``, ``zh-cn``)."""
REFUSED_PREFIX = "tuxpaint"
LOCALE_ALIASES = {"pt": ("pt", "pt_BR"), "zh": ("zh_CN",)}
"""Short codes that stand for their country forms too (Debian's Chinese catalogues are ``zh_CN`` and ``zh_TW``)."""
SCRIPTS = {
    ("ja",): ("CJK", "HIRAGANA", "KATAKANA"),
    ("zh", "yue"): ("CJK",),
    ("ko",): ("HANGUL",),
    ("ru", "uk", "be", "bg", "mk", "sr", "kk", "ky", "mn", "tg", "tt"): ("CYRILLIC",),
    ("ar", "fa", "ur", "ps", "ug", "ckb"): ("ARABIC",),
    ("he", "yi"): ("HEBREW",),
    ("el",): ("GREEK",),
    ("hi", "mr", "ne", "sa"): ("DEVANAGARI",),
    ("bn", "as"): ("BENGALI",),
    ("gu",): ("GUJARATI",),
    ("pa",): ("GURMUKHI",),
    ("ta",): ("TAMIL",),
    ("te",): ("TELUGU",),
    ("kn",): ("KANNADA",),
    ("ml",): ("MALAYALAM",),
    ("si",): ("SINHALA",),
    ("th",): ("THAI",),
    ("lo",): ("LAO",),
    ("km",): ("KHMER",),
    ("my",): ("MYANMAR",),
    ("ka",): ("GEORGIAN",),
    ("hy",): ("ARMENIAN",),
    ("am", "ti"): ("ETHIOPIC",),
    ("bo", "dz"): ("TIBETAN",),
}
"""Languages of a non-Latin script -> the Unicode name prefixes of its letters."""
SCRIPT_SHARE = 0.2
MIN_ENGLISH_WORDS = 4
PLACEHOLDER_OR_MARKUP = re.compile(
    r"%(?:\d+\$)?[-+#0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|ll|[hlLqjzt])?[diouxXeEfFgGaAcspnm%]"  # printf: %s %1$s
    r"|%\(\w*\)|%\d|%\w+%"  # Python %(name)s, Qt %1, %VAR%
    r"|\{[^{}]*\}"  # {} {0} {name}
    r"|\$\{?\w"  # $VAR ${VAR} $1
    r"|<[A-Za-z/!?][^>]*>|&#?\w+;"  # markup and entities
    r"|\\|[\n\r\t]"  # escapes and line breaks
)
MNEMONIC_IN_PARENTHESES = re.compile(r"\s*\([_&][^\W_]\)")  # "開く(_O)", "(&F)"
AMPERSAND_MNEMONIC = re.compile(r"&(&)|&(?=[^\W_])")  # "&File" -> "File", "&&" -> "&"
UNDERSCORE_MNEMONIC = re.compile(r"_(?=[^\W_])")  # "_Open" -> "Open"


class PackageError(Exception):
    """A package that cannot be fetched or read (the others go on)."""


def require_polib() -> None:
    """Exit with the ``pip install`` to run when polib is missing."""
    try:
        import polib  # noqa: F401
    except ImportError as error:
        raise SystemExit("error: this script needs polib: pip install 'st-static[pairs]'") from error


def locale_directories(language: str) -> tuple[str, ...]:
    """The catalogue folder names of ``language``: ``pt`` -> ``pt``, ``pt_BR`` (and LibreOffice's ``pt-BR``)."""
    names = LOCALE_ALIASES.get(language, (language.replace("-", "_"),))
    return tuple(dict.fromkeys(form for name in names for form in (name, name.replace("_", "-"))))


def script_prefixes(language: str) -> tuple[str, ...]:
    """The Unicode name prefixes a translation into ``language`` must use (none for Latin-script languages)."""
    if "@latin" in language:
        return ()
    base = re.split(r"[_@-]", language)[0]
    return next((prefixes for languages, prefixes in SCRIPTS.items() if base in languages), ())


def in_script(text: str, prefixes: tuple[str, ...]) -> bool:
    """Whether at least ``SCRIPT_SHARE`` of the letters of ``text`` have a name starting with one of ``prefixes``."""
    letters = [char for char in text if char.isalpha()]
    inside = sum(unicodedata.name(char, "").startswith(prefixes) for char in letters)
    return bool(letters) and inside >= SCRIPT_SHARE * len(letters)


def clean_message(text: str) -> str | None:
    """``text`` without mnemonics and outer spaces; ``None`` when it holds a placeholder, markup or a line break."""
    if PLACEHOLDER_OR_MARKUP.search(text):
        return None
    text = AMPERSAND_MNEMONIC.sub(r"\1", MNEMONIC_IN_PARENTHESES.sub("", text))
    text = UNDERSCORE_MNEMONIC.sub("", text, count=1)
    return None if "_" in text else " ".join(text.split())


def catalogue_pairs(catalogue: polib.MOFile | polib.POFile, prefixes: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """``(english, translation)`` for every single-line prose message of ``catalogue`` the filters keep."""
    pairs = []
    for entry in catalogue:
        if entry.msgctxt or entry.msgid_plural or entry.obsolete or "fuzzy" in entry.flags or not entry.msgstr:
            continue
        english, other = clean_message(entry.msgid), clean_message(entry.msgstr)
        if not english or not other or not english[0].isalpha():
            continue
        if sum(any(char.isalpha() for char in word) for word in english.split()) < MIN_ENGLISH_WORDS:
            continue
        if comparable_text(other) == comparable_text(english) or (prefixes and not in_script(other, prefixes)):
            continue
        pairs.append((english, other))
    return pairs


def run_tool(command: list[str], cwd: Path | None = None) -> str:
    """Run ``command``; its stdout, or :class:`PackageError` with the last line it wrote to stderr."""
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"{command[0]} exited with {done.returncode}"]
        raise PackageError(lines[-1].removeprefix("E: ").strip())
    return done.stdout


def package_names(deb: Path) -> tuple[str, str]:
    """The ``Package`` and ``Source`` names of ``deb`` (the source is the package when the field is absent)."""
    fields = {}
    for line in run_tool(["dpkg-deb", "--field", str(deb), "Package", "Source"]).splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.split()[0] if value.split() else ""
    package = fields.get("Package") or deb.name.split("_")[0]
    return package, fields.get("Source") or package


def refuse_if_tuxpaint(name: str, where: str) -> None:
    """Exit when ``name`` is a Tux Paint package: its captions are the xling/tuxpaint evaluation texts."""
    if name.lower().startswith(REFUSED_PREFIX):
        raise SystemExit(
            f"error: {where}: refused: Tux Paint packages hold the evaluation captions (xling/tuxpaint); "
            "never train on them"
        )


def local_debs(directory: Path) -> dict[str, Path]:
    """``{package: .deb}`` for the ``.deb`` files of ``directory`` (named by their control fields).

    Raises:
        SystemExit: If one of them is a Tux Paint package (by its name or its source's).
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


def downloader(cache: Path) -> Callable[[str], Path]:
    """A function of a package name that returns its ``.deb`` in ``cache``, fetched with ``apt-get download``."""

    def download(package: str) -> Path:
        cached = sorted(cache.glob(f"{package}_*.deb"))
        if not cached:
            if shutil.which("apt-get") is None:
                raise SystemExit("error: apt-get not found: download the .deb files elsewhere and give --debs DIR")
            cache.mkdir(parents=True, exist_ok=True)
            run_tool(["apt-get", "download", package], cwd=cache)
            cached = sorted(cache.glob(f"{package}_*.deb"))
        if not cached:
            raise PackageError(f"apt-get download left no {package}_*.deb in {cache}")
        return cached[-1]

    return download


def is_catalogue(path: PurePosixPath, directories: tuple[str, ...]) -> bool:
    """Whether ``path`` is a catalogue of one of ``directories``: ``DIRECTORY/LC_MESSAGES/*.mo`` or ``DIRECTORY.po``."""
    parts = path.parts
    if path.suffix == ".po":
        return path.stem in directories
    return path.suffix == ".mo" and len(parts) >= 3 and parts[-2] == "LC_MESSAGES" and parts[-3] in directories


def deb_catalogues(deb: Path, directories: tuple[str, ...]) -> list[tuple[str, bytes]]:
    """``(path, content)`` of the catalogues of ``deb`` (:func:`is_catalogue`), read from ``dpkg-deb --fsys-tarfile``
    (nothing is unpacked to disk)."""
    catalogues = []
    with subprocess.Popen(
        ["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        if process.stdout is None or process.stderr is None:
            raise PackageError("dpkg-deb gave no output")
        try:
            with tarfile.open(fileobj=process.stdout, mode="r|*") as archive:
                for member in archive:
                    path = PurePosixPath(member.name)  # "./usr/..." -> "usr/..."
                    if member.isfile() and is_catalogue(path, directories):
                        handle = archive.extractfile(member)
                        if handle is not None:
                            catalogues.append((path.as_posix(), handle.read()))
        except tarfile.TarError as error:
            process.kill()
            raise PackageError(f"unreadable archive: {error}") from error
        errors = process.stderr.read().decode(errors="replace").strip()
    if process.returncode != 0:
        raise PackageError(errors.splitlines()[-1] if errors else f"dpkg-deb exited with {process.returncode}")
    return catalogues


def read_catalogue(name: str, content: bytes) -> polib.MOFile | polib.POFile:
    """The catalogue ``content`` of the file ``name``: compiled (``.mo``) or, for ``.po``, UTF-8 text.

    Raises:
        ValueError: If it cannot be read (a bad magic number, text that is not UTF-8).
    """
    import polib

    if name.endswith(".po"):
        return polib.pofile(content.decode("utf-8"))
    return polib.mofile(content)


def debian_pairs(
    packages: Iterable[str], fetch: Callable[[str], Path], language: str
) -> tuple[list[tuple[str, str]], list[str]]:
    """The pairs of every package's ``language`` catalogues, each pair once, in package order, and the packages
    skipped; prints one line per package.

    Raises:
        SystemExit: If a package is a Tux Paint one.
    """
    directories, prefixes = locale_directories(language), script_prefixes(language)
    pairs: dict[tuple[str, str], tuple[str, str]] = {}
    skipped = []
    for package in packages:
        refuse_if_tuxpaint(package, package)
        try:
            deb = fetch(package)
            for name in package_names(deb):
                refuse_if_tuxpaint(name, deb.name)
            catalogues = deb_catalogues(deb, directories)
        except PackageError as error:
            print(f"{package}: skipped ({error})")
            skipped.append(package)
            continue
        messages, before = 0, len(pairs)
        for name, content in catalogues:
            try:
                catalogue = read_catalogue(name, content)
            except (OSError, ValueError) as error:  # a bad magic number, an encoding other than UTF-8
                print(f"{package}: {name} skipped ({error})")
                continue
            messages += len(catalogue)
            for english, other in catalogue_pairs(catalogue, prefixes):
                pairs.setdefault((comparable_text(english), comparable_text(other)), (english, other))
        uncompiled = sum(name.endswith(".po") for name, _ in catalogues)
        kinds = f"{len(catalogues) - uncompiled} .mo" + (f", {uncompiled} .po" if uncompiled else "")
        print(f"{package}: {len(pairs) - before:,} pairs kept of {messages:,} messages ({kinds})")
    return list(pairs.values()), skipped


def default_cache() -> Path:
    """``debs/`` in st-static's cache folder (:func:`st_static.bundled.cache_dir`: ``~/.cache/st-static``)."""
    return cache_dir() / "debs"


def default_packages(language: str) -> list[str]:
    """:data:`DEFAULT_PACKAGES` and the per-language packages of ``language`` (``pt``: ``pt`` and ``pt-br``)."""
    codes = [name.split("@")[0].replace("_", "-").lower() for name in LOCALE_ALIASES.get(language, (language,))]
    extra = [template.format(code=code) for code in codes for template in LANGUAGE_PACKAGES]
    return list(dict.fromkeys([*DEFAULT_PACKAGES, *extra]))


def local_fetcher(debs: dict[str, Path], directory: Path) -> Callable[[str], Path]:
    """A function of a package name that returns its ``.deb`` among ``debs`` (those of ``directory``)."""

    def fetch(package: str) -> Path:
        if package not in debs:
            raise PackageError(f"no .deb of it in {directory}")
        return debs[package]

    return fetch


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
    require_polib()
    if shutil.which("dpkg-deb") is None:
        raise SystemExit("error: dpkg-deb not found (it comes with Debian and Ubuntu: apt-get install dpkg)")
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
    pairs, skipped = debian_pairs(packages, fetch, args.language)
    if len(skipped) == len(packages):
        raise SystemExit(f"error: no package could be read ({', '.join(skipped) or 'none named'})")
    pairs = pairs[: args.max_pairs]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        written = write_translation_pairs(args.out, pairs, args.exclude)
    except DataFormatError as error:
        raise SystemExit(f"error: {error} (packages read: {len(packages) - len(skipped)})") from error
    print(
        f"wrote {written:,} pairs to {args.out} from {len(packages) - len(skipped)} packages "
        f"({len(skipped)} skipped{': ' + ', '.join(skipped) if skipped else ''}; "
        f"{len(pairs) - written:,} left out by --exclude)"
    )


if __name__ == "__main__":
    main()
