"""``st-static pieces``: give a saved model's table subword-piece rows, so that words it lacks read their pieces."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from st_static.cli.app import command


@command()
def pieces(
    model: Annotated[str, typer.Argument(metavar="MODEL", help="Model folder or Hub repo id.")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Folder to write (MODEL itself: in place; replaced atomically).")
    ],
    teacher: Annotated[
        str | None,
        typer.Option(
            help="The teacher whose continuation tokens become pieces (default: the one the metadata records); only "
            "its tokenizer is read."
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace --output even if it is a non-empty folder that is not a model.")
    ] = False,
) -> None:
    """Add subword-piece rows to MODEL's table: a word it lacks then reads its longest known prefix and its pieces.

    The rows are fitted so that every vocabulary word, cut as if it were unknown, is predicted by its prefix and
    pieces (no teacher pass: seconds on a CPU). Known words, and texts made of them, keep their vectors exactly
    (README, "Words the table lacks").
    """
    from st_static.extraction.pieces import add_piece_rows
    from st_static.extraction.teacher_model import load_given_or_recorded_teacher, load_teacher_tokenizer
    from st_static.files import check_destination
    from st_static.model.save_load import LOADED_FROM_ATTRIBUTE, holds_st_static_output, load_model, save_model

    in_place = Path(model).is_dir() and Path(model).resolve() == output.expanduser().resolve()
    inputs = [] if in_place or not Path(model).exists() else [model]
    if teacher is not None and Path(teacher).exists():
        inputs.append(teacher)
    check_destination(output, replaceable=holds_st_static_output, inputs=inputs, force=force)  # before any work
    loaded = load_model(model)
    tokenizer = load_given_or_recorded_teacher(
        teacher, loaded[0].metadata.teacher, load_teacher_tokenizer, "the teacher whose tokenizer has the pieces"
    )
    completed, report = add_piece_rows(loaded, tokenizer)
    storage = getattr(loaded[0], "storage", "float32")
    if storage != "float32":  # a float16 (int8-row, binary) table stays so
        from st_static.compression import quantize

        completed = quantize(completed, storage)
    if in_place:  # a save in place keeps what else the folder holds (evaluation.json, training/, notes)
        setattr(completed, LOADED_FROM_ATTRIBUTE, getattr(loaded, LOADED_FROM_ATTRIBUTE, None))
    destination = save_model(completed, output, force=force, inputs=inputs)
    typer.echo(f"wrote {destination}")
    typer.echo(
        f"  piece rows: {report['pieces']} (of {report['candidates']} candidates), "
        f"fitted on {report['fitted_on']} words"
    )
    if "held_out_cosine" in report:
        typer.echo(
            f"  held-out words, cosine to their rows: {report['held_out_cosine']:.3f} with pieces, "
            f"{report['held_out_cosine_prefix']:.3f} with the prefix alone"
        )
