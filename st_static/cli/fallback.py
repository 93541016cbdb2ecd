"""``st-static fallback``: give a saved model's table fallback rows, so that every text gets a vector."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from st_static.cli.app import command


@command()
def fallback(
    model: Annotated[str, typer.Argument(metavar="MODEL", help="Model folder or Hub repo id.")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Folder to write (MODEL itself: in place; replaced atomically).")
    ],
    teacher: Annotated[
        str | None,
        typer.Option(help="The teacher the table was distilled from (default: the one its metadata records)."),
    ] = None,
    device: Annotated[str | None, typer.Option(help="Device of the teacher (default: the best available).")] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace --output even if it is a non-empty folder that is not a model.")
    ] = False,
) -> None:
    """Add fallback rows to MODEL's table: every text then gets a unit vector, and texts with a known word keep theirs.

    The teacher encodes each character it knows and the table lacks (punctuation, symbols, other scripts) and the
    empty text; a map fitted on the table's words carries them into the table, as tiny rows (README, "Texts without
    a known word"). Takes about a minute on a CPU for a MiniLM table.
    """
    from st_static.extraction.fallback import add_fallback_rows
    from st_static.files import check_destination
    from st_static.model.save_load import LOADED_FROM_ATTRIBUTE, holds_st_static_output, load_model, save_model
    from st_static.settings import check_device

    check_device(device)
    in_place = Path(model).is_dir() and Path(model).resolve() == output.expanduser().resolve()
    inputs = [] if in_place or not Path(model).exists() else [model]
    if teacher is not None and Path(teacher).exists():
        inputs.append(teacher)
    check_destination(output, replaceable=holds_st_static_output, inputs=inputs, force=force)  # before any work
    loaded = load_model(model)
    completed, report = add_fallback_rows(loaded, teacher, device=device)
    if in_place:  # a save in place keeps what else the folder holds (evaluation.json, training/, notes)
        setattr(completed, LOADED_FROM_ATTRIBUTE, getattr(loaded, LOADED_FROM_ATTRIBUTE, None))
    destination = save_model(completed, output, force=force, inputs=inputs)
    typer.echo(f"wrote {destination}")
    typer.echo(f"  fallback rows: the empty text's and {report['characters']} characters'")
    if "held_out_cosine" in report:
        typer.echo(f"  map into the table, held-out cosine: {report['held_out_cosine']:.3f}")
