"""``st-static info``: what a saved static model holds."""

from __future__ import annotations

import json

import typer

from st_static.cli.app import command


@command()
def info(model: str = typer.Argument(..., help="Model folder or Hub repo id.")) -> None:
    """Print the vocabulary size, dimension and metadata of a static model, after checking its files."""
    from st_static.model.save_load import load_model

    loaded = load_model(model)  # every check a load runs: what info calls sound, loads
    typer.echo(json.dumps(loaded[0].get_config_dict(), indent=2, sort_keys=True))
