"""``st-static disentangle``: fold the disentangler's meaning map into a cross-lingual table."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from st_static.cli.app import command
from st_static.settings import DISENTANGLE_CONSTRAINTS, DISENTANGLE_MAX_EPOCHS

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


@command()
def disentangle(
    model: Annotated[str, typer.Argument(metavar="MODEL", help="Cross-lingual model folder or Hub repo id.")],
    parallel: Annotated[
        list[str],
        typer.Option(
            "--parallel",
            help="Translation pairs (TSV with a header, the table's first language first): LANG=FILE, repeat it for "
            "several files or languages (as st-static build --parallel), or plain FILEs: file i pairs the first "
            "language with the table's language i+1.",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "--output", "-o", help="Folder of the new model (written atomically).")],
    constraints: Annotated[
        str, typer.Option(help=f"The constraints: {', '.join(DISENTANGLE_CONSTRAINTS)} (intra- and inter-component).")
    ] = "both",
    language_weight: Annotated[
        float, typer.Option(help="The weight of the language loss (L_lang) in the intra-component constraints.")
    ] = 1.0,
    max_pairs: Annotated[
        int | None,
        typer.Option(min=1, help="Most translation pairs to train on (each language keeps its share); default: all."),
    ] = None,
    max_epochs: Annotated[
        int, typer.Option(min=1, help="Most epochs (training stops after 3 without a lower validation loss).")
    ] = DISENTANGLE_MAX_EPOCHS,
    keep_sources: Annotated[
        str | None,
        typer.Option(help="Comma-separated globs: of pair files with a FILE-STEM.source.txt, read only these sources."),
    ] = None,
    leave_out_sources: Annotated[
        str | None,
        typer.Option(help="Comma-separated globs of sources left out of pair files with a FILE-STEM.source.txt."),
    ] = None,
    device: Annotated[str | None, typer.Option(help="Device of the training (default: the best available).")] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace --out even if it is a non-empty folder that is not a model.")
    ] = False,
) -> None:
    """Remove the language from MODEL's similarities: its table then holds the meaning part of every text.

    A linear map (Nonomura et al.) is trained on the translation pairs to split each sentence vector into a meaning
    part, alike across translations, and a language part, and folded into the table: every row r becomes W r, so the
    new table gives each text its meaning part, as fast as before, in every library that reads the old one. Takes a
    few minutes on a CPU for 100,000 pairs.
    """
    from st_static.extraction.corpus import check_pair_file
    from st_static.extraction.pair_sources import SourceFilter, check_pair_sources
    from st_static.files import check_destination
    from st_static.model.save_load import holds_st_static_output, save_model
    from st_static.settings import check_device, language_file
    from st_static.stages.base import distinct_file_names
    from st_static.training.disentangle import check_disentangle_settings, read_disentangle_pairs
    from st_static.training.meaning_fold import check_disentangle_model, disentangle_table

    check_device(device)
    check_disentangle_settings(
        constraints,
        language_weight,
        max_epochs=max_epochs,
        names={"constraints": "--constraints", "language_weight": "--language-weight", "max_epochs": "--max-epochs"},
    )
    source_filter = SourceFilter.of(
        _globs(keep_sources, "--keep-sources"), _globs(leave_out_sources, "--leave-out-sources")
    )
    files = [named[1] if (named := language_file(entry)) else entry for entry in parallel]
    inputs = [*([model] if Path(model).exists() else []), *files]
    check_destination(out, replaceable=holds_st_static_output, inputs=inputs, force=force)  # before any work
    loaded = _load_table(model)
    check_disentangle_model(loaded)
    pair_files = _pair_files(parallel, loaded)
    for entry, path in zip(parallel, files, strict=True):  # missing, a folder, empty, binary: refused by name
        check_pair_file(path, f"--parallel {entry}")
    check_pair_sources(pair_files, source_filter)  # a filter needs .source.txt files, and must leave every language
    pivot = loaded[0].metadata.languages[0]
    pairs = read_disentangle_pairs(pair_files, pivot, source_filter)
    folded, result = disentangle_table(
        loaded,
        pairs,
        constraints=constraints,
        language_weight=language_weight,
        max_pairs=max_pairs,
        max_epochs=max_epochs,
        file_names=distinct_file_names([path for paths in pair_files.values() for path in paths]),
        device=device,
    )
    destination = save_model(folded, out, force=force, inputs=inputs)
    before = result.history[0][1] if result.history else float("nan")
    typer.echo(f"wrote {destination}")
    typer.echo(
        f"  meaning map ({constraints}, language weight {language_weight:g}) on {result.train_pairs:,} pairs of "
        f"{', '.join(result.languages)}: {result.epochs} epochs in {result.train_seconds:.0f} s"
    )
    typer.echo(
        f"  validation loss {before:.4f} -> {result.best_validation_loss:.4f} (epoch {result.best_epoch}, "
        f"{result.validation_pairs:,} held-out pairs)"
    )


def _pair_files(entries: list[str], model: SentenceTransformer) -> dict[str, list[str]]:
    """``{language: [files]}`` of the ``--parallel`` entries, checked against the table's languages."""
    from st_static.settings import BuildSettings, SettingsError, language_file

    languages = list(model[0].metadata.languages)
    named = [language_file(entry) for entry in entries]
    if all(item is None for item in named) and len(entries) != len(languages) - 1:
        raise SettingsError(
            f"--parallel: the table pairs {languages[0]} with {', '.join(languages[1:])} (the languages it was "
            f"built for), so give {len(languages) - 1} plain FILE(s) in that order, or LANG=FILE entries (e.g. "
            f"{languages[1]}=FILE); got {len(entries)} plain FILE(s)."
        )
    if named and all(item is not None for item in named):
        given = list(dict.fromkeys(language for language, _ in named))  # type: ignore[misc]
        unknown = [language for language in given if language not in languages[1:]]
        if unknown:
            raise SettingsError(
                f"--parallel {unknown[0]}=...: the table's paired languages are {', '.join(languages[1:])} (its "
                f"first language, {languages[0]}, comes first in every pair file)."
            )
        languages = [languages[0], *given]
    return BuildSettings(parallel=entries, languages=languages).parallel_files()


