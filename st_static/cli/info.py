"""``st-static info``: what a saved static model holds."""

from __future__ import annotations

import json

import typer

from st_static.cli.app import command, fail


@command()
def info(model: str = typer.Argument(..., help="Model folder or Hub repo id.")) -> None:
    """Print the vocabulary size, dimension and metadata of a static model, after checking its files.

    ``num_words`` counts the vocabulary words; the subword pieces' rows after them are ``num_piece_rows``, the
    fallback rows (the empty text's and one per character) ``num_fallback_rows``, and ``num_rows`` is the whole table.
    """
    from st_static.model.save_load import load_model

    if not model.strip():
        raise fail("MODEL is empty: give a static model folder or a Hub repo id.")
    loaded = load_model(model)  # every check a load runs: what info calls sound, loads
    module = loaded[0]
    config = module.get_config_dict()
    description = {
        **config,
        "num_words": module.num_vocabulary_words,
        "num_piece_rows": module.num_piece_rows,
        "num_fallback_rows": module.num_fallback_rows,
        "num_rows": config["num_words"],
    }
    typer.echo(json.dumps(description, indent=2, sort_keys=True))
