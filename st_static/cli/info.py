"""``st-static info``: what a saved static model holds."""

from __future__ import annotations

import json

import typer

from st_static.cli.app import command


@command()
def info(model: str = typer.Argument(..., help="Model folder or Hub repo id.")) -> None:
    """Print the vocabulary size, dimension and metadata of a static model, after checking its files."""
    from st_static.model.static_word_average import ModelFolderError, StaticWordAverage

    module = StaticWordAverage.load(model)
    if StaticWordAverage.load_file_path(model, filename="modules.json") is None:
        raise ModelFolderError(
            f"{model}: modules.json is missing, so this is not a complete model (an interrupted save?); "
            "re-save it with st_static.save_model."
        )
    typer.echo(json.dumps(module.get_config_dict(), indent=2, sort_keys=True))
