"""``st-static info``: what a saved static model holds."""

from __future__ import annotations

import json

import typer

from st_static.cli.app import app, fail
from st_static.static_word_average import ModelFolderError, StaticWordAverage


@app.command()
def info(model: str = typer.Argument(..., help="Model folder or Hub repo id.")) -> None:
    """Print the vocabulary size, dimension and metadata of a static model, after checking its files."""
    try:
        module = StaticWordAverage.load(model)
    except ModelFolderError as error:
        raise fail(str(error)) from error
    typer.echo(json.dumps(module.get_config_dict(), indent=2, sort_keys=True))