def _load_table(model: str) -> SentenceTransformer:
    """``load_model(model)``; a local folder st-static did not write (a model2vec or sentence-transformers
    ``StaticEmbedding`` folder) that it refuses is named by what it is, not by its tokenizer.

    Raises:
        DisentangleError: For such a folder.
        ModelFolderError: For a st-static folder that fails its checks.
    """
    from st_static.compression.token_tables import is_st_static_folder
    from st_static.errors import ModelFolderError
    from st_static.model.save_load import load_model
    from st_static.training.disentangle import DisentangleError

    try:
        return load_model(model)
    except ModelFolderError:
        folder = Path(model)
        if not folder.is_dir() or is_st_static_folder(folder):
            raise
        raise DisentangleError(
            f"{model}: not a st-static table (it has no st_static_config.json: a model2vec or sentence-transformers "
            "folder?); the disentangler folds its map into a cross-lingual table built by st-static build --parallel."
        ) from None


def _globs(text: str | None, option: str) -> list[str] | None:
    """The comma-separated globs of ``option`` (``None`` when it is not given).

    Raises:
        SettingsError: If it is given but names no glob (``","``).
    """
    from st_static.settings import SettingsError

    if text is None or not text.strip():
        return None
    globs = [part.strip() for part in text.split(",") if part.strip()]
    if not globs:  # "," names nothing: refused rather than read as the option left out (as st-static build does)
        raise SettingsError(f"{option} {text!r} names no source glob: give comma-separated globs, or leave it out.")
    return globs
