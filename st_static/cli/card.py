"""``st-static card``: regenerate a saved model's card (README.md) from its files, metadata and evaluation.json."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Annotated

import typer

from st_static.cli.app import command, fail


@command()
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
    speed_corpus: Annotated[
        Path | None,
        typer.Option(help="Measure sentences/s on this file's first lines and record it for the card's Speed section."),
    ] = None,
    speed_sentences: Annotated[int, typer.Option(min=1, help="How many lines of --speed-corpus to encode.")] = 20_000,
    teacher_speed: Annotated[
        float | None, typer.Option(help="The teacher's sentences/s on the same machine, shown next to the model's.")
    ] = None,
) -> None:
    """Regenerate DIR/README.md so it describes the weights, metadata and evaluation.json in the folder."""
    from st_static.files import check_file_destination
    from st_static.hub.push import check_repo_id
    from st_static.model.save_load import load_model, model_folder_inputs
    from st_static.model_card import CARD_FILE_NAME, read_evaluation, write_model_card
    from st_static.model_card.evaluation_table import EVALUATION_FILE_NAME

    if not os.path.lexists(folder):  # a Hub id would load from the cache, and its card go to a new local folder
        raise fail(f"{folder}: no such model folder (DIR is a saved model's folder on this machine, not a Hub id).")
    if output is not None:  # before any work: the card reads the folder's files and --speed-corpus
        read = [*model_folder_inputs(folder), folder / EVALUATION_FILE_NAME, speed_corpus]
        check_file_destination(output, inputs=read, what="--output file")
    if model_id is not None:
        check_repo_id(model_id, "--model-id")
    if teacher_speed is not None and not (math.isfinite(teacher_speed) and teacher_speed > 0):
        raise fail(f"--teacher-speed must be a positive number of sentences/s, got {teacher_speed}.")
    card_file = folder / CARD_FILE_NAME
    if card_file.is_dir() and not card_file.is_symlink():  # the card replaces a file or a link, never a folder
        raise fail(f"{card_file} is a folder; the card is written there: move the folder away, then run card again.")
    if (folder / EVALUATION_FILE_NAME).is_file():  # before --speed-corpus records anything in the folder
        read_evaluation(folder / EVALUATION_FILE_NAME)
    if speed_corpus is not None:
        _measure_and_record_speed(folder, speed_corpus, speed_sentences, teacher_speed)
    readme = write_model_card(load_model(folder), folder, model_id=model_id, build_command=build_command, output=output)
    typer.echo(f"wrote {readme}" + (f" and {output}" if output else ""))


def _measure_and_record_speed(folder: Path, corpus: Path, sentences: int, teacher_speed: float | None) -> None:
    from itertools import islice

    from st_static.extraction.corpus import check_corpus_source, iter_sentences
    from st_static.model.save_load import load_model
    from st_static.model_card.speed import measure_speed, record_speed

    check_corpus_source(corpus)
    texts = list(islice(iter_sentences(corpus), sentences))
    if not texts:
        raise fail(f"{corpus}: no sentence to time (the file holds no valid UTF-8 text).")
    speed = measure_speed(
        load_model(folder),
        texts,
        description=(
            f"the first {len(texts):,} lines of {corpus.name}, the model loaded with st_static.load_model (a bare "
            "SentenceTransformer(folder) load runs about half as fast)"
        ),
    )
    speed.teacher_sentences_per_second = teacher_speed
    record_speed(folder, speed)
    typer.echo(f"{speed.sentences_per_second:,.0f} sentences/s on {speed.machine}")
