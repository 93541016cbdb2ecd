"""``st-static neighbours`` and ``st-static dedup``: nearest neighbours and near-duplicate groups of an embedded
collection (or of texts, embedded on the way), written as Parquet."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from st_static.cli.app import command

if TYPE_CHECKING:
    from st_static.collections.collection import Collection

InputsArgument = Annotated[
    list[str],
    typer.Argument(
        metavar="INPUT...",
        help="The folder `st-static embed` wrote, or text files (.txt, .jsonl, .csv/.tsv, .parquet) with --model.",
    ),
]
ModelOption = Annotated[str | None, typer.Option(help="Static model to embed text inputs with.")]
ColumnOption = Annotated[str | None, typer.Option(help="The text's column in JSONL, CSV/TSV, Parquet inputs.")]
IdColumnOption = Annotated[str | None, typer.Option(help="A column naming each row (default: file and line).")]
ExactOption = Annotated[
    bool | None,
    typer.Option("--exact/--approximate", help="Brute force or an HNSW index (default: exact up to 20,000 rows)."),
]
TextsOption = Annotated[
    bool | None,
    typer.Option(
        "--texts/--no-texts",
        help="Put each row's text beside its id. Default: yes for text inputs, and for an embeddings folder when "
        "the inputs it was embedded from are still there unchanged (--texts: else fail; --no-texts: ids only).",
        show_default=False,
    ),
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")]


def _load(
    inputs: list[str],
    model: str | None,
    column: str | None,
    id_column: str | None,
    outputs: list[Path],
    texts: bool | None,
    quiet: bool,
) -> Collection:
    """The collection, after every output is checked (before any work) against what the command reads: the inputs
    and the model's files, so no output replaces the model it loads."""
    from st_static.collections.collection import load_collection
    from st_static.files import check_file_destination
    from st_static.model.save_load import model_folder_inputs

    reads: list[str | Path] = [*inputs, *(model_folder_inputs(model) if model is not None else [])]
    for index, output in enumerate(outputs):
        check_file_destination(output, inputs=[*reads, *outputs[:index]])
    collection = load_collection(inputs, model, column, id_column, texts=texts, show_progress_bar=not quiet)
    if collection.missing_texts is not None:
        reason = collection.missing_texts.rstrip(".")
        typer.echo(f"note: ids only, no texts in the output: {reason} (--no-texts: do not look for them).", err=True)
    return collection


@command()
def neighbours(
    inputs: InputsArgument,
    output: Annotated[Path, typer.Option("--output", "-o", help="Parquet file of (row, neighbour) pairs.")],
    k: Annotated[int, typer.Option("-k", min=1, help="Neighbours per row.")] = 10,
    model: ModelOption = None,
    column: ColumnOption = None,
    id_column: IdColumnOption = None,
    exact: ExactOption = None,
    texts: TextsOption = None,
    quiet: QuietOption = False,
) -> None:
    """Write each row's K nearest other rows by cosine similarity: id, text, rank, neighbour_id, neighbour_text,
    similarity (and the rows' numbers)."""
    from st_static.collections.mining import nearest_neighbours, write_neighbours

    collection = _load(inputs, model, column, id_column, [output], texts, quiet)
    found = nearest_neighbours(collection.vectors, k, exact, show_progress_bar=not quiet)
    rows = write_neighbours(output, collection.ids, found, collection.texts)
    search = "exact" if found.exact else "HNSW"
    typer.echo(f"wrote {output}: {rows:,} neighbour rows for {len(found.rows):,} rows ({search} search)")


@command()
def dedup(
    inputs: InputsArgument,
    output: Annotated[Path, typer.Option("--output", "-o", help="Parquet file of the near-duplicate groups.")],
    threshold: Annotated[
        float, typer.Option(min=-1.0, max=1.0, help="Cosine similarity from which two rows are near-duplicates.")
    ] = 0.9,
    k: Annotated[int, typer.Option("-k", min=1, help="Neighbours searched per row (pairs come from them).")] = 10,
    pairs: Annotated[
        Path | None,
        typer.Option(help="Also write the near-duplicate pairs (id, text, other_id, other_text, similarity) here."),
    ] = None,
    model: ModelOption = None,
    column: ColumnOption = None,
    id_column: IdColumnOption = None,
    exact: ExactOption = None,
    texts: TextsOption = None,
    quiet: QuietOption = False,
) -> None:
    """Group rows whose cosine similarity is at least --threshold (chains of such pairs join one group).

    The output has one row per group member: group, row, id, text, keep (the group's first row, the one to keep),
    similarity to it. An embeddings folder's texts are read back from the files it was embedded from.
    """
    import numpy as np

    from st_static.collections.mining import (
        duplicate_groups,
        near_duplicate_pairs,
        nearest_neighbours,
        write_groups,
        write_pairs,
    )

    collection = _load(
        inputs, model, column, id_column, [output, *([pairs] if pairs is not None else [])], texts, quiet
    )
    vectors = collection.vectors
    found = nearest_neighbours(vectors, k, exact, show_progress_bar=not quiet)
    first, second, similarity = near_duplicate_pairs(found, threshold)
    groups = duplicate_groups(len(vectors), first, second)
    write_groups(output, collection.ids, groups, vectors, collection.texts)
    if pairs is not None:
        write_pairs(pairs, collection.ids, first, second, similarity, collection.texts)
    count = int(groups.max()) + 1 if len(groups) and groups.max() >= 0 else 0
    members = int(np.count_nonzero(groups >= 0))
    typer.echo(
        f"wrote {output}: {len(first):,} pairs at cosine >= {threshold} join {members:,} of {len(vectors):,} rows "
        f"into {count:,} groups ({members - count:,} rows to drop; {'exact' if found.exact else 'HNSW'} search)"
    )
