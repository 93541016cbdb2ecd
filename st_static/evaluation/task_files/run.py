"""Running task files through ``mteb.evaluate``: one task, a data folder's tasks, the suite's evaluators."""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from st_static.evaluation.encoders import Encoder, model_encoder
from st_static.evaluation.task_files.formats import (
    MAIN_METRICS,
    PAIR_CLASSIFICATION,
    RETRIEVAL,
    TASK_TYPES,
    TaskContents,
    TaskFile,
    default_task_files,
    distinct_names,
    find_task_files,
    task_file,
)
from st_static.evaluation.task_files.mteb_adapters import _import_mteb, mteb_encoder, mteb_search_model, mteb_task

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


def run_task(encoder: Encoder, task: TaskContents | TaskFile | str | os.PathLike[str]) -> dict[str, Any]:
    """Score ``encoder`` on one task file through ``mteb.evaluate`` (:class:`TaskContents`: on the data read before).

    Returns:
        ``{"metric", "score" (x100), "type", "size"}``; ``size`` counts test texts, or queries for retrieval.

    Raises:
        TaskFileError: If the file does not follow its format.
        MTEBError: If mteb is missing or fails on the task.
    """
    mteb = _import_mteb()
    from st_static.evaluation.mteb_tasks import MTEBError

    source = task if isinstance(task, TaskContents | TaskFile) else task_file(task)
    task = source.task if isinstance(source, TaskContents) else source
    mteb_object = mteb_task(source)
    mteb_object.load_data()  # format errors surface here, not wrapped by mteb
    with warnings.catch_warnings(), _quiet_datasets():
        warnings.simplefilter("ignore")  # sklearn convergence notes of mteb's fixed 100-iteration classifier
        try:
            model_result = mteb.evaluate(
                mteb_search_model(encoder) if task.type == RETRIEVAL else mteb_encoder(encoder),
                [mteb_object],
                cache=None,
                encode_kwargs={"batch_size": 1024, "show_progress_bar": False},
                show_progress_bar=False,
                raise_error=True,
            )
        except Exception as error:
            raise MTEBError(f"mteb failed on task {task.name} ({task.path}): {error}") from error
    (task_result,) = model_result.task_results
    return {
        "metric": MAIN_METRICS[task.type],
        "score": 100.0 * float(task_result.get_score()),
        "type": task.type,
        "size": _task_size(mteb_object, task.type),
    }


@contextlib.contextmanager
def _quiet_datasets() -> Iterator[None]:
    """Switch off the progress bars of ``datasets`` (mteb maps its tables) for the duration."""
    from datasets.utils import logging as datasets_logging

    enabled = datasets_logging.is_progress_bar_enabled()
    datasets_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            datasets_logging.enable_progress_bar()


def _task_size(mteb_object: Any, task_type: str) -> int:
    dataset = mteb_object.dataset
    if task_type == RETRIEVAL:
        return len(dataset["default"]["test"]["queries"])
    if task_type == PAIR_CLASSIFICATION:  # one row holding every pair
        first_column = dataset["test"].column_names[0]
        return len(dataset["test"][0][first_column])
    return len(dataset["test"])  # classification: the test half; clustering: one row per text


def evaluate_task_file(encoder: Encoder, task: TaskContents | str | os.PathLike[str]) -> dict[str, Any]:
    """:func:`run_task` for one path or the task read from it (the evaluator the suite calls for ``DATA/tasks/``
    files)."""
    return run_task(encoder, task)


def evaluate_task_files(
    model: SentenceTransformer | Encoder,
    data_dir: str | os.PathLike[str] | None = None,
    tasks: str | Sequence[str | os.PathLike[str] | TaskFile] | None = None,
    languages: Sequence[str] | None = None,
    prompt: str | None = None,
    batch_size: int = 1024,
) -> dict[str, dict[str, Any]]:
    """Score a model on task files: those of ``data_dir`` (in ``languages``) and/or the given ones.

    Args:
        model: A ``SentenceTransformer`` (st-static tables take the fast path) or a text -> vector function.
        data_dir: A data folder with ``tasks/`` (or a folder of task files).
        tasks: Task files or folders, or comma-separated globs choosing among ``data_dir``'s tasks by name.
        languages: Keep ``data_dir``'s tasks in these languages (e.g. ``["en"]``); ``None``: all.
        prompt: Text prepended to every input.
        batch_size: Batch size of ``SentenceTransformer.encode``.

    Returns:
        ``{task name: {"metric", "score" (x100), "type", "size"}}`` in the order run; a file named twice runs
        once, and tasks that share a name are named by their paths' ends (``a/my.tsv``, ``b/my.tsv``).

    Raises:
        TaskFileError: If a file does not follow its format (named with its row).
        MTEBError: If mteb is missing.
        ValueError: If no task is chosen.
    """
    chosen: list[TaskFile] = []
    globs: list[str] = []
    if isinstance(tasks, str):
        globs = [part.strip() for part in tasks.split(",") if part.strip()]
    elif tasks is not None:
        chosen = [item if isinstance(item, TaskFile) else task_file(item) for item in tasks]
    if data_dir is not None:
        found = find_task_files(data_dir, include=",".join(globs) if globs else None)
        chosen += found if globs else default_task_files(found, languages)
    if not chosen:
        raise ValueError("No task to evaluate: pass a data folder with tasks/ or task files.")
    by_path: dict[str, TaskFile] = {}
    for task in chosen:  # a file named twice runs once
        by_path.setdefault(os.path.realpath(task.path), task)
    chosen = list(by_path.values())
    encoder = model_encoder(model, prompt=prompt, batch_size=batch_size)
    names = distinct_names([(task.name, task.path) for task in chosen])
    return {name: run_task(encoder, task) for name, task in zip(names, chosen, strict=True)}


def task_evaluators() -> dict[str, Callable[[Encoder, Path], dict[str, Any]]]:
    """The suite's evaluator for each task type (all run the file through mteb)."""
    return dict.fromkeys(TASK_TYPES, evaluate_task_file)
