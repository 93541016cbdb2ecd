"""``st-static embed``: text files (or standard input) to vector shards, streamed, resumable, on one machine or Ray."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from st_static.cli.app import command, fail


@command(resume="the finished shards are kept: run the same command again to continue after the last one")
def embed(
    model: Annotated[str, typer.Argument(metavar="MODEL", help="Static model folder or Hub repo id.")],
    inputs: Annotated[
        list[str],
        typer.Argument(
            metavar="INPUT...",
            help="Text files (a text a line), .jsonl, .csv/.tsv (with a header), .parquet; globs; - for stdin.",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder of the shards and manifest.json.")],
    column: Annotated[
        str | None, typer.Option(help="The text's column in JSONL, CSV/TSV and Parquet inputs (default: text).")
    ] = None,
    id_column: Annotated[
        str | None, typer.Option(help="A column naming each row (default: rows are named by file and line).")
    ] = None,
    input_format: Annotated[
        str | None, typer.Option("--format", help="text, jsonl, csv, tsv or parquet (default: by file suffix).")
    ] = None,
    output_format: Annotated[
        str, typer.Option(help="parquet (row names + vectors) or npy (shard-N.npy + shard-N.ids.npy).")
    ] = "parquet",
    precision: Annotated[
        str,
        typer.Option(
            help="float32, float16, int8 (calibrated on the first shard, or [-1, 1] when it holds under 100 distinct "
            "texts) or ubinary (packed bits)."
        ),
    ] = "float32",
    truncate_dim: Annotated[int | None, typer.Option(help="Keep the first DIM dimensions.")] = None,
    shard_size: Annotated[int, typer.Option(help="Texts per shard (a stopped run resumes after the last).")] = 50_000,
    workers: Annotated[int, typer.Option(help="Processes that encode (each loads the model once).")] = 1,
    engine: Annotated[
        str, typer.Option(help="local, or ray: Ray Data over the inputs (needs the ray extra).")
    ] = "local",
    address: Annotated[
        str | None, typer.Option(help="With --engine ray: the cluster to join (default: a local Ray).")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress line.")] = False,
) -> None:
    """Embed every row of the inputs into vector shards in --out, with flat memory whatever their size.

    Each shard is written whole, then recorded in --out/manifest.json: a run stopped at any point resumes after its
    last finished shard when run again with the same arguments (other arguments are refused). Rows are named by
    --id-column, else by file and line (Parquet: row number).
    """
    from st_static.collections.job import embed_files

    if not model.strip():  # else read as the current folder
        raise fail("MODEL is empty: give a static model folder or a Hub repo id.")
    result = embed_files(
        model,
        inputs,
        out,
        column=column,
        id_column=id_column,
        input_format=input_format,
        output_format=output_format,
        precision=precision,
        truncate_dim=truncate_dim,
        shard_size=shard_size,
        workers=workers,
        engine=engine,
        address=address,
        show_progress_bar=not quiet,
    )
    if result.new_rows == 0:
        typer.echo(f"{result.folder} is complete: {result.rows:,} texts in {result.shards} shards; nothing to do.")
        return
    speed = result.new_rows / max(result.seconds, 1e-9)  # the model's load left out
    rate = f"{speed:,.0f}" if speed >= 100 else f"{speed:.3g}"
    typer.echo(
        f"wrote {result.folder}: {result.rows:,} texts in {result.shards} shards "
        f"({result.new_rows:,} embedded now, {rate} texts/s)"
    )
