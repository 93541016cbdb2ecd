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


def _load(inputs: list[str], model: str | None, column: str | None, id_column: str | None, output: Path) -> Collection:
    from st_static.collections.collection import load_collection
    from st_static.files import check_file_destination

    check_file_destination(output, inputs=inputs)  # before any work
    return load_collection(inputs, model, column, id_column)


@command()
def neighbours(
    inputs: InputsArgument,
    output: Annotated[Path, typer.Option("--output", "-o", help="Parquet file of (row, neighbour) pairs.")],
    k: Annotated[int, typer.Option("-k", help="Neighbours per row.")] = 10,
    model: ModelOption = None,
    column: ColumnOption = None,
    id_column: IdColumnOption = None,
    exact: ExactOption = None,
) -> None:
    """Write each row's K nearest other rows by cosine similarity (rank, similarity, and the texts when read)."""
    from st_static.collections.mining import nearest_neighbours, write_neighbours

    collection = _load(inputs, model, column, id_column, output)
    found = nearest_neighbours(collection.vectors, k, exact)
    rows = write_neighbours(output, collection.ids, found, collection.texts)
    search = "exact" if found.exact else "HNSW"
    typer.echo(f"wrote {output}: {rows:,} neighbour rows for {len(found.rows):,} rows ({search} search)")


@command()
def dedup(
    inputs: InputsArgument,
    output: Annotated[Path, typer.Option("--output", "-o", help="Parquet file of the near-duplicate groups.")],
    threshold: Annotated[float, typer.Option(help="Cosine similarity from which two rows are near-duplicates.")] = 0.9,
    k: Annotated[int, typer.Option("-k", help="Neighbours searched per row (pairs come from them).")] = 10,
    pairs: Annotated[
        Path | None, typer.Option(help="Also write the near-duplicate pairs (row, row, similarity) here.")
    ] = None,
    model: ModelOption = None,
    column: ColumnOption = None,
    id_column: IdColumnOption = None,
    exact: ExactOption = None,
) -> None:
    """Group rows whose cosine similarity is at least --threshold (chains of such pairs join one group).

    The output has one row per group member: group, row, id, keep (the group's first row, the one to keep),
    similarity to it, and the text when texts were read.
    """
    import numpy as np

    from st_static.collections.mining import (
        duplicate_groups,
        near_duplicate_pairs,
        nearest_neighbours,
        write_groups,
        write_pairs,
    )

    if pairs is not None:
        from st_static.files import check_file_destination

        check_file_destination(pairs, inputs=[*inputs, output])
    collection = _load(inputs, model, column, id_column, output)
    vectors = collection.vectors
    found = nearest_neighbours(vectors, k, exact)
    first, second, similarity = near_duplicate_pairs(found, threshold)
    groups = duplicate_groups(len(vectors), first, second)
    write_groups(output, collection.ids, groups, vectors, collection.texts)
    if pairs is not None:
        write_pairs(pairs, collection.ids, first, second, similarity)
    count = int(groups.max()) + 1 if len(groups) and groups.max() >= 0 else 0
    members = int(np.count_nonzero(groups >= 0))
    typer.echo(
        f"wrote {output}: {len(first):,} pairs at cosine >= {threshold} join {members:,} of {len(vectors):,} rows "
        f"into {count:,} groups ({members - count:,} rows to drop; {'exact' if found.exact else 'HNSW'} search)"
    )
