"""``st-static build``: extraction, PCA/ABTT and refinement in one command, with a short evaluation."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer

from st_static.cli.app import app, fail
from st_static.teachers import DEFAULT_TEACHER


@app.command()
def build(
    out: Annotated[Path, typer.Option("--out", help="Folder of the finished model (written atomically).")],
    corpus: Annotated[Path | None, typer.Option("--corpus", help="Text file, one sentence per line.")] = None,
    teacher: Annotated[str, typer.Option("--teacher", help="Teacher: folder or Hub repo id.")] = DEFAULT_TEACHER,
    dim: Annotated[int, typer.Option("--dim", help="Dimension after PCA.")] = 256,
    removed_components: Annotated[
        int | None,
        typer.Option(
            "--removed-components",
            help="Leading principal components removed by ABTT (default: teacher dimension / 100, rounded down).",
        ),
    ] = None,
    vocab_size: Annotated[int, typer.Option("--vocab-size", help="Largest vocabulary.")] = 150_000,
    min_sentences: Annotated[
        int, typer.Option("--min-sentences", help="Words in fewer corpus sentences are left out (and reported).")
    ] = 2,
    sentences_per_word: Annotated[
        int, typer.Option("--sentences-per-word", help="Shortest sentences encoded per word (N).")
    ] = 100,
    steps: Annotated[
        int, typer.Option("--steps", help="Most refinement steps (early stopping may end sooner).")
    ] = 30_000,
    prompt: Annotated[str, typer.Option("--prompt", help='Teacher prompt, e.g. "query: " for e5 models.')] = "",
    eval_data: Annotated[
        Path | None, typer.Option("--eval-data", help="Data folder for the short evaluation of every stage.")
    ] = None,
    work_dir: Annotated[
        Path | None, typer.Option("--work-dir", help="Stage cache (default: OUT.work); a re-run resumes there.")
    ] = None,
    parallel: Annotated[
        list[Path] | None, typer.Option("--parallel", help="Translation pairs (TSV) for a cross-lingual table.")
    ] = None,
    matryoshka_dims: Annotated[
        str | None,
        typer.Option(
            "--matryoshka-dims",
            help="Train with MatryoshkaLoss over these dimensions (e.g. 32,64,128,256) so truncated vectors stay good.",
        ),
    ] = None,
    languages: Annotated[
        str, typer.Option("--languages", help="Comma-separated languages; the first is paired with the others.")
    ] = "en",
    center_teacher: Annotated[
        bool,
        typer.Option(
            "--center-teacher/--no-center-teacher",
            help="Distil against mean-centred teacher embeddings (needed for anisotropic teachers such as e5).",
        ),
    ] = True,
    complete_spaceless: Annotated[
        bool,
        typer.Option(
            "--complete-spaceless/--no-complete-spaceless",
            help="Cross-lingual tables with Chinese or Japanese: add the teacher's tokens of those scripts that "
            "the parallel corpus missed (encoded alone, mapped into the table).",
        ),
    ] = True,
    crosslingual_distillation: Annotated[
        bool,
        typer.Option(
            "--crosslingual-distillation/--no-crosslingual-distillation",
            help="Cross-lingual tables: train the similarity-distillation loss on the extracted sentences of every "
            "language in turn with the contrastive loss (keeps each language's similarity structure).",
        ),
    ] = False,
    extra_pairs: Annotated[
        list[str] | None,
        typer.Option(
            "--extra-pairs",
            help="LANG=FILE: more translation pairs (pivot first, e.g. a dictionary from scripts/jmdict_pairs.py) "
            "for the contrastive training only; repeatable.",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Replace --out even if it is a non-empty folder that is not an st-static model."),
    ] = False,
) -> None:
    """Build a static model from a teacher: extraction -> PCA/ABTT -> distillation, caching every stage."""
    from st_static.build import DEV_TASKS, BuildSettings, describe_scores, dev_set_evaluator
    from st_static.build import build as run_build
    from st_static.data import DataFormatError
    from st_static.errors import StStaticError
    from st_static.extraction import CorpusError, TeacherError

    if corpus is None and not parallel:
        raise fail("give --corpus (a monolingual table) and/or --parallel files (a cross-lingual table).")
    language_list = [language.strip() for language in languages.split(",") if language.strip()]
    evaluator = None
    if eval_data is not None:
        try:
            evaluator = dev_set_evaluator(eval_data, tasks=DEV_TASKS if not parallel else None)
        except (FileNotFoundError, DataFormatError) as error:
            raise fail(str(error)) from error
    extra: dict[str, str] = {}
    for item in extra_pairs or []:
        language, separator, path = item.partition("=")
        if not separator or not language.strip() or not path.strip():
            raise fail(f"--extra-pairs takes LANG=FILE, got {item!r}.")
        extra[language.strip()] = path.strip()
    settings = BuildSettings(
        teacher=teacher,
        corpus=str(corpus) if corpus is not None else None,
        parallel=[str(path) for path in parallel or []] or None,
        languages=language_list,
        dim=dim,
        removed_components=removed_components,
        vocab_size=vocab_size,
        min_sentences=min_sentences,
        sentences_per_word=sentences_per_word,
        steps=steps,
        prompt=prompt,
        matryoshka_dims=[int(value) for value in matryoshka_dims.split(",")] if matryoshka_dims else None,
        center_teacher=center_teacher,
        complete_spaceless=complete_spaceless,
        crosslingual_distillation=crosslingual_distillation,
        extra_pairs=extra or None,
    )
    command = "st-static " + shlex.join(sys.argv[1:])
    try:
        result = run_build(settings, out, work_dir=work_dir, evaluate=evaluator, build_command=command, force=force)
    except (CorpusError, TeacherError, DataFormatError, StStaticError, ValueError) as error:
        raise fail(str(error)) from error
    typer.echo(f"Built {result.output} (stages cached in {result.work_dir}).")
    typer.echo("Seconds per stage: " + json.dumps({stage: round(value) for stage, value in result.seconds.items()}))
    if result.stage_scores:
        typer.echo(describe_scores(result.stage_scores))
