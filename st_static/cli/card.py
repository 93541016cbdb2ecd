"""``st-static card``: regenerate a saved model's card (README.md) from its files, metadata and evaluation.json."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from st_static.cli.app import app, fail
from st_static.model_card import EvaluationFileError, write_model_card
from st_static.static_word_average import ModelFolderError


@app.command()
def card(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="Saved static model folder.")],
    model_id: Annotated[
        str | None,
        typer.Option(metavar="ORG/NAME", help="Repo id for the usage snippets (default: the card's current one)."),
    ] = None,
    build_command: Annotated[
        str | None, typer.Option(help="The command that built the model, if its metadata lacks it.")
    ] = None,
    output: Annotated[Path | None, typer.Option(help="Also write the card here (e.g. hub_cards/NAME.md).")] = None,
) -> None:
    """Regenerate DIR/README.md so it describes the weights, metadata and evaluation.json in the folder."""
    try:
        readme = write_model_card(folder, model_id=model_id, build_command=build_command, output=output)
    except (ModelFolderError, EvaluationFileError) as error:
        raise fail(str(error)) from error
    typer.echo(f"wrote {readme}" + (f" and {output}" if output else ""))
