"""``st-static extract``: steps 1 and 2 (decontextualised vectors, sentence-level PCA + ABTT) from any teacher."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from st_static.cli.app import app, fail
from st_static.teachers import DEFAULT_TEACHER


@app.command()
def extract(
    out: Annotated[Path, typer.Option("--out", help="Output folder (written atomically).")],
    corpus: Annotated[Path, typer.Option("--corpus", help="Text file, one sentence per line.")],
    teacher: Annotated[str, typer.Option("--teacher", help="Teacher: folder or Hub repo id.")] = DEFAULT_TEACHER,
    dim: Annotated[int, typer.Option("--dim", help="Dimension after PCA.")] = 256,
    vocab_size: Annotated[int, typer.Option("--vocab-size", help="Largest vocabulary.")] = 150_000,
    min_sentences: Annotated[
        int, typer.Option("--min-sentences", help="Words in fewer corpus sentences are left out (and reported).")
    ] = 2,
    sentences_per_word: Annotated[
        int, typer.Option("--sentences-per-word", help="Shortest sentences encoded per word (N).")
    ] = 100,
    prompt: Annotated[str, typer.Option("--prompt", help='Teacher prompt, e.g. "query: " for e5 models.')] = "",
    pca_level: Annotated[str, typer.Option("--pca-level", help="sentence (the method) or word.")] = "sentence",
    removed_components: Annotated[
        int | None, typer.Option("--removed-components", help="ABTT: leading components dropped (default d/100).")
    ] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted extraction.")] = False,
) -> None:
    """Extract a word table from a teacher and reduce it: OUT/model (raw), OUT/reduced (PCA + ABTT), OUT/targets.

    Under ``torchrun --nproc-per-node K -m st_static.cli extract ...`` the teacher pass is sharded across K
    processes (sums and counts all-reduced); the first process writes the folders.
    """
    from st_static.errors import StStaticError
    from st_static.extraction import CorpusError, ExtractionSettings, TeacherError, run_extraction, run_reduction
    from st_static.extraction.extract import process_rank

    if pca_level not in ("sentence", "word"):
        raise fail(f"--pca-level must be sentence or word, got {pca_level!r}.")
    settings = ExtractionSettings(
        teacher=teacher,
        prompt=prompt,
        vocab_size=vocab_size,
        min_sentences=min_sentences,
        sentences_per_word=sentences_per_word,
        corpus=corpus.name,
    )
    try:
        stage = run_extraction(corpus, settings, out, resume=resume)
        if process_rank()[0] == 0:
            run_reduction(stage, out / "reduced", dim=dim, removed_components=removed_components, level=pca_level)
    except (CorpusError, TeacherError, StStaticError, ValueError, FileNotFoundError) as error:
        raise fail(str(error)) from error
    if process_rank()[0] == 0:
        summary = {key: value for key, value in stage.stats.items() if key != "settings"}
        typer.echo(json.dumps(summary, indent=2))
        typer.echo(f"Wrote {out}/model (raw table), {out}/reduced (PCA + ABTT) and {out}/targets.")
