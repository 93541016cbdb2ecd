"""``st-static evaluate``: scores of any Sentence Transformer on local data files and, optionally, MTEB."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from st_static.cli.app import command, fail
from st_static.data_files import each_file_read_once, forget_read_files

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from st_static.evaluation.suite import EvaluationTask, ReadTasks

DATA_ENVIRONMENT_VARIABLE = "ST_STATIC_DATA"


def load_any_model(name: str, device: str | None = None) -> SentenceTransformer:
    """Load ``name`` (folder or Hub id) with ``SentenceTransformer``; st-static folders get the checked load.

    Teachers packaged in registry packages (all-MiniLM-L6-v2) resolve to their local copy, so they load offline.

    Raises:
        ModelFolderError: If a path does not exist or a static model folder is broken.
        OSError, ValueError: Whatever ``SentenceTransformer`` raises for other unloadable models.
    """
    from sentence_transformers import SentenceTransformer

    from st_static.model.save_load import load_model
    from st_static.model.static_word_average import CONFIG_FILE_NAME, ModelFolderError
    from st_static.teachers import is_repo_id, resolve_teacher

    name = resolve_teacher(name)
    if not os.path.exists(name):
        if not is_repo_id(name):
            raise ModelFolderError(f"{name}: no such model folder.")
    elif not os.path.isdir(name):
        raise ModelFolderError(f"{name}: is a file, not a model folder.")
    elif (Path(name) / CONFIG_FILE_NAME).is_file():
        return load_model(name, device=device)
    return SentenceTransformer(name, device=device)


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


def model_languages(model: SentenceTransformer) -> list[str] | None:
    """The languages an st-static model records, or ``None`` for other models."""
    from st_static.model.metadata import ModelMetadata

    metadata = getattr(model[0], "metadata", None)
    languages = metadata.languages if isinstance(metadata, ModelMetadata) else None
    return list(languages) if languages else None


def teacher_scores(
    teacher: SentenceTransformer | dict[str, dict[str, Any]],
    tasks: list[EvaluationTask],
    prompt: str,
    batch_size: int,
    contents: ReadTasks | None = None,
) -> dict[str, dict[str, Any]]:
    """The teacher's results on ``tasks``: encoded now for a loaded model (on ``contents``, the files as
    :func:`~st_static.evaluation.suite.check_tasks` read them), or those of its read evaluation file."""
    from st_static.evaluation.encoders import model_encoder
    from st_static.evaluation.suite import distinct_tasks, evaluate_tasks

    if isinstance(teacher, dict):
        names = {task.name for task in distinct_tasks(tasks)}
        return {name: result for name, result in teacher.items() if name in names}
    return evaluate_tasks(
        model_encoder(teacher, prompt=prompt or None, batch_size=batch_size), tasks, contents=contents
    )


def open_teacher(
    teacher: str, prompt: str | None, device: str | None
) -> tuple[str, SentenceTransformer | dict[str, dict[str, Any]], str]:
    """``(name, loaded model or the results of its evaluation file, prompt)`` of ``--teacher``, checked now.

    Raises:
        typer.Exit: With one error line when the teacher cannot be loaded or its file read.
    """
    path = Path(teacher)
    if path.suffix == ".json" and path.is_file():
        from st_static.model_card.evaluation_table import EvaluationFileError, read_evaluation

        try:
            evaluation = read_evaluation(path)
        except EvaluationFileError as error:
            raise fail(f"--teacher {teacher}: {_first_line(error)}") from error
        return str(evaluation.get("model") or path.stem), evaluation["results"], ""
    from st_static.teachers import default_prompt

    try:
        chosen_prompt = default_prompt(teacher) if prompt is None else prompt
        return teacher, load_any_model(teacher, device=device), chosen_prompt
    except Exception as error:  # any loader failure becomes one line, not a traceback
        raise fail(f"could not load teacher {teacher}: {_first_line(error)}") from error


@command()
@each_file_read_once()  # a data file listed, checked and scored (by the model and the teacher) is read once
def evaluate(
    model: Annotated[str, typer.Argument(help="Model folder or Hub repo id (anything SentenceTransformer loads).")],
    data: Annotated[
        Path | None,
        typer.Option(
            "--data",
            envvar=DATA_ENVIRONMENT_VARIABLE,
            help=f"Data folder (sts/, tatoeba/, xling/tuxpaint/, pairclass/, tasks/); or set "
            f"{DATA_ENVIRONMENT_VARIABLE}. Default (without --mteb or task files): the bundled files "
            "(st_static/bundled/eval: STS-B English dev and test, Tatoeba and Tux Paint dev halves).",
        ),
    ] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the results to this JSON file.")] = None,
    prompt: Annotated[
        str | None, typer.Option("--prompt", help='Prompt prepended to every text, e.g. "query: ".')
    ] = None,
    mteb: Annotated[
        str | None,
        typer.Option(
            "--mteb",
            help='MTEB tasks or benchmarks, comma-separated (e.g. "STSBenchmark,SICK-R" or "MTEB(eng, v2)"). '
            "Needs the Hugging Face Hub. Local files are then evaluated only if --data is given.",
        ),
    ] = None,
    tasks: Annotated[
        str | None,
        typer.Option(
            "--tasks",
            help='Local tasks matching these comma-separated globs, e.g. "sts*,tatoeba-deu-*,bbc-*", and/or your own '
            "task files: a classification/clustering/pair TSV or a retrieval folder, e.g. my-task.tsv (default: the "
            "dev and test files and task files in the model's languages; all languages for models that do not record "
            "theirs).",
        ),
    ] = None,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, help="Batch size of SentenceTransformer.encode.")
    ] = 1024,
    device: Annotated[
        str | None, typer.Option("--device", help="Device to run the model on (default: ST's choice).")
    ] = None,
    teacher: Annotated[
        str | None,
        typer.Option(
            "--teacher",
            help="Also score this teacher (model folder, Hub id or registry name) on the same local tasks, or read "
            "its scores from the --json file of its own evaluation; shown beside the model's and kept in --json "
            'under "teacher".',
        ),
    ] = None,
    teacher_prompt: Annotated[
        str | None,
        typer.Option(
            "--teacher-prompt",
            help='Prompt of --teacher (default: the registry\'s, e.g. "query: " for multilingual-e5, or its own).',
        ),
    ] = None,
) -> None:
    """Evaluate MODEL on the known data files (STS Spearman, Tatoeba and Tux Paint accuracy, MSRP AP, task files) and
    print tables.

    Known files: sts/stsb-*.tsv and sts/sick-*.tsv (Spearman x100 of cosine), tatoeba/*.tsv and xling/tuxpaint/*.tsv
    (bitext retrieval accuracy in both directions, with alignment, uniformity and language silhouette; tasks
    tatoeba-fra-eng, tuxpaint-fra-eng, ...), pairclass/msrp-*.tsv (average precision of cosine), tasks/
    (classification accuracy, clustering V-measure, retrieval nDCG@10, through mteb). Other files are ignored. The
    last row of the first table is the mean over tasks; with bitext files a table per language follows (with
    --teacher, the teacher's scores beside the model's and the share of them it keeps); another gives the mean per
    task type, the task mean and the STS mean.
    """
    from st_static.evaluation.encoders import model_encoder
    from st_static.evaluation.report import evaluation_document, markdown_tables, write_json
    from st_static.evaluation.suite import (
        DataFolderNotFoundError,
        EvaluationTask,
        check_tasks,
        default_tasks,
        evaluate_tasks,
        find_tasks,
    )
    from st_static.evaluation.task_files import split_task_arguments, summary_markdown
    from st_static.model_card.language_summary import render_language_summary

    globs, own_files = split_task_arguments(tasks) if tasks is not None else (None, [])
    if data is None and mteb is None and not own_files:
        from st_static.bundled import DEFAULT_EVAL_DATA

        data = DEFAULT_EVAL_DATA
        typer.echo(f"No --data: scoring the bundled files ({data}; give --data DIR for more).", err=True)
    try:
        local_tasks = find_tasks(data, include=globs) if data is not None and (globs or not own_files) else []
    except DataFolderNotFoundError as error:
        raise fail(f"--data {error}") from error
    local_tasks += [EvaluationTask(task.name, "task", task.path) for task in own_files]
    if json_path is not None:  # before any work: a bad path fails now, not after the evaluation
        from st_static.files import check_file_destination
        from st_static.model.save_load import model_folder_inputs
        from st_static.teachers import resolve_teacher

        read = [*model_folder_inputs(resolve_teacher(model)), *(task.path for task in local_tasks)]
        if teacher is not None:
            read += [Path(teacher)] if Path(teacher).is_file() else model_folder_inputs(resolve_teacher(teacher))
        check_file_destination(json_path, inputs=read, what="--json file")

    mteb_tasks = []
    if mteb is not None:
        from st_static.evaluation.mteb_tasks import resolve_tasks, split_task_names

        mteb_tasks = resolve_tasks(split_task_names(mteb))
        if not mteb_tasks:
            raise fail(f"--mteb {mteb!r} names no task.")

    try:
        loaded = load_any_model(model, device=device)
    except Exception as error:  # any loader failure becomes one line, not a traceback
        raise fail(f"could not load model {model}: {_first_line(error)}") from error
    if tasks is None:
        local_tasks = default_tasks(local_tasks, model_languages(loaded))
        if data is not None and not local_tasks:
            raise fail(f"{data} has no dev or test file in the model's languages; choose files with --tasks.")
    contents = check_tasks(local_tasks)  # a file the evaluation would refuse fails now, before a teacher or a score
    forget_read_files()  # the scores read ``contents``: the bytes of the files listed and checked are not needed
    teacher_name, teacher_model, prompt_of_teacher = (
        open_teacher(teacher, teacher_prompt, device) if teacher is not None else (None, None, "")
    )

    results = {}
    try:
        encoder = model_encoder(loaded, prompt=prompt, batch_size=batch_size)
        results.update(evaluate_tasks(encoder, local_tasks, contents=contents))
    except UnicodeDecodeError as error:
        raise fail(f"corrupt data file: {_first_line(error)}") from error
    if mteb_tasks:
        from st_static.evaluation.mteb_tasks import run_mteb

        for name, result in run_mteb(loaded, mteb_tasks, batch_size=batch_size, prompt=prompt).items():
            results[f"mteb/{name}" if name in results else name] = result  # a local file may share its name

    compared = None
    if teacher_model is not None:
        try:
            compared = teacher_scores(teacher_model, local_tasks, prompt_of_teacher, batch_size, contents)
        except UnicodeDecodeError as error:
            raise fail(f"corrupt data file: {_first_line(error)}") from error

    typer.echo(f"## {model}" + (f" (teacher: {teacher_name})" if teacher_name else "") + "\n")
    typer.echo(markdown_tables(results, compared))
    languages = render_language_summary(results, compared)
    if languages:
        typer.echo("\nBitext accuracy per language (both directions):\n\n" + languages)
    summary = summary_markdown(results)
    if summary:
        typer.echo("\n" + summary)
    if json_path is not None:
        write_json(evaluation_document(model, results, teacher_name, compared), json_path)
        typer.echo(f"\nwrote {json_path}")
