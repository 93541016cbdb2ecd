"""``st-static extend``: give a saved table rows for the words of your own documents that it lacks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from st_static.cli.app import command

SHOWN_WORDS = 12
"""The added words a run names (the most frequent first), before ``(+N more)``."""


def word_list(words: list[str], shown: int = SHOWN_WORDS) -> str:
    """``foo, bar, ... (+2 more)``: the first ``shown`` words, and how many more."""
    more = f", ... (+{len(words) - shown:,} more)" if len(words) > shown else ""
    return ", ".join(words[:shown]) + more


@command()
def extend(
    model: Annotated[str, typer.Argument(metavar="MODEL", help="Model folder or Hub repo id.")],
    corpus: Annotated[
        list[Path],
        typer.Option("--corpus", help="Your documents: a UTF-8 text file, one document per line (repeat for more)."),
    ],
    out: Annotated[
        Path, typer.Option("--out", "--output", "-o", help="Folder of the extended model (written atomically).")
    ],
    teacher: Annotated[
        str | None,
        typer.Option(
            help="The teacher the table was distilled from: a Hub id, alias or folder. Default: the one its metadata "
            "records; give it when the table records none, or when that one cannot be loaded here (not in the Hugging "
            "Face cache and no Hub, or a folder that has moved)."
        ),
    ] = None,
    min_count: Annotated[
        int, typer.Option("--min-count", min=1, help="Fewest occurrences in the documents that give a word a row.")
    ] = 2,
    numbers: Annotated[bool, typer.Option("--numbers", help="Also add words made of digits only.")] = False,
    device: Annotated[str | None, typer.Option(help="Device of the teacher (default: the best available).")] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace --out even if it is a non-empty folder that is not a model.")
    ] = False,
) -> None:
    """Add rows for the words of your documents that MODEL's table lacks (seen at least --min-count times).

    The teacher reads the documents' sentences holding each new word (the build's extraction method), and a map
    fitted on the table's own words in those sentences carries the vectors into the table. Every row the table has
    keeps its value; a 1,000-document file takes a minute or two on a CPU.
    """
    from st_static.files import check_destination
    from st_static.model.save_load import holds_st_static_output, load_model, save_model
    from st_static.pipeline.extend_api import extend as extend_model
    from st_static.pipeline.extend_api import extend_inputs
    from st_static.settings import check_device

    check_device(device)
    inputs = extend_inputs(model, corpus, teacher)
    check_destination(out, replaceable=holds_st_static_output, inputs=inputs, force=force)  # before any work
    loaded = load_model(model)
    extended = extend_model(loaded, list(corpus), teacher, min_count, numbers=numbers, device=device)
    destination = save_model(extended, out, force=force, inputs=inputs)
    record = extended[0].metadata.extend[-1]
    typer.echo(f"wrote {destination}")
    added = extended[0].vocabulary[-record.words :] if record.words else []  # after the old words, most frequent first
    typer.echo(
        f"  added {record.words:,} {'word' if record.words == 1 else 'words'} from {', '.join(record.files or [])} "
        f"(seen {min_count}+ times): {word_list(added)}"
    )
    if record.held_out_cosine is not None:
        typer.echo(
            f"  map into the table, held-out cosine: {record.held_out_cosine:.3f} "
            f"(fitted on {record.fitted_on:,} words)"
        )
